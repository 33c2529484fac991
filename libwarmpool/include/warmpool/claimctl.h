/*
 * claimctl.h - the SandboxClaim controller (docs/api.md#claim-controller, #warm-queue): binds each
 * claim to a Sandbox, adopting a warm pool member through the in-memory warm
 * queue (compare-and-swap on the claim, so a warm Sandbox is never adopted
 * twice) or creating one cold; mirrors its status; enforces the claim
 * lifecycle; records the claim metrics (docs/api.md#metrics) and events (docs/api.md#events).
 *
 * Lifecycle and thread-safety as templatectl.h.
 */
#ifndef WARMPOOL_CLAIMCTL_H
#define WARMPOOL_CLAIMCTL_H

#include <stdbool.h>
#include "k8s/client.h"
#include "k8s/controller.h"
#include "k8s/events.h"
#include "k8s/informer.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "warmpool/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wp_claim_controller wp_claim_controller;

#define WP_CLAIM_CONTROLLER_OPTIONS_VERSION 1

/** Options; initialise with WP_CLAIM_CONTROLLER_OPTIONS_INIT (upstream defaults). */
typedef struct {
	unsigned int version;            /**< WP_CLAIM_CONTROLLER_OPTIONS_VERSION */
	k8s_client *client;              /**< required; borrowed */
	k8s_informer *claims;            /**< required; borrowed; SandboxClaims (not started) */
	k8s_informer *sandboxes;         /**< required; borrowed; Sandboxes (not started) */
	k8s_informer *pools;             /**< required; borrowed; SandboxWarmPools (not started) */
	k8s_informer *templates;         /**< required; borrowed; SandboxTemplates (not started) */
	int workers;                     /**< `--sandbox-claim-concurrent-workers`; default 50 */
	bool disable_events;             /**< `--disable-claim-events` */
	bool disable_observability_annotations; /**< `--disable-claim-observability-annotations` */
	/**
	 * Path of the allowed label domains file (docs/api.md#additionalpodmetadata, docs/upstream.md#allowed-label-domains);
	 * NULL: "/etc/sandbox-config/allowed-label-domains". A missing file
	 * means the default domain; another read error fails _new() (ASB_ERROR).
	 */
	const char *allowed_label_domains_file;
	asb_logger *logger;              /**< borrowed; NULL: silent */
	asb_metrics_registry *metrics;   /**< borrowed; NULL: none; the claim histograms and counter of docs/api.md#metrics */
	k8s_event_recorder *events;      /**< borrowed; NULL: none (reporting controller sandboxclaim-controller) */
	/**
	 * Borrowed; NULL: none. NetworkPolicies (not started): the legacy
	 * per-claim NetworkPolicy (docs/api.md#claim-reconcile step 2) is
	 * looked up there; without it, with a GET per claim.
	 */
	k8s_informer *networkpolicies;
} wp_claim_controller_options;

#define WP_CLAIM_CONTROLLER_OPTIONS_INIT { .version = WP_CLAIM_CONTROLLER_OPTIONS_VERSION, .workers = 50 }

/** As wp_template_controller_new(); also ASB_ERROR for an unreadable domains file. */
WP_EXTERN int wp_claim_controller_new(wp_claim_controller **out, const wp_claim_controller_options *opts);
/** Starts the workers. @return 0, ASB_EINVAL (started twice), ASB_ERROR. */
WP_EXTERN int wp_claim_controller_start(wp_claim_controller *c);
/** Stops and joins the workers. Idempotent. */
WP_EXTERN void wp_claim_controller_stop(wp_claim_controller *c);
/** Frees; NULL accepted. Stop first. */
WP_EXTERN void wp_claim_controller_free(wp_claim_controller *c);
/**
 * The claim passes waiting in the work queue or running now: the
 * handouts a pool refill should not compete with at the API server
 * (wp_pool_controller_options.handouts_pending). A count of the moment.
 * Thread-safe; NULL: 0.
 */
WP_EXTERN size_t wp_claim_controller_pending(wp_claim_controller *c);
/**
 * Reconciles the SandboxClaim `key` ("namespace/name") once
 * (docs/api.md#claim-reconcile). Reads come from the informer caches; writes go to the API server.
 * A pool or template missing from its cache is looked up on the API server
 * before the claim is reported WarmPoolNotFound / TemplateNotFound (a
 * lagging cache must not fail a client that waits fail-fast on them).
 * `res` receives the requeue: the remaining time to the claim's expiry,
 * 1 ms after persisting ClaimExpired, 200 ms after a create that hit
 * AlreadyExists (cache lag), at most 1 min for WarmPoolNotFound /
 * TemplateNotFound, up to 500 ms while warm candidates wait for their pod
 * IPs (2 s grace).
 * @return 0 (also for the "suppressed" user errors of docs/api.md#claim-reconcile step 11:
 *         invalid metadata, sandbox not owned, env rejected, VCT errors,
 *         which are reported in the Ready condition only); ASB_ECONFLICT
 *         for an AdoptionConflict (retried with backoff); ASB_EINVAL (NULL
 *         argument or bad key); another ASB_E* code for any other failure,
 *         with the message in asb_error_last().
 */
WP_EXTERN int wp_claim_controller_reconcile(wp_claim_controller *c, const char *key,
                                            k8s_reconcile_result *res);

#ifdef __cplusplus
}
#endif
#endif
