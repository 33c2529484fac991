/*
 * cache.h - the router's view of the cluster (docs/upstream.md#pod-ip-cache, with
 * Sandboxes added): two informers, Sandboxes and the Pods labelled
 * agents.x-k8s.io/sandbox-name-hash that have an IP, both diet-transformed,
 * the Pods cached as libsandbox's compact sbx_pod structs and indexed by
 * owner UID and by IP. rt_cache_view() exposes them to rt_resolve(): every
 * lookup is a hash-map read under the informer's read lock, no API call.
 *
 * Threads: the informers run their own threads; the view functions are
 * thread-safe (any loop thread). RBAC: list and watch of sandboxes and
 * pods, nothing else.
 */
#ifndef RT_CACHE_H
#define RT_CACHE_H

#include "k8s/client.h"
#include "asb/log.h"
#include "resolve.h"

typedef struct rt_cache rt_cache;

/**
 * Creates the informers over `client` (borrowed; outlives the cache), for
 * namespace `ns` ("" or NULL: all). Not started. Returns 0 or a ASB_E*
 * code (recorded).
 */
int rt_cache_new(rt_cache **out, k8s_client *client, const char *ns, asb_logger *log);

/** Starts the informers. Returns 0 or a ASB_E* code. */
int rt_cache_start(rt_cache *c);

/** Waits until both informers have listed, at most `timeout_ms`. 0 or ASB_ETIMEOUT. */
int rt_cache_wait_synced(rt_cache *c, long timeout_ms);

/** True once both informers have listed. Thread-safe. */
bool rt_cache_synced(rt_cache *c);

/** Fills `v` with functions reading this cache (`v->ud` = c). */
void rt_cache_view_init(rt_cache *c, rt_cache_view *v);

/** Stops the informers and frees; NULL accepted. */
void rt_cache_free(rt_cache *c);

/*
 * The transforms and converters, exposed for the unit tests.
 */

/** Informer transform of Sandboxes: keeps name, namespace, uid,
 *  resourceVersion, deletionTimestamp, the warm-pool label, the pod-name
 *  and last-activity annotations, spec.idleTimeoutSeconds and
 *  spec.idlePolicy, and spec.operatingMode when it is Suspended (Running,
 *  the default, is left out). Takes `obj`, returns the diet object. */
cJSON *rt_cache_sandbox_transform(cJSON *obj, void *ud);

/** Fills `out` from a (transformed) Sandbox, its idle facts by
 *  sandbox/idle.h's functions; returns 0. */
int rt_cache_sandbox_info(const cJSON *sb, rt_sandbox_info *out);

/** Index function of the Pod informer: every IP of status.podIPs and
 *  status.podIP, in the API server's (canonical) text form. */
int rt_cache_index_pod_ips(const cJSON *obj, const char **keys, int cap, void *ud);

#endif
