/*
 * resource.h - naming an API resource: group, version, plural resource.
 *
 * A k8s_resource is the "GVR" of client-go: it is what a REST path is built
 * from (/api/v1/namespaces/NS/pods, /apis/GROUP/VERSION/...). The well-known
 * resources used by this project are provided as constants.
 */
#ifndef K8S_RESOURCE_H
#define K8S_RESOURCE_H

#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An API resource. All strings are borrowed and must outlive its use. */
typedef struct {
	const char *group;     /**< API group, "" for the core group */
	const char *version;   /**< e.g. "v1" */
	const char *resource;  /**< plural lower-case name, e.g. "pods" */
	const char *kind;      /**< Kind, e.g. "Pod" (used in messages) */
	bool namespaced;       /**< true for namespaced resources */
} k8s_resource;

/** core/v1 pods */
K8S_EXTERN extern const k8s_resource k8s_resource_pods;
/** core/v1 services */
K8S_EXTERN extern const k8s_resource k8s_resource_services;
/** core/v1 persistentvolumeclaims */
K8S_EXTERN extern const k8s_resource k8s_resource_pvcs;
/** core/v1 namespaces (cluster-scoped) */
K8S_EXTERN extern const k8s_resource k8s_resource_namespaces;
/** core/v1 events */
K8S_EXTERN extern const k8s_resource k8s_resource_events;
/** coordination.k8s.io/v1 leases */
K8S_EXTERN extern const k8s_resource k8s_resource_leases;
/** apiextensions.k8s.io/v1 customresourcedefinitions (cluster-scoped) */
K8S_EXTERN extern const k8s_resource k8s_resource_crds;

/**
 * Writes the REST path of a collection or object into `buf` (`cap` bytes):
 * `ns` is ignored for cluster-scoped resources and may be NULL for a
 * collection across all namespaces; `name` and `subresource` may be NULL.
 * Path segments are percent-encoded. Returns the length written, or -1
 * (ASB_EINVAL recorded) when it does not fit or an argument is invalid.
 */
K8S_EXTERN int k8s_resource_path(char *buf, size_t cap, const k8s_resource *r,
                                 const char *ns, const char *name,
                                 const char *subresource);

#ifdef __cplusplus
}
#endif
#endif
