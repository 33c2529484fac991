/*
 * resolve.h - where a request goes (docs/upstream.md#target-resolution, #pod-ip-cache, and the
 * router issue's guards): from a valid rt_route to a host to dial, using
 * what the informer caches know (an rt_cache_view), with no API call.
 *
 * With a synced cache that covers the request's namespace
 * ("authoritative"):
 * - an unknown Sandbox is refused with 404;
 * - the Sandbox's pod is the Pod named by its agents.x-k8s.io/pod-name
 *   annotation (else the Sandbox's name) that the Sandbox controls, or else
 *   any live Pod it controls (docs/api.md#pod-management); its IPs are the Pod's
 *   status.podIPs as the Pod cache holds them now;
 * - X-Sandbox-Pod-IP (already class-checked by the contract) is dialled
 *   only when it is one of the IPs of that Pod, not being deleted. An IP
 *   that another live cached Pod holds is refused (400 "Invalid target IP
 *   address."); one that no live cached Pod holds is stale (the pod it
 *   named is gone: the Sandbox was suspended and resumed, or its pod
 *   recreated), and so is any header while the cache knows no live Pod
 *   with an IP for the Sandbox (starting, pod gone or going): the header
 *   is then not dialled, the request is resolved by name as if it had
 *   none. (The Sandbox's own status.podIPs are never trusted: they outlive
 *   a deleted pod.)
 * - without X-Sandbox-Pod-IP the request goes to that Pod's first IP when
 *   the Pod is Ready and not an unclaimed warm-pool member (those are
 *   reachable by pod IP only, as upstream); otherwise to DNS.
 * Wherever the cache is synced, X-Sandbox-Pod-IP is never the IP of a Pod
 * it knows to belong to another Sandbox (400). Without a cache, or outside
 * its scope: the pod IP as given, else DNS
 * `<id>.<ns>.svc.<cluster-domain>` (the authorizer refuses the header in
 * its authenticating modes there, authz.h). IPs from the cache pass the
 * same class check as the header (loopback only with the flag).
 * X-Sandbox-UID is not used for routing: the name is authoritative.
 *
 * Pure over the view; thread-safe when the view is.
 */
#ifndef RT_RESOLVE_H
#define RT_RESOLVE_H

#include <stdbool.h>
#include <stdint.h>
#include "contract.h"

#define RT_MAX_IPS 4

/**
 * A Sandbox's idle policy and state as the cache holds them
 * (sandbox/idle.h): what the router's activity tracking and resume on
 * request need (idlesync.h). All zero for a Sandbox without
 * spec.idleTimeoutSeconds, or not found in an authoritative cache.
 */
typedef struct {
	int64_t timeout_ms;        /**< spec.idleTimeoutSeconds in ms; 0: no policy */
	bool applies;              /**< its activity is published: a policy, not suspended,
	                                nor being deleted, nor an unclaimed pool member
	                                (sbx_idle_applies() without its Ready check) */
	bool resumable;            /**< sbx_idle_resumable(): suspended, policy Suspend */
	bool wakes;                /**< policy Suspend (a timeout, idlePolicy not Delete),
	                                whatever the mode, not being deleted, not an
	                                unclaimed pool member: a request waits for its
	                                pod to be Ready (resumed first when suspended) */
	bool suspended;            /**< spec.operatingMode Suspended (any policy) */
	int64_t last_activity_ms;  /**< agents.x-k8s.io/last-activity (ms); 0: none */
} rt_idle_info;

/** A Sandbox as the resolver needs it (copied out of the cache). */
typedef struct {
	char uid[64];
	char pod_name[254];        /**< pod-name annotation, else the Sandbox name */
	bool warm_pool;            /**< unclaimed warm-pool member (label present) */
	rt_idle_info idle;         /**< its idle policy and state */
} rt_sandbox_info;

/** A Pod as the resolver needs it (copied out of the cache). */
typedef struct {
	char ns[64];
	char name[254];
	char owner_uid[64];        /**< UID of its controlling Sandbox, "" if none */
	char owner_name[254];      /**< that Sandbox's name */
	char ips[RT_MAX_IPS][46];  /**< status.podIPs (or status.podIP) */
	int nips;
	bool ready;                /**< PodReady=True */
	bool deleting;             /**< deletionTimestamp set */
	bool warm_pool;            /**< agents.x-k8s.io/warm-pool-sandbox label */
} rt_pod_info;

/** Read access to the caches; every function is called without locks held. */
typedef struct {
	/** True when synced and `ns` is within the cached namespaces. */
	bool (*authoritative)(void *ud, const char *ns);
	/** True when the Pod cache is synced (IP ownership can be checked). */
	bool (*synced)(void *ud);
	/** The Sandbox ns/name: 0, or -1 when not cached. */
	int (*sandbox)(void *ud, const char *ns, const char *name, rt_sandbox_info *out);
	/** The Pod ns/name: 0, or -1 when not cached. */
	int (*pod)(void *ud, const char *ns, const char *name, rt_pod_info *out);
	/** Up to `cap` Pods controlled by the Sandbox `uid`; returns how many. */
	int (*pods_owned)(void *ud, const char *uid, rt_pod_info *out, int cap);
	/** Up to `cap` cached Pods that have IP `ip` (canonical text); how many. */
	int (*pods_with_ip)(void *ud, const char *ip, rt_pod_info *out, int cap);
	void *ud;
} rt_cache_view;

/** Where the target came from (the `source` of logs). */
typedef enum { RT_SRC_POD_IP, RT_SRC_CACHE, RT_SRC_DNS } rt_source;

/** The result: a host to dial. */
typedef struct {
	rt_source source;
	char host[300];            /**< IP literal or DNS name */
	int port;
	bool is_ip;
	rt_ip ip;                  /**< with is_ip */
	bool cached;               /**< the Sandbox was found in an authoritative cache */
	bool pod_ready;            /**< with `cached`: its pod is Ready and not being deleted */
	rt_idle_info idle;         /**< its idle facts when `cached`, else zero */
} rt_target;

/**
 * Resolves `r`. `view` may be NULL (cache disabled). Returns 0 with `out`
 * filled (with the Sandbox's idle facts when the cache is authoritative:
 * `out->cached`, `out->idle`), or -1 with a 404 (unknown Sandbox) or 400
 * (pod IP of another pod) in `rej`. A suspended Sandbox resolves like one
 * whose pod is gone (DNS); the caller decides whether to resume it.
 */
int rt_resolve(const rt_route *r, const rt_cache_view *view, const char *cluster_domain,
               bool allow_loopback, rt_target *out, rt_reject *rej);

/** Name of a source: "pod-ip", "cache-name", "dns". */
const char *rt_source_name(rt_source s);

#endif
