/*
 * idle.h - idle suspend and delete (docs/api.md#idle-suspend-and-resume): the
 * policy a Sandbox carries, when it was last active, when it is due, and
 * how often the router may publish its activity. Our extension to the
 * upstream API: Sandboxes without `spec.idleTimeoutSeconds` are never
 * touched by any of this.
 *
 * Activity is carried by the annotation agents.x-k8s.io/last-activity
 * (RFC 3339), written by the router (merge patch) at most once per
 * sbx_idle_publish_interval_ms(); the controller reads it from its cache.
 * The idle clock of a Sandbox starts at the latest of that annotation, its
 * creation and the last time its Ready condition turned True (a resume, a
 * manual `operatingMode: Running`), and only a Ready Sandbox is judged, so
 * a Sandbox is never found idle for time it spent suspended or starting.
 *
 * Every function here is pure over its arguments, reads no clock and keeps
 * no state: thread-safe.
 */
#ifndef SANDBOX_IDLE_H
#define SANDBOX_IDLE_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** On the Sandbox: when it was last used through the router (RFC 3339). */
#define SBX_ANNOTATION_LAST_ACTIVITY "agents.x-k8s.io/last-activity"
/**
 * On the Sandbox: set (RFC 3339) by the controller when it suspends the
 * Sandbox for idleness, removed by whoever resumes it (the router's resume
 * patch, else the controller once it runs again). While present on a
 * suspended Sandbox its Suspended condition's reason is IdleTimeout.
 */
#define SBX_ANNOTATION_IDLE_SUSPENDED_AT "agents.x-k8s.io/idle-suspended-at"

/** spec.idlePolicy values (Sandbox, SandboxTemplate, claim lifecycle). */
#define SBX_IDLE_POLICY_SUSPEND "Suspend"
#define SBX_IDLE_POLICY_DELETE "Delete"

/** Reason of the Suspended condition and of the Normal event of an idle action. */
#define SBX_REASON_IDLE_TIMEOUT "IdleTimeout"

/** Smallest accepted spec.idleTimeoutSeconds (the CRDs' minimum). */
#define SBX_IDLE_TIMEOUT_MIN_SECONDS 30
/** Largest accepted spec.idleTimeoutSeconds (one year; the CRDs' maximum). */
#define SBX_IDLE_TIMEOUT_MAX_SECONDS 31536000
/** The router never publishes one Sandbox's activity more often than this (ms). */
#define SBX_IDLE_PUBLISH_MIN_MS 10000

/** What idleness does to a Sandbox. */
typedef enum {
	SBX_IDLE_OFF = 0,      /**< no spec.idleTimeoutSeconds (or not > 0) */
	SBX_IDLE_SUSPEND = 1,  /**< spec.idlePolicy Suspend or absent */
	SBX_IDLE_DELETE = 2    /**< spec.idlePolicy Delete */
} sbx_idle_action;

/** A Sandbox's idle policy. */
typedef struct {
	sbx_idle_action action;
	int64_t timeout_ms;    /**< spec.idleTimeoutSeconds in ms; 0 when OFF */
} sbx_idle_policy;

/**
 * Reads the idle policy from a Sandbox's spec (`spec.idleTimeoutSeconds`,
 * an integer > 0, else OFF; `spec.idlePolicy` "Delete" gives DELETE, any
 * other value or none SUSPEND). The same shape is read from a
 * SandboxTemplate's spec or a claim's spec.lifecycle with `path` "spec" or
 * "spec.lifecycle" (`obj` NULL or the path absent: OFF). `out` is
 * filled in whole.
 */
SBX_EXTERN void sbx_idle_policy_at(const cJSON *obj, const char *path, sbx_idle_policy *out);

/** sbx_idle_policy_at(sandbox, "spec", out). */
SBX_EXTERN void sbx_idle_policy_of(const cJSON *sandbox, sbx_idle_policy *out);

/**
 * When the Sandbox was last active, in ms since the epoch: the latest of
 * its agents.x-k8s.io/last-activity annotation, its creationTimestamp and
 * the lastTransitionTime of its Ready condition when that is True.
 * Unparsable values are ignored. 0 when none is known.
 */
SBX_EXTERN int64_t sbx_idle_last_activity_ms(const cJSON *sandbox);

/**
 * Whether idleness applies to the Sandbox now: its policy is not OFF, it
 * is not being deleted, not suspended (spec.operatingMode), not an
 * unclaimed warm-pool member (label agents.x-k8s.io/warm-pool-sandbox:
 * those wait idle by design; adoption starts their clock), and its Ready
 * condition is True (a Sandbox starting, or resumed and not yet Ready
 * again, is not judged: its clock restarts when Ready turns True).
 */
SBX_EXTERN bool sbx_idle_applies(const cJSON *sandbox);

/**
 * When the Sandbox becomes idle (ms since the epoch): last activity plus
 * the timeout; 0 when idleness does not apply (sbx_idle_applies()) or no
 * time is known. It is due when now >= that time.
 */
SBX_EXTERN int64_t sbx_idle_due_ms(const cJSON *sandbox);

/**
 * Whether an idle Delete was begun and not finished: policy DELETE, the
 * Sandbox suspended by the controller for idleness (the idle-suspended-at
 * annotation), not being deleted. The suspend comes first when the
 * Delete goes through a claim (reconcile.h SBX_PASS_IDLE); a pass that
 * finds it so deletes again.
 */
SBX_EXTERN bool sbx_idle_delete_pending(const cJSON *sandbox);

/**
 * Whether the router may resume the Sandbox on a request: it is
 * suspended (spec.operatingMode Suspended), not being deleted, and its
 * idle policy is SUSPEND.
 */
SBX_EXTERN bool sbx_idle_resumable(const cJSON *sandbox);

/**
 * The name of the SandboxClaim (extensions.agents.x-k8s.io) named by the
 * Sandbox's controller ownerReference, or NULL (borrowed from `sandbox`).
 * Only a name: whether that claim really binds the Sandbox is for the
 * caller to check (sbx_observed.claim).
 */
SBX_EXTERN const char *sbx_idle_controlling_claim(const cJSON *sandbox);

/**
 * The least time between two publications of one Sandbox's activity, in
 * ms: max(SBX_IDLE_PUBLISH_MIN_MS, timeout_ms / 4). With the CRD's minimum
 * timeout (30 s) an active Sandbox's published activity is never older
 * than a third of its timeout.
 */
SBX_EXTERN int64_t sbx_idle_publish_interval_ms(int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
