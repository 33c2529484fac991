/*
 * object.h - small read helpers over Kubernetes objects held as cJSON:
 * metadata fields, labels, annotations, owner references and "ns/name" keys.
 *
 * All getters borrow: returned strings/nodes point into `obj` and live as
 * long as it does. They accept NULL objects and return NULL/false.
 * Pure functions; thread-safe on distinct or read-only objects.
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
