/*
 * packed.h - a compact, immutable form of a cJSON tree, for caches that
 * hold many objects (informers: k8s_packer_codec()).
 *
 * A cJSON tree costs a 64-byte node plus one or two string allocations per
 * member, so a Sandbox of 1 KiB of JSON takes 5-8 KiB of heap as a tree. A
 * packed object is the same tree serialised into one allocation, in
 * document order: one tag byte per node, keys and common values as
 * one-byte references to a dictionary, other strings inline, integers as
 * varints. It is usually smaller than the object's JSON text.
 *
 * The dictionary is a packer's (k8s_packer): the strings Kubernetes
 * objects repeat ("metadata", "True", "v1", "IfNotPresent"...), built in,
 * plus up to K8S_PACKER_MAX_WORDS a caller adds for its own kinds. A packed
 * object can only be unpacked by the packer that packed it.
 *
 * Round trip: unpack(pack(x)) is x exactly: the same members in the same
 * order (duplicate keys kept), the same types and strings, numbers bit for
 * bit (cJSON_Compare() holds, and cJSON prints the two identically). A
 * packed object is never modified after packing, so any number of threads
 * may read it at once.
 */
#ifndef K8S_PACKED_H
#define K8S_PACKED_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "k8s/common.h"
#include "k8s/informer.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque packed object: one allocation, immutable. */
typedef struct k8s_packed k8s_packed;

/** Opaque packer: a dictionary and the informer codec that uses it. */
typedef struct k8s_packer k8s_packer;

/** The most words a caller may add to the built-in dictionary. */
#define K8S_PACKER_MAX_WORDS 48

/**
 * Creates a packer whose dictionary is the built-in one plus `words` (an
 * array of `nwords` strings, copied; duplicates of built-in words or of
 * each other are ignored). `words` may be NULL when `nwords` is 0.
 * Thread-safe: a packer is immutable once created, and may be shared by
 * any number of threads and informers; it must outlive every object it
 * packed and every informer using its codec.
 *
 * @return 0; ASB_EINVAL (NULL `out`, a NULL or empty word, more than
 *         K8S_PACKER_MAX_WORDS words); ASB_ENOMEM.
 */
K8S_EXTERN int k8s_packer_new(k8s_packer **out, const char *const *words,
                              size_t nwords);

/** Frees a packer; NULL accepted. Not while its objects or codec are in use. */
K8S_EXTERN void k8s_packer_free(k8s_packer *pk);

/**
 * Packs `obj` (borrowed; any cJSON value, normally an object as parsed
 * from the API server) into a new packed object in `*out`, freed with
 * k8s_packed_free(). Pure; thread-safe.
 *
 * @return 0; ASB_EINVAL for a NULL argument or a node of no JSON type
 *         (cJSON_Invalid); ASB_ETOOLARGE for a tree over 2 GiB packed;
 *         ASB_ENOMEM.
 */
K8S_EXTERN int k8s_packer_pack(const k8s_packer *pk, const cJSON *obj,
                               k8s_packed **out);

/**
 * Builds the cJSON tree `p` was packed from (by this packer). Returns a new
 * tree the caller frees with cJSON_Delete(), or NULL when out of memory or
 * an argument is NULL. Pure; thread-safe on a shared `p`.
 */
K8S_EXTERN cJSON *k8s_packer_unpack(const k8s_packer *pk, const k8s_packed *p);

/**
 * Builds the cJSON tree of the node at `path` in `p` alone: a
 * dot-separated path of object keys as k8s_obj_at() follows it (the first
 * member of each name; "" is the whole object), so a reader that needs a
 * part of a cached object ("metadata", "status.conditions") does not
 * rebuild the rest. The node comes without its key. Returns a new tree
 * the caller frees with cJSON_Delete(), or NULL when the path is missing,
 * on out of memory, or for a NULL argument. Pure; thread-safe on a shared
 * `p`.
 */
K8S_EXTERN cJSON *k8s_packer_unpack_at(const k8s_packer *pk, const k8s_packed *p,
                                       const char *path);

/**
 * The informer codec (k8s/informer.h) that caches objects packed by `pk`:
 * decode k8s_packer_pack(), encode k8s_packer_unpack(), free
 * k8s_packed_free(), resource_version k8s_packed_resource_version(). With
 * it an informer's cache holds k8s_packed values (what k8s_informer_read()
 * hands out). Borrowed from `pk` (the informer copies it); thread-safe.
 */
K8S_EXTERN const k8s_object_codec *k8s_packer_codec(const k8s_packer *pk);

/**
 * metadata.resourceVersion of the packed object (borrowed from `p`), or
 * NULL when it has none (or it is not a string). O(1); thread-safe.
 */
K8S_EXTERN const char *k8s_packed_resource_version(const k8s_packed *p);

/** Bytes of the allocation behind `p` (0 for NULL). Thread-safe. */
K8S_EXTERN size_t k8s_packed_size(const k8s_packed *p);

/** Frees a packed object; NULL accepted. */
K8S_EXTERN void k8s_packed_free(k8s_packed *p);

#ifdef __cplusplus
}
#endif
#endif
