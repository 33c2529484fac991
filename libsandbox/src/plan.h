/*
 * plan.h - the inside of an sbx_plan, shared by the files that fill it:
 * plan.c (life cycle, pass decision, execution), plan_pvc.c, plan_pod.c,
 * plan_service.c (one step each) and status.c (the outcome).
 *
 * A plan keeps its own copy of the observed state, because executing it
 * changes what is known: a Sandbox annotation patch that succeeded is
 * applied to the copy, a created PVC joins the observed PVCs, and an
 * object fetched after AlreadyExists replaces the observed one before its
 * step is planned again.
 */
#ifndef SBX_PLAN_H
#define SBX_PLAN_H

#include "sandbox/reconcile.h"
#include "sandbox/namehash.h"
#include "sandbox/idle.h"
#include "jsonutil.h"

/** spec.service: unset, true or false (docs/api.md#sandbox-spec). */
typedef enum { SVC_UNSET = 0, SVC_TRUE = 1, SVC_FALSE = 2 } svc_mode;

/** What the Service step does to status.service / status.serviceFQDN. */
typedef enum {
	SVC_STATUS_KEEP = 0,   /* leave the previous values (error paths) */
	SVC_STATUS_CLEAR = 1,  /* no Service to report */
	SVC_STATUS_SET = 2     /* an owned Service exists (or was just made) */
} svc_status;

/** One action and the memory behind its public view. */
typedef struct {
	sbx_action pub;       /* what sbx_plan_action() hands out */
	char *name;           /* pub.name */
	cJSON *body;          /* pub.body */
	char *message;        /* pub.message */
	cJSON *result;        /* pub.result */
	bool yields_pod;      /* its result is the pod the status reads */
	bool keeps_pod;       /* a failure still leaves the pod (Suspend delete) */
	bool sets_annotation; /* Sandbox patch: apply body to the copy when done */
	char *precondition;   /* pub.precondition_rv */
	char *precondition_uid; /* pub.precondition_uid */
	bool gone;            /* done by a NotFound (not_found_ok) */
} plan_action;

struct sbx_plan {
	/* Observed state, owned copies (see above). */
	cJSON *sandbox;
	cJSON *pods;          /* array, never NULL */
	cJSON *pod;           /* the Pod by resolved name, or NULL */
	cJSON *service;       /* or NULL */
	cJSON *pvcs;          /* array, never NULL */
	cJSON *claim;         /* sbx_observed.claim, or NULL */
	char *claim_error;
	char *pods_error, *pod_error, *service_error;
	char *pvc_error_name, *pvc_error;
	int64_t now_ms;
	char *cluster_domain;

	/* Facts about the Sandbox, fixed for the pass. */
	char *ns, *name, *uid;
	char hash[SBX_NAME_HASH_SIZE];
	int64_t generation;
	bool suspended;
	svc_mode service_mode;
	bool has_shutdown;
	int64_t shutdown_ms;
	bool policy_delete;
	sbx_idle_policy idle;  /* spec.idleTimeoutSeconds, spec.idlePolicy */
	int64_t idle_due_ms;   /* sbx_idle_due_ms(), 0: idleness does not apply */
	int64_t idle_last_ms;  /* sbx_idle_last_activity_ms() */
	bool idle_claim;       /* the idle Delete goes through the claim */
	sbx_pass pass;

	/* The actions in execution order; a step's actions are contiguous. */
	plan_action **actions;
	size_t n_actions, cap_actions;

	/* Errors decided while planning, per step (reported when the step's
	 * actions succeed), and whether the step was planned a second time. */
	char *step_error[SBX_STEP_COUNT];
	bool replanned[SBX_STEP_COUNT];

	/* Pod step: the pod the status reads, and its ownership afterwards. */
	cJSON *pod_result;
	k8s_owner_class pod_owner;
	bool multiple_pods;   /* step_error[POD] is the MultiplePods error */
	/* Write-behind: the window, the pending deferral as observed, and what
	 * this pass decided (since > 0: the Pod patch waits, `left` ms more). */
	long write_behind_window_ms;
	int64_t deferred_since_in;
	int64_t deferred_since;
	long deferred_left_ms;

	/* Service step. */
	svc_status svc_after;       /* when the step succeeds */
	bool svc_clear_on_failure;  /* spec.service false: cleared in all cases */

	/* Sticky allocation failure while planning. */
	bool oom;
};

/*
 * Planning helpers (plan.c). They record allocation failures in p->oom
 * rather than returning them, so the step code reads straight through.
 */

/* Appends an action of `step` (body taken) and returns it, or NULL (oom). */
plan_action *plan_add(sbx_plan *p, sbx_step step, sbx_verb verb,
                      sbx_object object, const char *name, cJSON *body,
                      const char *what);

/* Sets the step's decided error (printf-style). */
void plan_fail(sbx_plan *p, sbx_step step, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Adds a Sandbox merge patch setting annotation `key` to `value` (NULL:
 * removing it), in the Pod step. */
void plan_sandbox_annotation(sbx_plan *p, const char *key, const char *value);
/* The same, failing with `what` (static) as its message prefix. */
void plan_sandbox_annotation_what(sbx_plan *p, const char *key, const char *value,
                                  const char *what);

/* True when an unowned object may be adopted (label adoptable=true or the
 * name-hash label equal to this Sandbox's hash). */
bool plan_adoptable(const sbx_plan *p, const cJSON *obj);

/* "<what> "<n>" is owned by <Kind>/<Name> (UID: <uid>), not by sandbox
 * "<s>"" for a foreign-controlled object (what: "pod", "service", "PVC"). */
void plan_fail_owned_by_other(sbx_plan *p, sbx_step step, const char *what,
                              const cJSON *obj);

/* The refusal to adopt an unowned object lacking both labels. */
void plan_fail_not_adoptable(sbx_plan *p, sbx_step step, const char *what,
                             const char *name);

/* Marks an allocation failure when `ok` is false; returns `ok`. */
static inline bool plan_ok(sbx_plan *p, bool ok)
{
	if (!ok)
		p->oom = true;
	return ok;
}

/* The steps (plan_pvc.c, plan_pod.c, plan_service.c). */
void plan_pvcs(sbx_plan *p);
void plan_pod(sbx_plan *p);
void plan_pod_teardown(sbx_plan *p);
void plan_service(sbx_plan *p);
void plan_service_teardown(sbx_plan *p);

/* The idle action of SBX_PASS_IDLE, the removal of the idle-suspended-at
 * annotation of a running Sandbox (Pod step), and the note of the
 * IdleTimeout event (NULL on allocation failure) (plan_idle.c). */
void plan_idle(sbx_plan *p);
void plan_idle_annotation(sbx_plan *p);
char *plan_idle_event(const sbx_plan *p);

/* The pod spec of the Sandbox's template (may be NULL). */
const cJSON *plan_pod_spec(const sbx_plan *p);

#endif
