/*
 * cache.h - how the controllers cache the objects of the agents.x-k8s.io
 * API (and the Services beside them): packed (k8s/packed.h) with a
 * dictionary that knows this API's words, so a cached Sandbox costs a few
 * hundred bytes instead of a cJSON tree's several KiB (docs/architecture.md,
 * "Caches").
 */
#ifndef SANDBOX_CACHE_H
#define SANDBOX_CACHE_H

#include "k8s/packed.h"
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Creates a packer (k8s_packer_new()) whose dictionary adds the words of
 * this API to the built-in Kubernetes ones: its apiVersions and kinds,
 * member names (podTemplate, serviceFQDN, operatingMode...), the system
 * labels and annotations, the Ready condition's usual reasons and
 * messages. Free it with k8s_packer_free() after every informer using its
 * codec. Thread-safe once created.
 *
 * @return 0; ASB_EINVAL for a NULL `out`; ASB_ENOMEM.
 */
SBX_EXTERN int sbx_packer_new(k8s_packer **out);

#ifdef __cplusplus
}
#endif
#endif
