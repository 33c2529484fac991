/*
 * object.h - small helpers over Kubernetes objects held as cJSON:
 * metadata fields, labels, annotations, owner references, "ns/name" keys,
 * JSON merge patches (RFC 7386) and the semantic equality controllers use
 * to decide whether a write is needed.
 *
 * All getters borrow: returned strings/nodes point into `obj` and live as
 * long as it does. They accept NULL objects and return NULL/false.
 * Pure functions; thread-safe on distinct or read-only objects (an object
 * being edited by k8s_obj_merge_patch() must not be read meanwhile).
 */
#ifndef K8S_OBJECT_H
#define K8S_OBJECT_H

#include <cjson/cJSON.h>
#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Follows a dot-separated path of object keys ("status.podIP") and returns
 * the node, or NULL when a segment is missing. Keys containing dots can not
 * be addressed this way; use k8s_obj_label()/k8s_obj_annotation().
 */
K8S_EXTERN const cJSON *k8s_obj_at(const cJSON *obj, const char *path);

/** As k8s_obj_at() but returns the string value, or NULL if not a string. */
K8S_EXTERN const char *k8s_obj_str(const cJSON *obj, const char *path);

/** metadata.name, or NULL. */
K8S_EXTERN const char *k8s_obj_name(const cJSON *obj);
/** metadata.namespace, or NULL. */
K8S_EXTERN const char *k8s_obj_namespace(const cJSON *obj);
/** metadata.uid, or NULL. */
K8S_EXTERN const char *k8s_obj_uid(const cJSON *obj);
/** metadata.resourceVersion, or NULL. */
K8S_EXTERN const char *k8s_obj_resource_version(const cJSON *obj);
/** metadata.generation, or 0. */
K8S_EXTERN int64_t k8s_obj_generation(const cJSON *obj);
/** True when metadata.deletionTimestamp is set. */
K8S_EXTERN bool k8s_obj_is_deleting(const cJSON *obj);

/** metadata.labels[key] as a string, or NULL. */
K8S_EXTERN const char *k8s_obj_label(const cJSON *obj, const char *key);
/** metadata.annotations[key] as a string, or NULL. */
K8S_EXTERN const char *k8s_obj_annotation(const cJSON *obj, const char *key);

/**
 * The ownerReference with `controller: true`, or NULL
 * (meta/v1 OwnerReference; at most one controller per object).
 */
K8S_EXTERN const cJSON *k8s_obj_controller_ref(const cJSON *obj);

/**
 * Replaces (or adds) member `key` of the object `obj` by `item`. `item` is
 * taken in all cases (freed on failure). Returns false on allocation
 * failure or when `obj` or `item` is NULL.
 */
K8S_EXTERN bool k8s_obj_set(cJSON *obj, const char *key, cJSON *item);

/**
 * Applies the RFC 7386 JSON merge patch `patch` to `target` in place:
 * objects merge recursively, a null member deletes, anything else (arrays
 * included) replaces. `patch` is only read.
 *
 * Returns true on success; false when `target` or `patch` is not an
 * object (nothing changed) or on allocation failure (`target` may then be
 * partly patched).
 */
K8S_EXTERN bool k8s_obj_merge_patch(cJSON *target, const cJSON *patch);

/**
 * Kubernetes semantic equality (Go's equality.Semantic.DeepEqual) over
 * JSON produced from Go types with `omitempty`: a missing member equals
 * null, "", 0, false, [] and {}; objects compare as structs (an object whose
 * members are all zero equals a missing one); arrays compare element-wise
 * in order; numbers by value. Either side may be NULL (missing).
 */
K8S_EXTERN bool k8s_obj_semantic_equal(const cJSON *a, const cJSON *b);

/**
 * True when `v` is missing (NULL) or a zero value in the sense of
 * k8s_obj_semantic_equal(): null, false, 0, "", [] or {} (shallow: an
 * object of zero members is not zero here).
 */
K8S_EXTERN bool k8s_obj_is_zero(const cJSON *v);

/** Who controls an object, relative to one owner (k8s_obj_owner_class()). */
typedef enum {
	K8S_OWNER_NONE = 0,   /* no controller ownerReference */
	K8S_OWNER_THIS = 1,   /* the controller ownerReference has the given UID */
	K8S_OWNER_OTHER = 2   /* controlled by something else */
} k8s_owner_class;

/**
 * Classifies `obj` by its controller ownerReference against the owner UID
 * `uid` (NULL or "" never matches, so a controlled object is then
 * K8S_OWNER_OTHER).
 */
K8S_EXTERN k8s_owner_class k8s_obj_owner_class(const cJSON *obj, const char *uid);

/**
 * A new controller ownerReference (meta/v1 OwnerReference with
 * `controller` and `blockOwnerDeletion` true) to the owner of kind `kind`
 * (e.g. "Sandbox") in `api_version` (e.g. "agents.x-k8s.io/v1beta1"),
 * named `name` with UID `uid`; NULL strings are written as "". The caller
 * frees it with cJSON_Delete(). Returns NULL on allocation failure.
 */
K8S_EXTERN cJSON *k8s_obj_controller_ref_new(const char *api_version,
                                             const char *kind,
                                             const char *name,
                                             const char *uid);

/**
 * A new array holding only k8s_obj_controller_ref_new()'s reference (a
 * new object's metadata.ownerReferences). NULL on allocation failure.
 */
K8S_EXTERN cJSON *k8s_obj_controller_refs_new(const char *api_version,
                                              const char *kind,
                                              const char *name,
                                              const char *uid);

/**
 * The ownerReferences to write when adopting `obj`: a new array with its
 * current references except any to `uid`, then a controller reference
 * (k8s_obj_controller_ref_new()) to the owner at the end. NULL on
 * allocation failure.
 */
K8S_EXTERN cJSON *k8s_obj_adopted_owner_refs(const cJSON *obj,
                                             const char *api_version,
                                             const char *kind,
                                             const char *name,
                                             const char *uid);

/**
 * Writes "namespace/name" (or "name" for cluster-scoped objects) into a
 * new string the caller frees with free(). Returns NULL when the object
 * has no name or on allocation failure.
 */
K8S_EXTERN char *k8s_obj_key(const cJSON *obj);

/**
 * Splits a "namespace/name" key. `ns` and `name` receive new strings the
 * caller frees; for a key without '/', *ns is "" and *name the key.
 * Returns 0, ASB_EINVAL (NULL or empty key) or ASB_ENOMEM.
 */
K8S_EXTERN int k8s_key_split(const char *key, char **ns, char **name);

/**
 * Parses an RFC 3339 timestamp ("2026-01-02T03:04:05Z", optional fraction
 * and offset) into milliseconds since the Unix epoch. Returns 0 or
 * ASB_EINVAL.
 */
K8S_EXTERN int k8s_time_parse(const char *s, int64_t *ms_out);

/**
 * Formats milliseconds since the epoch as RFC 3339 UTC with second
 * precision ("2026-01-02T03:04:05Z", the meta/v1 Time wire form) into
 * `buf` (at least 21 bytes). Returns `buf`.
 */
K8S_EXTERN char *k8s_time_format(int64_t ms, char *buf, size_t cap);

/** Wall-clock now in milliseconds since the Unix epoch. */
K8S_EXTERN int64_t k8s_now_ms(void);

/** Monotonic clock in milliseconds (for timeouts and delays). */
K8S_EXTERN int64_t k8s_monotonic_ms(void);

#ifdef __cplusplus
}
#endif
#endif
