/*
 * reconciler.h - the Sandbox reconciler: reads the informer caches, runs
 * the decision of reconcile.h, applies it with the REST client, and writes
 * the status (docs/api.md#sandbox-controller).
 *
 * Wiring (the controller executable does this):
 *   - a Sandbox informer (sbx_resource_sandboxes);
 *   - a Pod informer with transform sbx_pod_transform and an index named
 *     SBX_POD_INDEX_NAME_HASH built with sbx_pod_index_name_hash;
 *   - a Service informer;
 *   - event handlers mapping a Pod/Service to the key returned by
 *     sbx_owner_sandbox_key(), and a Sandbox to its own "ns/name";
 *   - a k8s_controller whose reconcile function calls
 *     sbx_reconciler_reconcile().
 *
 * Read-your-own-writes: the Sandbox the API server returned from the
 * reconciler's last write of it (pod-name annotation patch, status patch)
 * is read instead of the informer's copy while that copy still shows a
 * resourceVersion the write superseded (mutationcache.h).
 *
 * Thread-safety: one reconciler serves any number of worker threads at
 * once (it holds borrowed, thread-safe handles, immutable settings, the
 * write-behind deferrals behind a mutex and the thread-safe cache of its
 * own writes); the work queue guarantees one key is never reconciled twice
 * at the same time.
 */
#ifndef SANDBOX_RECONCILER_H
#define SANDBOX_RECONCILER_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include "k8s/client.h"
#include "k8s/controller.h"
#include "k8s/events.h"
#include "k8s/informer.h"
#include "asb/log.h"
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Name of the Pod informer index by the name-hash label (docs/api.md#sandbox-watches). */
#define SBX_POD_INDEX_NAME_HASH "sandbox-name-hash"

/** Opaque reconciler. */
typedef struct sbx_reconciler sbx_reconciler;

#define SBX_RECONCILER_OPTIONS_VERSION 1

/** Reconciler options; initialise with SBX_RECONCILER_OPTIONS_INIT. */
typedef struct {
	unsigned int version;        /**< SBX_RECONCILER_OPTIONS_VERSION */
	k8s_client *client;          /**< required; borrowed */
	k8s_informer *sandboxes;     /**< required; borrowed; Sandboxes */
	/** Required; borrowed; Pods, with the index SBX_POD_INDEX_NAME_HASH. */
	k8s_informer *pods;
	k8s_informer *services;      /**< required; borrowed; Services */
	/** `--cluster-domain`; NULL: "cluster.local". Copied. */
	const char *cluster_domain;
	asb_logger *logger;          /**< borrowed; NULL: silent */
	/**
	 * Borrowed; NULL: events are only logged. Receives the Warning
	 * `MultiplePods` (action `Reconciling`) of docs/api.md#sandbox-events.
	 */
	k8s_event_recorder *events;
	/**
	 * `--sandbox-write-behind-window` in milliseconds (docs/upstream.md#controller-flags,
	 * docs/api.md#pod-metadata): 0 (the default) writes everything at once; > 0
	 * lets a metadata-only patch of an already-owned Pod wait, coalescing
	 * template edits, for at most min(window, 1 s), by a delayed requeue
	 * of the Sandbox. Adoptions are never deferred. Negative: EINVAL.
	 * The pending deferrals are kept in the reconciler, behind its lock.
	 */
	long write_behind_window_ms;
	/**
	 * `--sandbox-status-coalesce-window` in milliseconds (docs/api.md#sandbox-reconcile
	 * step 6): while a Sandbox is not Ready and a status change would leave it
	 * not Ready (a Pod being created, scheduled, started), the write waits,
	 * by a delayed requeue, until the window since the first such held
	 * change has passed, so that one write carries the changes of the
	 * window; a change to Ready=True, an error, a suspended Sandbox and a
	 * Sandbox that is or was Ready are written at once. 0 (the
	 * zero-initialised value): every change at once, as upstream; the
	 * controller's default is 500. Negative: EINVAL.
	 */
	long status_coalesce_window_ms;
	/**
	 * `--cache-label-selectors` (docs/upstream.md#cache-scoping): the Pod and Service
	 * informers list only objects carrying SBX_LABEL_NAME_HASH. Then a Pod
	 * or Service without that label is invisible here too, as in
	 * controller-runtime's scoped cache: one read from the API server
	 * (the Pod by name after a cache miss, the object behind an
	 * AlreadyExists) is ignored when it lacks the label, so an unlabelled
	 * adoptable object is never adopted (the create fails AlreadyExists).
	 */
	bool cache_label_selectors;
	/**
	 * Optional (NULL: nothing yields): the number of claim hand-outs
	 * pending right now (wp_claim_controller_pending()), called from the
	 * reconcile workers with `handouts_ud`; must be thread-safe and quick.
	 * While it is > 0, the writes a claim does not wait for yield to the
	 * claims at the API server: the metadata patch of an owned Pod and a
	 * status write that changes nothing but observedGeneration (a claim's
	 * adoption of a Ready Sandbox makes both) wait, the Sandbox requeued
	 * every SBX_YIELD_RECHECK_MS, for at most SBX_YIELD_MAX_MS from the
	 * first wait, then are written whatever the backlog.
	 */
	size_t (*handouts_pending)(void *ud);
	void *handouts_ud;
} sbx_reconciler_options;

/** Requeue delay of a write yielding to claim hand-outs, ms. */
#define SBX_YIELD_RECHECK_MS 250
/** Longest wait of a write yielding to claim hand-outs, ms. */
#define SBX_YIELD_MAX_MS 1000

#define SBX_RECONCILER_OPTIONS_INIT { .version = SBX_RECONCILER_OPTIONS_VERSION }

/**
 * Fills `opts` with the defaults of `version`. Returns 0, or ASB_EINVAL
 * for a NULL `opts` or an unknown version.
 */
SBX_EXTERN int sbx_reconciler_options_init(sbx_reconciler_options *opts,
                                           unsigned int version);

/**
 * Creates a reconciler. The handles in `opts` are borrowed and must
 * outlive it; strings are copied.
 *
 * @return 0; ASB_EINVAL (NULL out/opts, unknown version, a required handle
 *         missing, a negative write-behind or status coalesce window);
 *         ASB_ENOMEM.
 */
SBX_EXTERN int sbx_reconciler_new(sbx_reconciler **out,
                                  const sbx_reconciler_options *opts);

/** Frees a reconciler; NULL accepted. No reconcile may be in flight. */
SBX_EXTERN void sbx_reconciler_free(sbx_reconciler *r);

/**
 * Reconciles the Sandbox `key` ("namespace/name") once (docs/api.md#sandbox-reconcile):
 * reads it from the cache, or the object of its own last write while the
 * cache lags behind that write (absent or being deleted: done), reads its Pods
 * and Service from the caches, and gets from the API server the PVCs and,
 * when the cache has none, the Pod of the resolved pod name (caches lag).
 * Then plans, applies (creates with fieldManager `sandbox-controller`;
 * AlreadyExists handled by reading the object), and writes the status with
 * a JSON merge patch of the status subresource only when it changed
 * (NotFound ignored: the Sandbox went away meanwhile).
 *
 * @param res  receives the requeue delay (requeue_after_ms: time until
 *             shutdownTime, at least 2 s; 1 ms right after marking expiry;
 *             at most the time left of a deferred Pod patch).
 * @return 0, or the ASB_E* code of the first failure with the joined
 *         errors of the pass in asb_error_last() (docs/api.md#sandbox-reconcile step 7): e.g.
 *         ASB_ECONFLICT for a stale Service update (requeue), ASB_ERROR for
 *         a decided refusal (`pod "p" is owned by ...`), ASB_EINVAL for a
 *         malformed key. The MultiplePods situation returns 0: it is
 *         reported in the Ready condition and logged as a Warning.
 */
SBX_EXTERN int sbx_reconciler_reconcile(sbx_reconciler *r, const char *key,
                                        k8s_reconcile_result *res);

/**
 * A k8s_reconcile_fn calling sbx_reconciler_reconcile() with the
 * reconciler passed as `userdata`, for k8s_controller_options.reconcile.
 */
SBX_EXTERN int sbx_reconcile_fn(const char *key, k8s_reconcile_result *res,
                                void *userdata);

/**
 * k8s_index_fn of the Pod index SBX_POD_INDEX_NAME_HASH: the value of the
 * label agents.x-k8s.io/sandbox-name-hash (one key, borrowed from `obj`),
 * or none when the label is absent. Pure; thread-safe.
 */
SBX_EXTERN int sbx_pod_index_name_hash(const cJSON *obj, const char **keys,
                                       int cap, void *userdata);

/**
 * The "namespace/name" key of the Sandbox controlling `obj`: from its
 * controller ownerReference whose apiVersion is in group agents.x-k8s.io
 * (any version) and kind is Sandbox, in `obj`'s namespace. NULL when there
 * is none (or on allocation failure). The caller frees the string with
 * free(). Pure; thread-safe.
 */
SBX_EXTERN char *sbx_owner_sandbox_key(const cJSON *obj);

/**
 * k8s_transform_fn of the Pod informer (docs/upstream.md#cache-scoping "diet"): drops
 * metadata.managedFields and metadata.finalizers, reduces `spec` to
 * `nodeName` and `status` to phase, podIP(s) and the conditions' type,
 * status, reason and message, keeps the rest of metadata — all the
 * reconciler reads of a cached Pod (Pod writes are metadata-only merge
 * patches, so the diet is safe). Edits `obj` in place and returns it.
 * Thread-safe on distinct objects.
 */
SBX_EXTERN cJSON *sbx_pod_transform(cJSON *obj, void *userdata);

#ifdef __cplusplus
}
#endif
#endif
