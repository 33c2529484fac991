/*
 * informer.h - list+watch one resource into a local cache and tell
 * handlers about changes (client-go's SharedIndexInformer, reduced).
 *
 * A background thread LISTs the resource, then WATCHes from the list's
 * resourceVersion; on a dropped watch it resumes from the last version seen,
 * and on 410 Gone it relists and reconciles the cache (synthesising deletes
 * for objects that vanished). An optional transform runs on every object
 * before it is cached, to strip what the caller never reads (managedFields,
 * most of a Pod's spec...) so the cache stays small.
 *
 * Handlers run on the informer thread, in event order; they must be quick
 * (typically: compute a key and add it to a work queue).
 *
 * Lister calls (get/list/index) are thread-safe and return deep copies the
 * caller owns, so callers never hold the cache lock.
 *
 * An optional codec (k8s_object_codec) makes the cache hold compact
 * caller-defined C structs instead of cJSON trees (design.md docs/api.md#sandbox rule 5);
 * handlers, index functions and listers keep their cJSON interface, and
 * k8s_informer_read() hands out the struct itself without a copy.
 */
#ifndef K8S_INFORMER_H
#define K8S_INFORMER_H

#include <cjson/cJSON.h>
#include "k8s/client.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque informer. */
typedef struct k8s_informer k8s_informer;

/**
 * Transform hook, run on the informer thread on every object before it is
 * cached or handed to a handler. It takes ownership of `obj`: it returns it
 * (usually edited in place, e.g. fields deleted), or frees it and returns
 * NULL to keep the object out of the cache entirely.
 */
typedef cJSON *(*k8s_transform_fn)(cJSON *obj, void *userdata);

/**
 * A ready-made transform (k8s_transform_fn): deletes metadata.managedFields
 * (server-side apply's bookkeeping, often half of an object's size, which
 * controllers never read from a cache) and returns `obj`. `userdata`
 * unused. Pure; thread-safe on distinct objects.
 */
K8S_EXTERN cJSON *k8s_transform_strip_managed_fields(cJSON *obj, void *userdata);

/** Add handler; `obj` is borrowed for the duration of the call. */
typedef void (*k8s_on_add_fn)(const cJSON *obj, void *userdata);
/** Update handler; both objects borrowed. Also called on resync with old == new. */
typedef void (*k8s_on_update_fn)(const cJSON *old_obj, const cJSON *new_obj,
                                 void *userdata);
/** Delete handler; `obj` (the last known state) borrowed. */
typedef void (*k8s_on_delete_fn)(const cJSON *obj, void *userdata);

/**
 * Index function: writes up to `cap` index values for `obj` into `keys`
 * (strings borrowed from `obj` or static) and returns how many (0: not
 * indexed). Called under the cache lock; must not call the informer.
 */
typedef int (*k8s_index_fn)(const cJSON *obj, const char **keys, int cap,
                            void *userdata);

/*
 * Ready-made index functions (k8s_index_fn) for k8s_informer_add_index().
 * Pure; thread-safe; the values they return point into the object.
 */

/** Indexes by metadata.namespace (cluster-scoped objects: not indexed). */
K8S_EXTERN int k8s_index_by_namespace(const cJSON *obj, const char **keys,
                                      int cap, void *userdata);

/**
 * Indexes by the UID of every ownerReference (so "who does X own?" is one
 * lookup, as the garbage collector asks it); `userdata` unused.
 */
K8S_EXTERN int k8s_index_by_owner_uid(const cJSON *obj, const char **keys,
                                      int cap, void *userdata);

/**
 * Indexes by the value of the label whose key is `userdata` (a
 * `const char *`, borrowed for the informer's life); objects without the
 * label are not indexed.
 */
K8S_EXTERN int k8s_index_by_label(const cJSON *obj, const char **keys,
                                  int cap, void *userdata);

/**
 * A codec between the cJSON shape of an object and a compact struct the
 * informer caches instead (one per object). With a codec the cache holds
 * only structs:
 * - `decode` runs on the informer thread on every object after the
 *   transform; the cJSON object it is given is also what the handlers and
 *   index functions of that event see;
 * - `encode` rebuilds the cJSON shape whenever one is needed without the
 *   original at hand: listers (k8s_informer_get/_list/_by_index), the old
 *   object of an update, the last state of a delete, index maintenance,
 *   resync. For the cache to behave as without a codec, encode(decode(x))
 *   must equal x (cJSON_Compare, member order aside) for every object the
 *   transform can produce;
 * - `free` releases a struct from `decode`.
 *
 * Thread-safety: `decode` and `free` run on the informer thread only;
 * `encode` and `resource_version` run on any thread, concurrently, on
 * structs that are not being freed (the informer holds its cache read
 * lock), so they must not modify the struct.
 */
typedef struct {
	/**
	 * Builds the compact form of `obj` (borrowed) into `*out` (owned by the
	 * informer, released with `free`). Returns 0, or a negative ASB_E*
	 * code (e.g. ASB_ENOMEM): the object is then left out of the cache and
	 * the error logged.
	 */
	int (*decode)(const cJSON *obj, void **out, void *userdata);
	/**
	 * Returns a new cJSON object for `compact` (the caller frees it with
	 * cJSON_Delete), or NULL when out of memory.
	 */
	cJSON *(*encode)(const void *compact, void *userdata);
	/** Releases `compact`; NULL is never passed. */
	void (*free)(void *compact, void *userdata);
	/**
	 * Optional: metadata.resourceVersion of `compact` (borrowed from it),
	 * or NULL. Lets a relist skip unchanged objects without encoding them;
	 * when NULL the informer encodes to compare.
	 */
	const char *(*resource_version)(const void *compact, void *userdata);
	void *userdata;  /**< passed to every function above */
} k8s_object_codec;

/**
 * Zero-copy reader of k8s_informer_read(): `obj` is the cached value, the
 * codec's struct (`const` of the codec's type) when the informer has a
 * codec, else the `const cJSON *` object. Borrowed for the call only; it
 * runs under the cache read lock, so it must be quick and must not call
 * the informer. Its return value is returned by the read call.
 */
typedef int (*k8s_informer_read_fn)(const void *obj, void *userdata);

#define K8S_INFORMER_OPTIONS_VERSION 2

/**
 * Informer options; initialise with K8S_INFORMER_OPTIONS_INIT or
 * k8s_informer_options_init(). `codec` came with version 2: a caller built
 * against version 1 keeps working without one.
 */
typedef struct {
	unsigned int version;           /**< K8S_INFORMER_OPTIONS_VERSION */
	const k8s_resource *resource;   /**< required; borrowed for the informer's life */
	const char *namespace_;         /**< NULL: all namespaces */
	const char *label_selector;     /**< NULL: everything */
	const char *field_selector;     /**< NULL: everything */
	long resync_ms;                 /**< periodic on_update(obj,obj) for all; 0: never */
	long watch_timeout_s;           /**< server watch timeout; default 300 */
	k8s_transform_fn transform;     /**< optional */
	k8s_on_add_fn on_add;           /**< optional */
	k8s_on_update_fn on_update;     /**< optional */
	k8s_on_delete_fn on_delete;     /**< optional */
	void *userdata;                 /**< passed to every callback */
	asb_logger *logger;             /**< borrowed; NULL: silent */
	/* version 2 */
	const k8s_object_codec *codec;  /**< optional; copied. NULL: the
	                                 *   cache holds cJSON trees */
} k8s_informer_options;

#define K8S_INFORMER_OPTIONS_INIT { .version = K8S_INFORMER_OPTIONS_VERSION, .watch_timeout_s = 300 }

/**
 * Fills `opts` with the defaults of options `version` (1 up to
 * K8S_INFORMER_OPTIONS_VERSION; an older struct is shorter and only its
 * fields are written). Returns 0, or ASB_EINVAL for a NULL `opts` or an
 * unknown version.
 */
K8S_EXTERN int k8s_informer_options_init(k8s_informer_options *opts,
                                         unsigned int version);

/**
 * Creates an informer over `client` (borrowed: it must outlive the
 * informer). Strings and the codec in `opts` are copied. Returns 0,
 * ASB_EINVAL (no resource, unknown options version, a codec without
 * decode, encode or free) or ASB_ENOMEM.
 */
K8S_EXTERN int k8s_informer_new(k8s_informer **out, k8s_client *client,
                                const k8s_informer_options *opts);

/**
 * Adds a named index before k8s_informer_start(). `name` is copied.
 * Returns 0, ASB_EINVAL (already started or duplicate name) or ASB_ENOMEM.
 */
K8S_EXTERN int k8s_informer_add_index(k8s_informer *inf, const char *name,
                                      k8s_index_fn fn, void *userdata);

/**
 * Registers one more set of handlers (any may be NULL) before
 * k8s_informer_start(); each event is delivered to every set, in the order
 * they were added, on the informer thread. The handlers given in the
 * options are the first set. Returns 0 or ASB_EINVAL (already started, or
 * more than 16 sets).
 */
K8S_EXTERN int k8s_informer_add_handlers(k8s_informer *inf, k8s_on_add_fn on_add,
                                         k8s_on_update_fn on_update,
                                         k8s_on_delete_fn on_delete,
                                         void *userdata);

/** Starts the list+watch thread. Returns 0, ASB_EINVAL (twice) or ASB_ERROR. */
K8S_EXTERN int k8s_informer_start(k8s_informer *inf);

/** True once the first LIST has been stored in the cache. */
K8S_EXTERN bool k8s_informer_has_synced(k8s_informer *inf);

/**
 * Waits until synced, at most `timeout_ms` (< 0: forever). Returns 0,
 * ASB_ETIMEOUT or ASB_ESHUTDOWN (stopped before syncing).
 */
K8S_EXTERN int k8s_informer_wait_synced(k8s_informer *inf, long timeout_ms);

/**
 * Copies the cached object `ns`/`name` (`ns` "" or NULL for
 * cluster-scoped) into `*out` (caller frees). Returns 0 or ASB_ENOTFOUND.
 */
K8S_EXTERN int k8s_informer_get(k8s_informer *inf, const char *ns,
                                const char *name, cJSON **out);

/**
 * Copies every cached object in namespace `ns` (NULL: all) into a new
 * cJSON array `*out` (caller frees). Returns 0 or ASB_ENOMEM.
 */
K8S_EXTERN int k8s_informer_list(k8s_informer *inf, const char *ns,
                                 cJSON **out);

/**
 * Copies the objects whose index `index` has value `value` into a new
 * cJSON array `*out` (caller frees), in no particular order. Returns 0,
 * ASB_EINVAL (unknown index) or ASB_ENOMEM.
 */
K8S_EXTERN int k8s_informer_by_index(k8s_informer *inf, const char *index,
                                     const char *value, cJSON **out);

/**
 * Calls `fn(obj, userdata)` with the cached object `ns`/`name` (`ns` ""
 * or NULL for cluster-scoped) without copying it: the codec's struct, or
 * the cJSON object without a codec (see k8s_informer_read_fn). Thread-safe.
 *
 * @return ASB_ENOTFOUND (fn not called), else what `fn` returned.
 */
K8S_EXTERN int k8s_informer_read(k8s_informer *inf, const char *ns,
                                 const char *name, k8s_informer_read_fn fn,
                                 void *userdata);

/**
 * Calls `fn(obj, userdata)` for each cached object whose index `index` has
 * value `value`, in no particular order, without copying (as
 * k8s_informer_read(); the read lock is held across all the calls). Stops
 * at the first call returning non-zero. Thread-safe.
 *
 * @return ASB_EINVAL (unknown index), else the non-zero value of the call
 *         that stopped the walk, else 0.
 */
K8S_EXTERN int k8s_informer_read_index(k8s_informer *inf, const char *index,
                                       const char *value,
                                       k8s_informer_read_fn fn, void *userdata);

/** Number of cached objects. */
K8S_EXTERN size_t k8s_informer_size(k8s_informer *inf);

/** The last resourceVersion the informer saw ("" before the first list). Copy into `buf`. */
K8S_EXTERN void k8s_informer_last_resource_version(k8s_informer *inf,
                                                   char *buf, size_t cap);

/** Stops the thread and waits for it (handlers are not called afterwards). NULL accepted; safe to call twice. */
K8S_EXTERN void k8s_informer_stop(k8s_informer *inf);

/** Stops if needed and frees; NULL accepted. */
K8S_EXTERN void k8s_informer_free(k8s_informer *inf);

/*
 * Shared informers (client-go's SharedInformerFactory): several consumers
 * asking for the same resource, namespace and selectors get ONE informer,
 * so one list+watch and one cache serve them all.
 */

/** Opaque factory of shared informers. Thread-safe. */
typedef struct k8s_informer_factory k8s_informer_factory;

/**
 * Creates a factory over `client` (borrowed; must outlive the factory).
 * `logger` (borrowed, may be NULL) is given to informers whose options have
 * none. Returns 0, ASB_EINVAL or ASB_ENOMEM.
 */
K8S_EXTERN int k8s_informer_factory_new(k8s_informer_factory **out,
                                        k8s_client *client,
                                        asb_logger *logger);

/**
 * Returns in `*out` the informer for `opts->resource`, `namespace_`,
 * `label_selector` and `field_selector`: the existing one when another
 * consumer asked for the same, with `opts`' handlers added to it
 * (k8s_informer_add_handlers()), else a new one. The informer stays owned
 * by the factory. Must be called before k8s_informer_factory_start().
 *
 * @return 0; ASB_EINVAL when the options are invalid, when the existing
 *         informer uses a different transform or codec (one cache holds one
 *         shape of object), or when it already started; ASB_ENOMEM.
 */
K8S_EXTERN int k8s_informer_factory_informer(k8s_informer_factory *f,
                                             const k8s_informer_options *opts,
                                             k8s_informer **out);

/** Starts every informer not started yet. Returns 0 or the first error. */
K8S_EXTERN int k8s_informer_factory_start(k8s_informer_factory *f);

/**
 * Waits until every informer has synced, at most `timeout_ms` in total
 * (< 0: forever). Returns 0, ASB_ETIMEOUT or ASB_ESHUTDOWN.
 */
K8S_EXTERN int k8s_informer_factory_wait_synced(k8s_informer_factory *f,
                                                long timeout_ms);

/** Stops every informer (reverse order of creation); NULL accepted. */
K8S_EXTERN void k8s_informer_factory_stop(k8s_informer_factory *f);

/** Stops and frees the factory and its informers; NULL accepted. */
K8S_EXTERN void k8s_informer_factory_free(k8s_informer_factory *f);

#ifdef __cplusplus
}
#endif
#endif
