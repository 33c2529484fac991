/*
 * podcache.h - the compact form in which the Sandbox controller caches Pods
 * (design.md docs/api.md#sandbox rule 5): an sbx_pod struct holding exactly what the "diet"
 * transform sbx_pod_transform() keeps, all in one allocation, and the
 * k8s_object_codec (k8s/informer.h) that makes a Pod informer cache it.
 *
 * The reconciler keeps reading cJSON Pods: the informer encodes the struct
 * back, and sbx_pod_encode(sbx_pod_decode(diet(pod))) equals diet(pod)
 * (cJSON_Compare; printed byte for byte when the members come in the API
 * server's order). Callers that want the struct itself read it with
 * k8s_informer_read().
 */
#ifndef SANDBOX_PODCACHE_H
#define SANDBOX_PODCACHE_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include "k8s/informer.h"
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A label or annotation. */
typedef struct {
	const char *key;
	const char *value;
} sbx_pod_kv;

/** A meta/v1 OwnerReference; NULL strings were absent. */
typedef struct {
	const char *api_version, *kind, *name, *uid;
	int8_t controller;             /**< -1 absent, 0 false, 1 true */
	int8_t block_owner_deletion;   /**< -1 absent, 0 false, 1 true */
} sbx_pod_owner_ref;

/** A PodCondition as the diet keeps it; NULL strings were absent. */
typedef struct {
	const char *type, *status, *reason, *message;
} sbx_pod_condition;

/** sbx_pod.present bits: members present even when empty. */
enum {
	SBX_POD_HAS_METADATA = 1 << 0,
	SBX_POD_HAS_LABELS = 1 << 1,
	SBX_POD_HAS_ANNOTATIONS = 1 << 2,
	SBX_POD_HAS_OWNER_REFS = 1 << 3,
	SBX_POD_HAS_SPEC = 1 << 4,
	SBX_POD_HAS_STATUS = 1 << 5,
	SBX_POD_HAS_POD_IPS = 1 << 6,
	SBX_POD_HAS_CONDITIONS = 1 << 7,
	SBX_POD_HAS_GENERATION = 1 << 8,
	SBX_POD_HAS_GRACE_PERIOD = 1 << 9,
};

/**
 * A Pod after the diet. Strings are NULL when the member was absent; they,
 * and the arrays, live in the struct's own allocation (or are static
 * constants for common values such as "True" or "Ready"). Arrays keep the
 * order of the object. Immutable once decoded.
 */
typedef struct {
	const char *kind, *api_version;
	/* metadata */
	const char *name, *generate_name, *namespace_, *uid, *resource_version;
	const char *creation_timestamp, *deletion_timestamp;  /**< RFC 3339, as received */
	int64_t generation;                     /**< with SBX_POD_HAS_GENERATION */
	int64_t deletion_grace_period_seconds;  /**< with SBX_POD_HAS_GRACE_PERIOD */
	const sbx_pod_kv *labels;
	const sbx_pod_kv *annotations;
	const sbx_pod_owner_ref *owner_refs;
	uint32_t nlabels, nannotations, nowner_refs;
	/* spec */
	const char *node_name;
	/* status */
	const char *phase, *pod_ip;
	const char *const *pod_ips;             /**< status.podIPs[].ip (NULL: {}) */
	const sbx_pod_condition *conditions;
	uint32_t npod_ips, nconditions;
	uint32_t present;                       /**< SBX_POD_HAS_* bits */
	uint32_t size;                          /**< bytes of the allocation */
	/**
	 * NULL normally. When the object held something the fields above cannot
	 * say (an unknown member, a member of an unexpected type, a duplicate
	 * key, a root that is not an object), the whole object as compact JSON:
	 * sbx_pod_encode() then parses it, so nothing is ever lost. The typed
	 * fields still hold what they could read.
	 */
	const char *json;
} sbx_pod;

/**
 * Decodes a Pod (normally after sbx_pod_transform()) into a new sbx_pod in
 * `*out` (free with sbx_pod_free()). `obj` is borrowed. Pure; thread-safe.
 *
 * @return 0; ASB_EINVAL for a NULL `obj` or `out`; ASB_ENOMEM.
 */
SBX_EXTERN int sbx_pod_decode(const cJSON *obj, sbx_pod **out);

/**
 * Builds the cJSON object `pod` was decoded from: equal to it under
 * cJSON_Compare(), with members in the API server's order (kind,
 * apiVersion, metadata, spec, status; Go struct order within). Returns a
 * new object the caller frees with cJSON_Delete(), or NULL when out of
 * memory (or `pod` is NULL). Pure; thread-safe on a shared `pod`.
 */
SBX_EXTERN cJSON *sbx_pod_encode(const sbx_pod *pod);

/** Frees a decoded Pod; NULL accepted. */
SBX_EXTERN void sbx_pod_free(sbx_pod *pod);

/** The value of label `key`, or NULL. Pure; thread-safe. */
SBX_EXTERN const char *sbx_pod_label(const sbx_pod *pod, const char *key);

/** The condition of type `type` (e.g. "Ready"), or NULL. Pure; thread-safe. */
SBX_EXTERN const sbx_pod_condition *sbx_pod_condition_get(const sbx_pod *pod,
                                                          const char *type);

/**
 * The codec for k8s_informer_options.codec: decode sbx_pod_decode(),
 * encode sbx_pod_encode(), free sbx_pod_free(), resource_version. Use it
 * with transform sbx_pod_transform() (the cache then holds what the diet
 * keeps, as sbx_pod structs). The returned codec is a static constant;
 * thread-safe.
 */
SBX_EXTERN const k8s_object_codec *sbx_pod_codec(void);

#ifdef __cplusplus
}
#endif
#endif
