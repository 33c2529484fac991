/*
 * mutationcache.h - read-your-own-writes for the Sandbox reconciler (like
 * client-go's MutationCache).
 *
 * A reconcile woken by a Pod event may read the Sandbox from the informer
 * cache before the watch event of this controller's own last write of that
 * Sandbox has arrived; the plan then computes the same annotation patch or
 * status change again and writes it again. This cache remembers, per
 * Sandbox key, the object the API server returned from the controller's
 * most recent write of the Sandbox, with the resourceVersions that object
 * superseded in the controller's chain of writes (the resourceVersion the
 * writing pass read, and those of earlier writes of the chain). When the
 * informer still shows one of those superseded versions, the remembered
 * object is the newer one and is read instead; when it shows any other
 * version (it caught up, or someone else wrote since), the entry is dropped.
 *
 * resourceVersions are opaque strings: only compared for equality, never
 * ordered. Entries live only until the informer catches up (the watch event
 * of the write wakes a reconcile of the key, which drops the entry), so the
 * cache holds about as many entries as there are writes in flight.
 *
 * Thread-safety: every sbx_mutation_cache_* function on one cache may be
 * called from any number of threads at once (an internal mutex guards the
 * map; objects are copied in and out, never shared). sbx_mutation_choose()
 * is pure.
 */
#ifndef SANDBOX_MUTATIONCACHE_H
#define SANDBOX_MUTATIONCACHE_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Most superseded resourceVersions kept per entry; beyond, the oldest are
 * forgotten (an informer still showing one of those is then believed: a
 * stale read, which costs at most a redundant write).
 */
#define SBX_MUTATION_CACHE_MAX_SUPERSEDED 16

/** Which object a pass reads. */
typedef enum {
	/** The informer's object; any remembered entry is dropped. */
	SBX_READ_INFORMER = 0,
	/** The remembered object: the informer has not seen our write yet. */
	SBX_READ_REMEMBERED = 1
} sbx_read_choice;

/**
 * The decision, pure: SBX_READ_REMEMBERED when `informer_rv` equals one of
 * the `n` strings of `superseded` and differs from `remembered_rv` (the
 * resourceVersion of the remembered object); SBX_READ_INFORMER otherwise,
 * including when any string is NULL or empty. Equality only: never orders
 * resourceVersions. Thread-safe.
 */
SBX_EXTERN sbx_read_choice sbx_mutation_choose(const char *informer_rv,
                                               const char *remembered_rv,
                                               const char *const *superseded,
                                               size_t n);

/** Opaque cache. */
typedef struct sbx_mutation_cache sbx_mutation_cache;

/**
 * Creates an empty cache. Returns 0, ASB_EINVAL (NULL `out`) or
 * ASB_ENOMEM.
 */
SBX_EXTERN int sbx_mutation_cache_new(sbx_mutation_cache **out);

/** Frees the cache and every entry; NULL accepted. No call may be in flight. */
SBX_EXTERN void sbx_mutation_cache_free(sbx_mutation_cache *c);

/**
 * The object a pass of `key` ("namespace/name") should read, given the
 * informer's copy in `*obj` (owned by the caller). When the entry of `key`
 * says SBX_READ_REMEMBERED, `*obj` is freed and replaced by a copy of the
 * remembered object, and 1 is returned. Otherwise `*obj` is left alone, the
 * entry (if any) is dropped, and 0 is returned. A NULL `*obj` drops the
 * entry. On allocation failure `*obj` is left alone and 0 returned (a stale
 * read, never a wrong one).
 */
SBX_EXTERN int sbx_mutation_cache_resolve(sbx_mutation_cache *c, const char *key,
                                          cJSON **obj);

/**
 * Records a successful write of the Sandbox `key`: `base_rv` is the
 * resourceVersion of the object the write was computed from (the one the
 * pass read, or the result of the pass's previous write), `result` the
 * object the API server answered (taken: the cache owns and frees it,
 * whatever the outcome; its metadata.managedFields are dropped). When the
 * entry's remembered object has resourceVersion `base_rv`, the chain goes
 * on: its superseded versions are kept and `base_rv` added; otherwise the
 * chain starts anew with `base_rv` alone. A version equal to the result's
 * is never recorded as superseded (a no-op write keeps its
 * resourceVersion). A result without resourceVersion, a NULL/empty
 * `base_rv`, or an allocation failure drops the entry instead.
 *
 * @return 0, ASB_EINVAL (NULL cache, key or result) or ASB_ENOMEM (entry
 *         dropped).
 */
SBX_EXTERN int sbx_mutation_cache_wrote(sbx_mutation_cache *c, const char *key,
                                        const char *base_rv, cJSON *result);

/** Drops the entry of `key` (Sandbox gone, deleting, or deleted by us). */
SBX_EXTERN void sbx_mutation_cache_forget(sbx_mutation_cache *c, const char *key);

/** Number of entries held (for tests and debugging). */
SBX_EXTERN size_t sbx_mutation_cache_size(sbx_mutation_cache *c);

#ifdef __cplusplus
}
#endif
#endif
