/*
 * reconcile.h - the decision of the Sandbox controller, without I/O.
 *
 * This is where the behaviour of docs/api.md#sandbox-controller lives. It is split the way
 * controller-runtime reconcilers are, but with the I/O pulled out so the
 * whole decision runs on JSON fixtures in unit tests:
 *
 *   1. sbx_plan_new(): from the observed state (the Sandbox, its Pods, the
 *      Pod named by the resolved pod name, the Service named like the
 *      Sandbox, its PVCs, the time) compute the ordered list of actions to
 *      take: create/patch/delete Pods, create/update/patch/delete the
 *      Service, create/patch PVCs, patch the Sandbox's annotations, delete
 *      the Sandbox. Each action carries the exact request body.
 *   2. sbx_plan_execute(): run the actions through caller-supplied
 *      callbacks (the real ones call the API server, see reconciler.h; the
 *      tests' ones pretend). Actions run in order; within a step (PVCs, Pod,
 *      Service, Sandbox) the first failure skips the rest of that step, as
 *      the upstream code returns at the first error of a step. A create
 *      answered AlreadyExists fetches the object and plans that step again
 *      once on the existing-object path; it never loops.
 *   3. sbx_plan_outcome(): from the observed state and what the actions
 *      did, compute the new `status` (conditions with their exact reasons
 *      and messages, podIPs, nodeName, selector, service, serviceFQDN),
 *      whether it must be written, the requeue delay and the error to
 *      return (docs/api.md#sandbox-reconcile steps 4-7, docs/api.md#sandbox-conditions, #sandbox-expiry).
 *
 * Times are inputs (milliseconds since the Unix epoch): nothing here reads
 * a clock. Objects are cJSON trees in the API's JSON form.
 *
 * Thread-safety: a plan is used by one thread at a time; distinct plans
 * are independent. Nothing here keeps global state.
 */
#ifndef SANDBOX_RECONCILE_H
#define SANDBOX_RECONCILE_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * What one reconcile pass observed. All pointers are borrowed and only
 * read during sbx_plan_new(), which copies what it keeps. Zero-initialise
 * (`sbx_observed obs = {0};`) so that fields added later default to
 * "absent".
 *
 * The `*_error` fields carry the message of a lookup that failed for
 * another reason than NotFound (the object is then unknown, not absent).
 */
typedef struct {
	/** Required: the Sandbox (v1beta1), with metadata.name, namespace, uid. */
	const cJSON *sandbox;
	/**
	 * JSON array of the Pods carrying the label
	 * agents.x-k8s.io/sandbox-name-hash = NameHash(sandbox name) (the cache
	 * index of docs/api.md#sandbox-watches); ownership is decided by UID, not by the label, and
	 * Pods of other namespaces are ignored (the index may span them). NULL:
	 * none.
	 */
	const cJSON *pods;
	/** Listing those Pods failed: the message; NULL when it worked. */
	const char *pods_error;
	/**
	 * The Pod named by the resolved pod name (annotation
	 * agents.x-k8s.io/pod-name if non-empty, else the Sandbox name), or
	 * NULL when it does not exist (docs/api.md#pod-management).
	 */
	const cJSON *pod;
	/** Getting that Pod failed (not NotFound): the message, else NULL. */
	const char *pod_error;
	/** The Service named like the Sandbox, or NULL when it does not exist. */
	const cJSON *service;
	/** Getting the Service failed (not NotFound): the message, else NULL. */
	const char *service_error;
	/**
	 * JSON array of the PVCs that exist among the claim names
	 * `<vct.metadata.name>-<sandbox name>` (docs/api.md#pvcs); others are absent. NULL:
	 * none.
	 */
	const cJSON *pvcs;
	/** Name of the PVC whose Get failed (not NotFound), or NULL. */
	const char *pvc_error_name;
	/** The message of that failure. */
	const char *pvc_error;
	/** Wall-clock time of the pass, milliseconds since the Unix epoch. */
	int64_t now_ms;
	/** DNS suffix of Service FQDNs; NULL: "cluster.local". */
	const char *cluster_domain;
	/**
	 * `--sandbox-write-behind-window` in milliseconds (docs/api.md#pod-metadata
	 * last bullet, docs/upstream.md#controller-flags). 0 (or less): every write is made at
	 * once. > 0: a metadata-only patch of an already-owned Pod (template
	 * labels/annotations changed) may wait and be coalesced with later
	 * edits, for at most min(window, SBX_WRITE_BEHIND_POD_MAX_MS) after it
	 * was first deferred. Adoption (an ownership change) is never deferred.
	 */
	long write_behind_window_ms;
	/**
	 * When an earlier pass first deferred this Sandbox's Pod metadata patch
	 * (ms since the epoch), as returned in
	 * sbx_outcome.pod_patch_deferred_since_ms; 0: nothing is pending.
	 */
	int64_t pod_patch_deferred_since_ms;
	/**
	 * Read only for an idle pass (SBX_PASS_IDLE) with idlePolicy Delete of
	 * a Sandbox whose controller reference names a SandboxClaim
	 * (sbx_idle_controlling_claim()): that claim, or NULL when it does not
	 * exist. The claim is deleted only when it is the one the reference
	 * names (same uid) and binds this Sandbox (`status.sandbox.name`): an
	 * owner reference is anyone's to write, so a Sandbox naming another's
	 * claim never gets that claim deleted (only itself).
	 */
	const cJSON *claim;
	/** Getting that claim failed (not NotFound): the message, else NULL. */
	const char *claim_error;
} sbx_observed;

/** Upper bound of a Pod metadata patch deferral, in ms (docs/api.md#pod-metadata). */
#define SBX_WRITE_BEHIND_POD_MAX_MS 1000

/** What a pass does, decided from the Sandbox alone (docs/api.md#sandbox-reconcile). */
typedef enum {
	/** The Sandbox is being deleted: nothing to do (GC removes children). */
	SBX_PASS_SKIP = 0,
	/** Not expired: PVCs, then Pod, then Service, then conditions. */
	SBX_PASS_RECONCILE = 1,
	/** Just expired: only mark Ready=False/SandboxExpired, requeue 1 ms. */
	SBX_PASS_EXPIRE = 2,
	/** Expired and marked: delete owned Pod and Service (and the Sandbox). */
	SBX_PASS_TEARDOWN = 3,
	/**
	 * Idle past its spec.idleTimeoutSeconds (sandbox/idle.h,
	 * docs/api.md#idle-suspend-and-resume): only the idle action. Suspend:
	 * a merge patch of the Sandbox, at the resourceVersion judged idle,
	 * setting spec.operatingMode Suspended and the idle-suspended-at
	 * annotation (the next pass deletes the Pod as for any suspend).
	 * Delete: the Sandbox (at that resourceVersion); or, for a Sandbox
	 * bound to the SandboxClaim that controls it (sbx_observed.claim), the
	 * suspend patch above (the precondition: activity since wins) then the
	 * claim (at its uid; the garbage collector then takes the Sandbox, and
	 * the claim does not make a new one).
	 */
	SBX_PASS_IDLE = 4
} sbx_pass;

/**
 * The pass `sandbox` gets at `now_ms` (ms since the epoch), as
 * sbx_plan_new() decides it (docs/api.md#sandbox-reconcile steps 1 and 4): SKIP when
 * metadata.deletionTimestamp is set; RECONCILE while spec.shutdownTime is
 * unset (or unparsable) or still ahead; once it has passed, EXPIRE until
 * the Ready condition's reason is SandboxExpired, then TEARDOWN; a
 * RECONCILE becomes IDLE when sbx_idle_due_ms() has passed. Lets the
 * caller read only what the pass needs (an expired Sandbox needs no PVCs).
 * A NULL sandbox gives SKIP. Pure; thread-safe.
 */
SBX_EXTERN sbx_pass sbx_pass_for(const cJSON *sandbox, int64_t now_ms);

/**
 * The reconcile steps, in execution order. Actions of a step stop at the
 * step's first failure; the other steps still run (docs/api.md#sandbox-reconcile step 5).
 */
typedef enum {
	SBX_STEP_PVC = 0,
	SBX_STEP_POD = 1,
	SBX_STEP_SERVICE = 2,
	SBX_STEP_SANDBOX = 3,   /**< delete of the Sandbox on expiry (docs/api.md#sandbox-expiry), idle actions */
	SBX_STEP_COUNT = 4
} sbx_step;

/** The object an action writes (all in the Sandbox's namespace). */
typedef enum {
	SBX_OBJ_SANDBOX = 0,
	SBX_OBJ_POD = 1,
	SBX_OBJ_SERVICE = 2,
	SBX_OBJ_PVC = 3,
	/** The SandboxClaim controlling the Sandbox (idle Delete only). */
	SBX_OBJ_CLAIM = 4
} sbx_object;

/** The API verb of an action. */
typedef enum {
	/** POST `body` with fieldManager sandbox-controller. */
	SBX_VERB_CREATE = 0,
	/** PUT `body` (a full object carrying its resourceVersion). */
	SBX_VERB_UPDATE = 1,
	/** PATCH `name` with the JSON merge patch (RFC 7386) `body`. */
	SBX_VERB_PATCH = 2,
	/** DELETE `name` (graceful, default propagation); `body` is NULL. */
	SBX_VERB_DELETE = 3
} sbx_verb;

/** Where an action stands. */
typedef enum {
	SBX_ACTION_PENDING = 0,
	SBX_ACTION_DONE = 1,     /**< it succeeded (or a NotFound was acceptable) */
	SBX_ACTION_FAILED = 2,   /**< it failed: see `rc` and `message` */
	SBX_ACTION_SKIPPED = 3   /**< an earlier action of its step failed */
} sbx_action_state;

/**
 * One write to the API server. Owned by its plan: the pointers stay valid
 * until the plan is freed or the step is planned again (AlreadyExists).
 */
typedef struct {
	sbx_step step;          /**< the step it belongs to */
	sbx_verb verb;
	sbx_object object;
	const char *name;       /**< object name; for SBX_OBJ_SANDBOX the Sandbox */
	const cJSON *body;      /**< request body (see sbx_verb), or NULL */
	/**
	 * What the action does, as the prefix of its error message:
	 * "<what>: <API error>" (e.g. "failed to delete pod").
	 */
	const char *what;
	/** A NotFound answer counts as success (deletes). */
	bool not_found_ok;
	/**
	 * DELETE: delete only this resourceVersion (a Conflict otherwise), or
	 * NULL. (A PATCH carries its precondition in its body.)
	 */
	const char *precondition_rv;
	/** DELETE: delete only the object with this uid, or NULL. */
	const char *precondition_uid;
	/* Filled in by sbx_plan_execute(): */
	sbx_action_state state;
	int rc;                 /**< 0 or the ASB_E* code of the failure */
	const char *message;    /**< FAILED: the API error message */
	const cJSON *result;    /**< DONE: the object the server returned, or NULL */
} sbx_action;

/** Opaque plan: the actions of one pass and what is needed to finish it. */
typedef struct sbx_plan sbx_plan;

/**
 * Decides the pass and its actions from `obs` (docs/api.md#sandbox-reconcile to #sandbox-expiry).
 *
 * @param out  receives the new plan; free it with sbx_plan_free().
 * @param obs  the observed state; copied, so it may be freed afterwards.
 * @return 0; ASB_EINVAL when `out`/`obs` or the Sandbox (or its
 *         metadata.name/namespace/uid) is missing; ASB_ENOMEM. The message is
 *         in asb_error_last().
 */
SBX_EXTERN int sbx_plan_new(sbx_plan **out, const sbx_observed *obs);

/**
 * The objects a plan may take from the caller instead of copying them
 * (sbx_plan_new_take()): each a cJSON tree the caller allocated and owns
 * whole (not part of another tree), or NULL; `pods` and `pvcs` arrays.
 */
typedef struct {
	cJSON *sandbox, *pods, *pod, *service, *pvcs;
} sbx_observed_objects;

/**
 * As sbx_plan_new(), but the plan takes the objects of `objs` (the same
 * trees `obs` points at) instead of copying them: a reconcile pass reads
 * fresh copies out of the caches and would otherwise copy each one again.
 * Ownership passes in every case, success or error: the caller must not
 * free them, and the fields of `*objs` are set to NULL. The Sandbox stays
 * readable through the caller's pointer until sbx_plan_free(); the
 * execution merges into it what its own writes of the Sandbox's metadata
 * set (the pod-name annotation), nothing else. The others may be replaced
 * by the execution (read them only through the plan). Errors as
 * sbx_plan_new().
 */
SBX_EXTERN int sbx_plan_new_take(sbx_plan **out, const sbx_observed *obs,
                                 sbx_observed_objects *objs);

/** Frees a plan and everything its actions point to; NULL accepted. */
SBX_EXTERN void sbx_plan_free(sbx_plan *plan);

/** The kind of pass the plan is for. */
SBX_EXTERN sbx_pass sbx_plan_pass(const sbx_plan *plan);

/** Number of actions currently in the plan. */
SBX_EXTERN size_t sbx_plan_action_count(const sbx_plan *plan);

/**
 * Action `i` (0-based, in execution order), or NULL when out of range.
 * Borrowed from the plan.
 */
SBX_EXTERN const sbx_action *sbx_plan_action(const sbx_plan *plan, size_t i);

/**
 * Performs one action against the API server, in namespace `ns`. Returns
 * 0 and may set `*result` to the object the server returned (taken by the
 * plan), or a negative ASB_E* code with the message recorded by
 * asb_error_set() (read back with asb_error_last()).
 */
typedef int (*sbx_apply_fn)(const sbx_action *action, const char *ns,
                            cJSON **result, void *userdata);

/**
 * Gets object `name` of kind `object` in `ns` (after a create answered
 * AlreadyExists). Returns 0 with `*out` set (taken by the plan), or a
 * ASB_E* code recorded like sbx_apply_fn.
 */
typedef int (*sbx_fetch_fn)(sbx_object object, const char *ns,
                            const char *name, cJSON **out, void *userdata);

/** The I/O callbacks of sbx_plan_execute(). */
typedef struct {
	sbx_apply_fn apply;      /**< required */
	sbx_fetch_fn fetch;      /**< NULL: AlreadyExists is a plain failure */
	void *userdata;          /**< passed to both */
} sbx_executor;

/**
 * Runs the pending actions in order through `ex`, recording each one's
 * state, code, message and result. After a failure the remaining actions
 * of the same step are SKIPPED. When a create fails with
 * ASB_EALREADYEXISTS, the object is fetched, the observed state updated,
 * and that step planned again (at most once per step), continuing on the
 * existing-object path (docs/api.md#pod-management "AlreadyExists ⇒ Get the existing Pod"): the
 * step's actions not yet run (the colliding create included) are replaced
 * by the new ones, those already done stay in the plan as history
 * (indices shift; pointers to replaced actions become invalid). If the
 * fetch fails, the create fails with the fetch's code and message.
 * Successful Sandbox annotation patches are applied to the plan's copy of
 * the Sandbox, and created PVCs added to its observed PVCs.
 *
 * @return 0 (action failures are recorded, not returned), ASB_EINVAL (no
 *         apply callback) or ASB_ENOMEM.
 */
SBX_EXTERN int sbx_plan_execute(sbx_plan *plan, const sbx_executor *ex);

/** What a pass ends with. Release with sbx_outcome_dispose(). */
typedef struct {
	/**
	 * The new `status` object, or NULL when the pass computes none (the
	 * Sandbox is being deleted, or it was deleted by shutdownPolicy).
	 */
	cJSON *status;
	/**
	 * True when `status` must be written: it differs semantically from the
	 * Sandbox's current status, and the difference is not only `nodeName`
	 * while Ready is not True (docs/api.md#sandbox-reconcile step 6).
	 */
	bool write_status;
	/** > 0: reconcile again after this many milliseconds. */
	long requeue_after_ms;
	/**
	 * The errors to return (docs/api.md#sandbox-reconcile step 7), joined with "\n", or NULL. The
	 * MultiplePods error is not among them (it is reported through the
	 * Ready condition and an event instead).
	 */
	char *error;
	/** ASB_E* code of the first failed action, ASB_ERROR for decided errors, or 0. */
	int error_code;
	/**
	 * When Ready turns to MultiplePods on this pass: the note of the
	 * Warning event `MultiplePods` (action `Reconciling`, docs/api.md#sandbox-events). NULL
	 * otherwise.
	 */
	char *multiple_pods_event;
	/**
	 * Write-behind bookkeeping (sbx_observed.write_behind_window_ms): > 0
	 * when this pass deferred the Pod metadata patch, pending since that
	 * time (ms since the epoch): the caller keeps it and passes it back in
	 * the next pass's sbx_observed.pod_patch_deferred_since_ms; on an
	 * error-free pass `requeue_after_ms` is then at most the time left of
	 * the deferral (docs/api.md#sandbox-reconcile step 5). 0: nothing pending, forget any earlier
	 * value.
	 */
	int64_t pod_patch_deferred_since_ms;
	/**
	 * SBX_PASS_IDLE whose action succeeded: the note of the Normal event
	 * `IdleTimeout` (SBX_REASON_IDLE_TIMEOUT) on the Sandbox, its action in
	 * `idle_event_action` ("Suspend" or "Delete"). NULL otherwise.
	 */
	char *idle_event;
	const char *idle_event_action;
} sbx_outcome;

/**
 * Computes the outcome of the pass from the observed state and what the
 * executed actions did (call after sbx_plan_execute(); an action still
 * PENDING counts as succeeded without an answer from the server, so the
 * outcome of a plan that was not executed is what it would be if every
 * action worked).
 *
 * @param now_ms  wall-clock time after the actions ran (ms since the
 *                epoch): expiry is checked again with it (docs/api.md#sandbox-reconcile step 5), and
 *                it stamps condition lastTransitionTime.
 * @param out     filled in; zeroed first.
 * @return 0 or ASB_ENOMEM.
 */
SBX_EXTERN int sbx_plan_outcome(sbx_plan *plan, int64_t now_ms,
                                sbx_outcome *out);

/** Frees what `o` holds and zeroes it; NULL accepted. */
SBX_EXTERN void sbx_outcome_dispose(sbx_outcome *o);

/**
 * Semantic equality of two Sandbox `status` objects (NULL: empty): absent
 * fields equal empty ones ("", [], {}, 0), lists compare in order
 * (docs/api.md#write-primitives-and-equality "semantic equality"). Pure; thread-safe.
 */
SBX_EXTERN bool sbx_status_equal(const cJSON *a, const cJSON *b);

/**
 * Whether `new_status` must be written over `old_status` (docs/api.md#sandbox-reconcile step 6):
 * false when they are semantically equal, and false when they differ only
 * in `nodeName` while `new_status`'s Ready condition is not True (the node
 * name then rides along with the next write). Pure; thread-safe.
 */
SBX_EXTERN bool sbx_status_needs_write(const cJSON *old_status,
                                       const cJSON *new_status);

/**
 * Whether a Sandbox with `status` (NULL: none yet) is coming up: no Ready
 * condition yet, or Ready False with reason DependenciesNotReady (its Pod
 * is not Ready yet; not an error, not suspended, not expired). The
 * reconciler may hold a status write between two such statuses for
 * `--sandbox-status-coalesce-window` (docs/api.md#sandbox-reconcile step 6).
 * Pure; thread-safe.
 */
SBX_EXTERN bool sbx_status_coming_up(const cJSON *status);

/**
 * The JSON merge patch `{"status": {...}}` turning `old_status` into
 * `new_status` for the status subresource: changed and new fields set,
 * vanished ones set to null, lists replaced whole. Caller frees with
 * cJSON_Delete(). NULL on allocation failure.
 */
SBX_EXTERN cJSON *sbx_status_patch(const cJSON *old_status,
                                   const cJSON *new_status);

#ifdef __cplusplus
}
#endif
#endif
