/*
 * poolctl.h - the SandboxWarmPool controller (docs/api.md#warm-pool-controller): keeps
 * spec.replicas unclaimed, ready Sandboxes built from the pool's
 * SandboxTemplate, created in slow-start batches, gated by expectations so
 * a lagging cache never over-creates, paced by the refill options, with
 * stuck/unschedulable member handling and the Recreate / OnReplenish /
 * RollingUpdate update strategies; writes status replicas/readyReplicas/
 * selector (and, rolling, updatedReplicas and the Progressing condition).
 *
 * Lifecycle and thread-safety as templatectl.h. _new() adds two indexes
 * (on the pools informer by spec.sandboxTemplateRef.name, on the Sandboxes
 * informer by the warm-pool-sandbox label; names prefixed "wp-pool:") and
 * handlers on the pools, Sandboxes and templates informers; the Pod
 * informer is only read, and must cache sbx_pod structs (sbx_pod_codec()),
 * or packed objects of `packer`.
 * Per-pool memory (expectations, replenish/refill state, the
 * not-progressing flag) lives in the controller and is dropped when a pass
 * finds the pool gone or deleting. Events: WarmPoolNotProgressing /
 * WarmPoolProgressing through `events` (docs/api.md#stuck-and-unschedulable-members, #events).
 */
#ifndef WARMPOOL_POOLCTL_H
#define WARMPOOL_POOLCTL_H

#include <stdbool.h>
#include "k8s/client.h"
#include "k8s/controller.h"
#include "k8s/events.h"
#include "k8s/informer.h"
#include "k8s/packed.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "warmpool/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wp_pool_controller wp_pool_controller;

#define WP_POOL_CONTROLLER_OPTIONS_VERSION 1

/** Options; initialise with WP_POOL_CONTROLLER_OPTIONS_INIT (upstream defaults). */
typedef struct {
	unsigned int version;            /**< WP_POOL_CONTROLLER_OPTIONS_VERSION */
	k8s_client *client;              /**< required; borrowed */
	k8s_informer *pools;             /**< required; borrowed; SandboxWarmPools (not started) */
	k8s_informer *sandboxes;         /**< required; borrowed; Sandboxes (not started) */
	k8s_informer *templates;         /**< required; borrowed; SandboxTemplates (not started) */
	/** Required; borrowed; the Pod informer (compact sbx_pod cache,
	 *  sandbox/podcache.h, or packed by `packer`), read for the
	 *  unschedulable test of docs/api.md#stuck-and-unschedulable-members. */
	k8s_informer *pods;
	int workers;                     /**< `--sandbox-warm-pool-concurrent-workers`; default 1 */
	int max_batch_size;              /**< `--sandbox-warm-pool-max-batch-size`; default 300 */
	long replenish_delay_ms;         /**< `--sandbox-warm-pool-replenish-delay`; default 0 */
	double max_refill_rate;          /**< `--sandbox-warm-pool-max-refill-rate` per second; 0: unlimited */
	long readiness_grace_ms;         /**< `--sandbox-warm-pool-readiness-grace-period`; default 5 min */
	long unschedulable_recheck_ms;   /**< `--sandbox-warm-pool-unschedulable-recheck-interval`; default 1 min */
	bool enable_eviction;            /**< `--enable-warm-pool-eviction`; default true */
	asb_logger *logger;              /**< borrowed; NULL: silent */
	asb_metrics_registry *metrics;   /**< borrowed; NULL: none */
	k8s_event_recorder *events;      /**< borrowed; NULL: none (reporting controller sandboxwarmpool-controller) */
	/**
	 * Optional (NULL: refills never wait): the number of claim handouts
	 * pending right now (wp_claim_controller_pending()), called from the
	 * pool workers with `handouts_ud`. While it is > 0 a pool's refill
	 * creates and its status write wait, the pool requeued every WP_POOL_HANDOUT_RECHECK_MS, for
	 * at most WP_POOL_HANDOUT_WAIT_MS from the first wait, so that claims go
	 * first when both would queue at the API server and a refill is never
	 * starved. Must be thread-safe and quick.
	 */
	size_t (*handouts_pending)(void *ud);
	void *handouts_ud;
	/**
	 * Optional; borrowed: the packer whose codec (k8s_packer_codec()) the
	 * `sandboxes` and `pods` informers cache with, so that members and
	 * their Pods are read in place from their packed form. NULL: the
	 * `sandboxes` informer caches cJSON trees and `pods` sbx_pod structs.
	 */
	const k8s_packer *packer;
} wp_pool_controller_options;

/** Requeue delay of a refill waiting for claim handouts, ms. */
#define WP_POOL_HANDOUT_RECHECK_MS 100
/** Longest wait of a refill for claim handouts, ms. */
#define WP_POOL_HANDOUT_WAIT_MS 1000

#define WP_POOL_CONTROLLER_OPTIONS_INIT { .version = WP_POOL_CONTROLLER_OPTIONS_VERSION, \
	.workers = 1, .max_batch_size = 300, .readiness_grace_ms = 5 * 60 * 1000L, \
	.unschedulable_recheck_ms = 60 * 1000L, .enable_eviction = true }

/** As wp_template_controller_new(); also ASB_EINVAL for a negative delay/rate or batch < 1. */
WP_EXTERN int wp_pool_controller_new(wp_pool_controller **out, const wp_pool_controller_options *opts);
/** Starts the workers. @return 0, ASB_EINVAL (started twice), ASB_ERROR. */
WP_EXTERN int wp_pool_controller_start(wp_pool_controller *c);
/** Stops and joins the workers. Idempotent. */
WP_EXTERN void wp_pool_controller_stop(wp_pool_controller *c);
/** Frees; NULL accepted. Stop first. */
WP_EXTERN void wp_pool_controller_free(wp_pool_controller *c);
/** Reconciles the SandboxWarmPool `key` ("namespace/name") once. */
WP_EXTERN int wp_pool_controller_reconcile(wp_pool_controller *c, const char *key,
                                           k8s_reconcile_result *res);

#ifdef __cplusplus
}
#endif
#endif
