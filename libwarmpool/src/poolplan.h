/*
 * poolplan.h - the pure half of the SandboxWarmPool controller
 * (docs/api.md#warm-pool-controller): member classification (docs/api.md#pool-members), stuck/unschedulable
 * handling (docs/api.md#stuck-and-unschedulable-members), sizing, creates, excess deletes, status, replenish hold
 * and refill token bucket (docs/api.md#pool-sizing), staleness and rollout (docs/api.md#staleness-and-update-strategies), requeue
 * computation, and the member Sandbox builder.
 *
 * A pass runs in three pure phases with the I/O in between, because what
 * a phase counts depends on whether the writes of the one before worked:
 *   1. wp_pool_classify(): per member, its class and the write it needs
 *      (delete as stale, set launch-type, adopt). poolctl.c applies them
 *      and marks failures (wp_pool_member.failed).
 *   2. wp_pool_stuck(): active members that are not Ready past the grace
 *      period are held (unschedulable) or deleted as stuck. Applied the
 *      same way.
 *   3. wp_pool_size(): counts, status patch, creates (replenish hold,
 *      expectations gate, token bucket), excess deletes, event transition
 *      and requeue.
 * The expectations tracker and the Pod cache are read through callbacks
 * of wp_pool_input, so tests script them.
 *
 * All functions are pure (no I/O, no clock, no global state) and
 * thread-safe on distinct arguments. Private to libwarmpool: hidden in the
 * shared library; the unit tests reach them through libwarmpool_internal.
 */
#ifndef WP_POOLPLAN_H
#define WP_POOLPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "sandbox/namehash.h"
#include "warmpool/api.h"

/** Requeue after a pass whose creates/deletes the expectations gate held (docs/api.md#pool-sizing). */
#define WP_POOL_EXPECTATIONS_REQUEUE_MS 30000L
/** Added to the earliest grace deadline before jitter (docs/api.md#stuck-and-unschedulable-members). */
#define WP_POOL_GRACE_SLACK_MS 2000L

/** What the pass observed and the options it runs with. */
typedef struct {
	const cJSON *pool;          /**< the SandboxWarmPool (whole object) */
	const cJSON *tpl;           /**< its SandboxTemplate, NULL when not fetched */
	const char *tpl_hash;       /**< wp_blueprint_hash() of tpl, NULL if not computed */
	int64_t now_ms;             /**< wall clock, ms since the epoch */
	long readiness_grace_ms;    /**< --sandbox-warm-pool-readiness-grace-period */
	long unschedulable_recheck_ms; /**< --sandbox-warm-pool-unschedulable-recheck-interval */
	long replenish_delay_ms;    /**< --sandbox-warm-pool-replenish-delay (0: off) */
	double max_refill_rate;     /**< --sandbox-warm-pool-max-refill-rate per s (0: off) */
	int max_batch;              /**< --sandbox-warm-pool-max-batch-size (>= 1) */
	double jitter;              /**< in [0, 1): fraction of the +50 % grace jitter */
	/** True when the member `uid` has a deletion pending (docs/api.md#expectations). */
	bool (*deletion_pending)(void *ud, const char *uid);
	/** True when Pod `ns`/`name` exists, is not terminating and its first
	 *  PodScheduled condition is False with reason Unschedulable (docs/api.md#stuck-and-unschedulable-members). */
	bool (*pod_unschedulable)(void *ud, const char *ns, const char *name);
	void *ud;                   /**< passed to the callbacks */
} wp_pool_input;

/** Class of a member (docs/api.md#pool-members). */
typedef enum {
	WP_MEMBER_ACTIVE = 0,       /**< counted in current */
	WP_MEMBER_TERMINATING,      /**< counted in total only */
	WP_MEMBER_IGNORED,          /**< not counted (foreign, deleting orphan, stale orphan) */
	WP_MEMBER_SKIPPED           /**< its write failed this pass: not counted */
} wp_member_class;

/** The write a member needs. */
typedef enum {
	WP_MEMBER_NONE = 0,
	WP_MEMBER_DELETE_STALE,     /**< docs/api.md#staleness-and-update-strategies (Recreate, or a stale orphan) */
	WP_MEMBER_SET_LAUNCH_TYPE,  /**< full Update with `body` */
	WP_MEMBER_ADOPT,            /**< full Update with `body` (controller ref + launch-type) */
	WP_MEMBER_DELETE_STUCK,     /**< docs/api.md#stuck-and-unschedulable-members */
	WP_MEMBER_DELETE_EXCESS     /**< docs/api.md#pool-sizing */
} wp_member_action;

/** One member and what the pass decided about it. */
typedef struct {
	const cJSON *obj;           /**< borrowed from the members array */
	const char *name, *uid;     /**< borrowed from obj */
	bool owned;                 /**< controlled by the pool */
	bool ready;                 /**< Ready condition True */
	int64_t created_ms;         /**< creationTimestamp, 0 when absent */
	wp_member_class cls;
	wp_member_action action;
	cJSON *body;                /**< owned; the object to Update, else NULL */
	bool unschedulable;         /**< held past the grace period (docs/api.md#stuck-and-unschedulable-members) */
	bool failed;                /**< set by the caller when the write failed */
	bool outdated;              /**< RollingUpdate: an active member of an older template */
	bool stuck;                 /**< not Ready past the grace period (held or deleted) */
} wp_pool_member;

/** Per-pool memory kept between passes (docs/api.md#stuck-and-unschedulable-members event state, docs/api.md#pool-sizing shaping). */
typedef struct {
	bool seen;                  /**< a baseline of the active count exists */
	int baseline;               /**< active count of the last pass (+ its creates) */
	int64_t hold_until_ms;      /**< replenish hold end; 0: none */
	bool tokens_init;
	double tokens;              /**< refill token bucket */
	int64_t tokens_at_ms;       /**< last refill time */
	bool not_progressing;       /**< the Warning event was emitted */
	int64_t handout_wait_ms;    /**< monotonic start of a refill waiting for claims; 0: none */
	bool roll_stalled;          /**< RollingUpdate stopped: members of the template were stuck, none Ready */
	char stall_hash[SBX_NAME_HASH_SIZE]; /**< the template's hash when it stopped */
} wp_pool_state;

/** Event transition of a pass. */
typedef enum {
	WP_POOL_EVENT_NONE = 0,
	WP_POOL_EVENT_NOT_PROGRESSING,  /**< Warning WarmPoolNotProgressing */
	WP_POOL_EVENT_PROGRESSING       /**< Normal WarmPoolProgressing */
} wp_pool_event;

/** Outcome of wp_pool_size(). Free with wp_pool_plan_clear(). */
typedef struct {
	int desired, current, terminating, ready, unschedulable;
	int updated;                /**< RollingUpdate: active members of the current template */
	bool rolling;               /**< RollingUpdate with outdated members left */
	int create;                 /**< Sandboxes to create now */
	int tokens_granted;         /**< tokens taken for `create` (refund if not created) */
	size_t *excess;             /**< indices into the members to delete as excess */
	size_t nexcess;
	bool gated;                 /**< creates/deletes wanted but the gate was closed */
	cJSON *status_patch;        /**< {"status": {...}} when the status changed, else NULL */
	long requeue_after_ms;      /**< 0: none */
	wp_pool_event event;
	char *event_note;           /**< the event's note, or NULL */
} wp_pool_plan;

/** NameHash of the pool name: the warm-pool-sandbox label value. */
void wp_pool_hash(const cJSON *pool, char out[SBX_NAME_HASH_SIZE]);

/** spec.replicas, nil (absent/null) => 1, negative => 0. */
int wp_pool_desired(const cJSON *pool);

/** spec.updateStrategy.type is "Recreate" (anything else is OnReplenish). */
bool wp_pool_recreate(const cJSON *pool);

/** spec.updateStrategy.type is "RollingUpdate" (docs/api.md#rolling-update). */
bool wp_pool_rolling(const cJSON *pool);

/**
 * maxSurge and maxUnavailable of spec.updateStrategy.rollingUpdate
 * resolved against `desired` (docs/api.md#rolling-update): an integer, or a
 * percentage string ("25%", above 100 % too), surge rounded up and
 * unavailable down, as a Deployment's, at most 1e9 (unavailable at most
 * `desired`); absent or malformed: 25 %. Both 0 gives a surge of 1.
 */
void wp_pool_rolling_limits(const cJSON *pool, int desired, int *max_surge, int *max_unavailable);

/**
 * Phase 1 (docs/api.md#pool-members, #staleness-and-update-strategies): classifies every Sandbox of `members` (a cJSON
 * array, borrowed; it must outlive the result) into a new array `*out` of
 * `*n` entries (free with wp_pool_members_free()). Members of another
 * namespace are ignored. The semantic verdict of an owned member whose
 * blueprint-hash label differs from the current hash is computed once per
 * old hash value and reused for the other members carrying it (docs/api.md#staleness-and-update-strategies).
 * @return 0 or ASB_ENOMEM.
 */
int wp_pool_classify(const wp_pool_input *in, const cJSON *members,
                               wp_pool_member **out, size_t *n);

/**
 * Applies the outcome of the phase-1 writes: a member with `failed` set
 * whose action was a delete-as-stale or an update becomes SKIPPED (counted
 * neither active nor terminating); its action is cleared.
 */
void wp_pool_classify_failed(wp_pool_member *m, size_t n);

/**
 * Phase 2 (docs/api.md#stuck-and-unschedulable-members): for ACTIVE members not Ready, with a creationTimestamp,
 * older than the grace period: unschedulable (held, active) or
 * DELETE_STUCK (terminating). `*grace_requeue_ms` receives the jittered
 * delay to the earliest grace deadline of members still inside it (0:
 * none). Returns the number of unschedulable members.
 */
int wp_pool_stuck(const wp_pool_input *in, wp_pool_member *m, size_t n,
                            long *grace_requeue_ms);

/**
 * Applies the outcome of the phase-2 deletes: a DELETE_STUCK member with
 * `failed` set is ACTIVE again.
 */
void wp_pool_stuck_failed(wp_pool_member *m, size_t n);

/**
 * Phase 3 (docs/api.md#stuck-and-unschedulable-members to #pool-sizing): sizing. `gate_open` is the expectations gate as
 * seen after the deletes of phases 1-2; `grace_requeue_ms` from phase 2;
 * `state` (in/out) the pool's memory. Fills `plan`. @return 0 or ASB_ENOMEM
 * (plan cleared).
 */
int wp_pool_size(const wp_pool_input *in, const wp_pool_member *m, size_t n,
                           bool gate_open, long grace_requeue_ms,
                           wp_pool_state *state, wp_pool_plan *plan);

/** Frees what `p` holds and zeroes it; NULL accepted. */
void wp_pool_plan_clear(wp_pool_plan *p);

/** Frees the members array of wp_pool_classify(); NULL accepted. */
void wp_pool_members_free(wp_pool_member *m, size_t n);

/**
 * The member Sandbox built for each create (docs/api.md#pool-sizing): generateName
 * "<pool>-", the pool's namespace, the pool and template labels (also on
 * the podTemplate), the sandbox-template-ref annotation, a deep copy of the
 * blueprint with the secure defaults applied, the safe-to-evict annotation
 * when `enable_eviction` and the template does not set that key, and a
 * controller ownerReference to the pool. A new object; NULL with the error
 * recorded: ASB_EINVAL (template without spec.podTemplate), ASB_ENOMEM.
 */
cJSON *wp_pool_member_new(const cJSON *pool, const cJSON *tpl, bool enable_eviction);

/** The note of WarmPoolNotProgressing (docs/api.md#stuck-and-unschedulable-members), a new string. */
char *wp_pool_not_progressing_note(int unschedulable, int desired, long grace_ms);

/**
 * Writes `ms` in Go's time.Duration notation ("5m0s", "30s", "1h0m0s",
 * "1.5s", "500ms", "0s") into `buf`; returns buf.
 */
char *wp_go_duration(long ms, char *buf, size_t cap);

#endif
