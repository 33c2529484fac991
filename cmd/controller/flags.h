/*
 * flags.h - the command line of agent-sandbox-controller. Names and
 * defaults follow the upstream controller (docs/upstream.md#controller-flags), so that
 * existing Helm values and docs carry over. docs/controller.md lists them.
 */
#ifndef CONTROLLER_FLAGS_H
#define CONTROLLER_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "asb/log_flags.h"
#include "webhook_flags.h"

typedef struct {
	const char *kubeconfig;
	const char *context;
	const char *cluster_domain;
	int sandbox_workers;
	/** --log-format, --log-level and controller-runtime's zap flags
	 *  (asb/log_flags.h): JSON at info by default, as upstream. */
	asb_log_flags log;
	const char *metrics_addr;
	const char *probe_addr;
	bool leader_elect;
	const char *leader_election_namespace;
	double kube_api_qps;
	int kube_api_burst;
	int api_connections;
	bool separate_watch_connection;
	/** --sandbox-write-behind-window in milliseconds (>= 0; 0: synchronous). */
	long sandbox_write_behind_window_ms;
	long sandbox_status_coalesce_window_ms;

	/* --cache-label-selectors: the Pod and Service informers see only
	 * objects carrying agents.x-k8s.io/sandbox-name-hash (docs/upstream.md#cache-scoping). */
	bool cache_label_selectors;

	/* Flags of the extension controllers (SandboxClaim, SandboxTemplate,
	 * SandboxWarmPool), parsed and validated with upstream's rules so that
	 * existing Helm values keep working; the controllers are not in this
	 * build yet, and --extensions=true is refused by controller_flags_validate(). */
	bool extensions;
	int sandbox_claim_workers;                    /**< default 50, > 0 */
	int sandbox_warm_pool_workers;                /**< default 1, > 0 */
	int sandbox_template_workers;                 /**< default 1, unchecked */
	int warm_pool_max_batch_size;                 /**< default 300, > 0 */
	long warm_pool_replenish_delay_ms;            /**< default 0 */
	double warm_pool_max_refill_rate;             /**< default 0, finite, >= 0 */
	long warm_pool_readiness_grace_period_ms;     /**< default 5m, > 0 */
	long warm_pool_unschedulable_recheck_ms;      /**< default 1m, > 0 */
	bool enable_warm_pool_eviction;               /**< default true */
	bool disable_claim_events;
	bool disable_claim_observability_annotations;

	/* Accepted for compatibility, without effect (a warning says so): there
	 * is no OpenTelemetry exporter and no Go runtime to profile. */
	bool enable_tracing;
	bool enable_pprof;
	bool enable_pprof_debug;
	int pprof_block_profile_rate;                 /**< default 1000000; < 0 clamped to 0 */
	int pprof_mutex_profile_fraction;             /**< default 10 */

	/* The conversion webhook (webhook_flags.h). */
	webhook_flags webhook;
} controller_flags;

/** The upstream defaults. */
void controller_flags_defaults(controller_flags *f);

/**
 * Parses argv into `f` (pointers into argv) as Go's flag package reads
 * upstream's (asb/flags.h ASB_FLAGS_GO): -flag or --flag, =value or the
 * next word, booleans bare or =value. Returns 0 to run, 1 when the program
 * should exit 0 (--help, -h, --version: already printed), -1 on what Go's
 * flag package refuses (an unknown flag, a missing value, a value not of the
 * flag's type: upstream exits 2), -2 on a well-formed value that a startup
 * rule refuses (a bound: upstream exits 1). The message, naming the flag, is
 * printed on stderr.
 */
int controller_flags_parse(int argc, char **argv, controller_flags *f);

/**
 * Startup validation across flags, after parsing (docs/upstream.md#startup-validation):
 * refuses what this build cannot do (--extensions). Returns 0, or -1 with
 * a message naming the flag in `err` (NUL-terminated, truncated to `cap`).
 */
int controller_flags_validate(const controller_flags *f, char *err, size_t cap);

/** Receives one startup warning: the flag concerned and the message. */
typedef void (*controller_flags_warn_fn)(const char *flag, const char *msg, void *userdata);

/**
 * Calls `warn` once per startup warning of valid but questionable flags
 * (docs/upstream.md#startup-validation: total workers above 1000, QPS > 0 with more
 * workers than the burst; and flags accepted without effect here: tracing,
 * pprof). Returns the number of warnings.
 */
int controller_flags_warnings(const controller_flags *f, controller_flags_warn_fn warn,
                              void *userdata);

#endif
