/*
 * status.c - the outcome of a pass: the new Sandbox status
 * (docs/api.md#sandbox-status; the Pod's part, #pod-management; the
 * conditions, #sandbox-conditions; the service fields,
 * #service-management; expiry, #sandbox-expiry), whether to write it
 * (docs/api.md#sandbox-reconcile step 6), the requeue delay and the errors
 * to return (step 7).
 *
 * The new status starts as a copy of the old one and is edited field by
 * field, as upstream mutates the object in place: fields a pass does not
 * touch (a sticky selector, the service fields on an error path) keep their
 * value. Conditions follow metav1 "set condition" semantics: an existing
 * condition keeps its lastTransitionTime unless its status flips.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "plan.h"
#include "k8s/common.h"
#include "k8s/object.h"

/* Requeue delay after marking expiry (two-pass teardown), and the floor of
 * the delay until shutdownTime (docs/api.md#sandbox-reconcile steps 4 and 5). */
#define EXPIRE_REQUEUE_MS 1
/* After a Conflict on the idle action: judge again from a newer version. */
#define IDLE_CONFLICT_REQUEUE_MS 100
#define MIN_SHUTDOWN_REQUEUE_MS 2000

/* ---- conditions ---- */

static cJSON *find_condition(const cJSON *status, const char *type)
{
	cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions"))
		if (ju_str_eq(ju_str(c, "type"), type))
			return c;
	return NULL;
}

/* metav1 SetStatusCondition. Returns false on allocation failure. */
static bool set_condition(cJSON *status, const char *type, const char *cstatus,
                          const char *reason, const char *message,
                          int64_t generation, int64_t now_ms)
{
	char ts[32];
	k8s_time_format(now_ms, ts, sizeof(ts));
	cJSON *c = find_condition(status, type);
	if (!c) {
		cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
		if (!cJSON_IsArray(conds)) {
			conds = cJSON_CreateArray();
			if (!ju_set(status, "conditions", conds))
				return false;
		}
		c = cJSON_CreateObject();
		if (!c || !cJSON_AddItemToArray(conds, c)) {
			cJSON_Delete(c);
			return false;
		}
		if (!ju_set_str(c, "type", type))
			return false;
	}
	bool ok = true;
	if (!ju_str_eq(ju_str(c, "status"), cstatus) || ju_empty(ju_str(c, "lastTransitionTime")))
		ok = ju_set_str(c, "lastTransitionTime", ts);
	ok = ok && ju_set_str(c, "status", cstatus);
	if (generation)
		ok = ok && ju_set(c, "observedGeneration", cJSON_CreateNumber((double)generation));
	else
		cJSON_DeleteItemFromObjectCaseSensitive(c, "observedGeneration");
	return ok && ju_set_str(c, "reason", reason) &&
	       ju_set_str(c, "message", message);
}

static void remove_condition(cJSON *status, const char *type)
{
	cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
	cJSON *c = find_condition(status, type);
	if (c)
		cJSON_Delete(cJSON_DetachItemViaPointer(conds, c));
}

static bool set_expired(const sbx_plan *p, cJSON *status, int64_t now_ms)
{
	remove_condition(status, SBX_CONDITION_POD_SCHEDULED);
	return set_condition(status, SBX_CONDITION_READY, "False",
	                     SBX_REASON_SANDBOX_EXPIRED, "Sandbox has expired",
	                     p->generation, now_ms);
}

/* ---- what the steps did ---- */

/* The result of one step after execution. */
typedef struct {
	char *error;              /* "<what>: <message>" or the decided error */
	int rc;                   /* the failed action's code, or ASB_ERROR */
	const plan_action *failed;/* the failed action, or NULL */
} step_result;

static bool read_step(const sbx_plan *p, sbx_step step, step_result *r)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < p->n_actions; i++) {
		const plan_action *a = p->actions[i];
		if (a->pub.step == step && a->pub.state == SBX_ACTION_FAILED) {
			r->failed = a;
			r->rc = a->pub.rc ? a->pub.rc : ASB_ERROR;
			r->error = ju_printf("%s: %s", a->pub.what, ju_nz(a->pub.message));
			return r->error != NULL;
		}
	}
	if (p->step_error[step]) {
		r->rc = ASB_ERROR;
		r->error = strdup(p->step_error[step]);
		return r->error != NULL;
	}
	return true;
}

/* The pod the status reads after the Pod step, or NULL. */
static const cJSON *pod_after(const sbx_plan *p, const step_result *pod_step)
{
	if (pod_step->failed)
		return pod_step->failed->keeps_pod ? p->pod_result : NULL;
	if (!p->pod_result)
		return NULL;
	/* Prefer what the server answered to our create or patch. */
	for (size_t i = 0; i < p->n_actions; i++) {
		const plan_action *a = p->actions[i];
		if (a->yields_pod && a->pub.state == SBX_ACTION_DONE && a->result)
			return a->result;
	}
	return p->pod_result;
}

/* Joins the non-NULL errors with "\n" (Go's errors.Join). */
static char *join_errors(char *const *errs, size_t n)
{
	strlist l = { 0 };
	for (size_t i = 0; i < n; i++)
		if (errs[i] && !strlist_add(&l, errs[i])) {
			strlist_free(&l);
			return NULL;
		}
	char *s = l.len ? strlist_join(&l, '\n') : NULL;
	strlist_free(&l);
	return s;
}

/* ---- pod-derived fields and conditions ---- */

static const char *pod_condition_status(const cJSON *pod, const char *type,
                                        const cJSON **cond)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(pod, "status.conditions"))
		if (ju_str_eq(ju_str(c, "type"), type)) {
			if (cond)
				*cond = c;
			return ju_str(c, "status");
		}
	return NULL;
}

/* status.podIPs from pod.status.podIPs[].ip; NULL when there are none. */
static cJSON *pod_ips(const cJSON *pod, bool *ok)
{
	cJSON *ips = NULL;
	const cJSON *e;
	*ok = true;
	cJSON_ArrayForEach(e, k8s_obj_at(pod, "status.podIPs")) {
		const char *ip = ju_str(e, "ip");
		if (ju_empty(ip))
			continue;
		if (!ips && !(ips = cJSON_CreateArray()))
			break;
		if (!cJSON_AddItemToArray(ips, cJSON_CreateString(ip)))
			break;
	}
	if (e) {
		*ok = false;
		cJSON_Delete(ips);
		return NULL;
	}
	return ips;
}

static bool put_or_clear(cJSON *status, const char *key, const char *value)
{
	if (ju_empty(value)) {
		cJSON_DeleteItemFromObjectCaseSensitive(status, key);
		return true;
	}
	return ju_set_str(status, key, value);
}

/* podIPs, nodeName and selector (docs/api.md#pod-management end, docs/api.md#sandbox-status). */
static bool set_pod_fields(const sbx_plan *p, cJSON *status, const cJSON *pod,
                           bool owned)
{
	bool ok = true;
	if (pod) {
		char *sel = ju_printf(SBX_LABEL_NAME_HASH "=%s", p->hash);
		ok = sel && ju_set_str(status, "selector", sel);
		free(sel);
	}
	if (pod && owned) {
		cJSON *ips = pod_ips(pod, &ok);
		if (ips)
			ok = ok && ju_set(status, "podIPs", ips);
		else
			cJSON_DeleteItemFromObjectCaseSensitive(status, "podIPs");
		return ok && put_or_clear(status, "nodeName",
		                          k8s_obj_str(pod, "spec.nodeName"));
	}
	cJSON_DeleteItemFromObjectCaseSensitive(status, "podIPs");
	cJSON_DeleteItemFromObjectCaseSensitive(status, "nodeName");
	return ok;
}

/* service and serviceFQDN (docs/api.md#service-management). */
static bool set_service_fields(const sbx_plan *p, cJSON *status,
                               svc_status what)
{
	if (what == SVC_STATUS_KEEP)
		return true;
	if (what == SVC_STATUS_CLEAR) {
		cJSON_DeleteItemFromObjectCaseSensitive(status, "service");
		cJSON_DeleteItemFromObjectCaseSensitive(status, "serviceFQDN");
		return true;
	}
	char *fqdn = ju_printf("%s.%s.svc.%s", p->name, p->ns, p->cluster_domain);
	bool ok = fqdn && ju_set_str(status, "service", p->name) &&
	          ju_set_str(status, "serviceFQDN", fqdn);
	free(fqdn);
	return ok;
}

/* The Ready message and verdict of docs/api.md#sandbox-conditions rule 4. */
static char *dependencies_message(const sbx_plan *p, const cJSON *pod,
                                  bool svc_exists, bool *ready)
{
	const char *msg;
	bool pod_ready = false;
	char *owned_msg = NULL;
	const char *phase = k8s_obj_str(pod, "status.phase");
	if (!pod) {
		msg = "Pod does not exist";
	} else if (!ju_str_eq(phase, "Running")) {
		owned_msg = ju_printf("Pod exists with phase: %s", ju_nz(phase));
		if (!owned_msg)
			return NULL;
		msg = owned_msg;
	} else if (!ju_str_eq(pod_condition_status(pod, "Ready", NULL), "True")) {
		msg = "Pod is Running but not Ready";
	} else if (!cJSON_GetArraySize(k8s_obj_at(pod, "status.podIPs"))) {
		msg = "Pod is Ready but has no podIPs yet";
	} else {
		msg = "Pod is Ready";
		pod_ready = true;
	}
	bool required = p->service_mode == SVC_TRUE ||
	                (p->service_mode == SVC_UNSET && svc_exists);
	*ready = pod_ready && (!required || svc_exists);
	char *out = ju_printf("%s%s", msg, !required ? ""
	                      : svc_exists ? "; Service Exists"
	                                   : "; Service does not exist");
	free(owned_msg);
	return out;
}

/* The four conditions of a non-expired pass (docs/api.md#sandbox-conditions). */
static bool set_conditions(const sbx_plan *p, cJSON *st, int64_t now,
                           const cJSON *pod, bool owned, bool pod_error,
                           bool multiple, char *const *errs, size_t n_errs,
                           const char *multiple_text, bool svc_exists)
{
	int64_t g = p->generation;
	bool ok;

	/* Suspended: always present. */
	if (!p->suspended)
		ok = set_condition(st, SBX_CONDITION_SUSPENDED, "False",
		                   SBX_REASON_NOT_SUSPENDED,
		                   "Sandbox is not suspended", g, now);
	else if (pod_error && !pod)
		ok = set_condition(st, SBX_CONDITION_SUSPENDED, "Unknown",
		                   SBX_REASON_POD_STATE_UNKNOWN,
		                   "Pod state is unknown. Sandbox suspension cannot be confirmed",
		                   g, now);
	else if (!pod && k8s_obj_annotation(p->sandbox, SBX_ANNOTATION_IDLE_SUSPENDED_AT))
		/* ours: suspended for idleness (docs/api.md#idle-suspend-and-resume) */
		ok = set_condition(st, SBX_CONDITION_SUSPENDED, "True",
		                   SBX_REASON_IDLE_TIMEOUT,
		                   "Sandbox was idle past its idleTimeoutSeconds. Pod has been "
		                   "terminated. Sandbox is suspended", g, now);
	else if (!pod)
		ok = set_condition(st, SBX_CONDITION_SUSPENDED, "True",
		                   SBX_REASON_POD_TERMINATED,
		                   "Pod has been terminated. Sandbox is suspended", g, now);
	else if (!owned)
		ok = set_condition(st, SBX_CONDITION_SUSPENDED, "False",
		                   SBX_REASON_POD_NOT_OWNED,
		                   "Refused to delete pod because it is not owned by this sandbox",
		                   g, now);
	else
		ok = set_condition(st, SBX_CONDITION_SUSPENDED, "False",
		                   SBX_REASON_POD_TERMINATING,
		                   "Pod is terminating. Sandbox is suspending", g, now);

	/* Finished: only while an owned pod is in a terminal phase. */
	const char *phase = k8s_obj_str(pod, "status.phase");
	if (pod && owned && ju_str_eq(phase, "Succeeded"))
		ok = ok && set_condition(st, SBX_CONDITION_FINISHED, "True",
		                         SBX_REASON_POD_SUCCEEDED,
		                         "Pod completed successfully", g, now);
	else if (pod && owned && ju_str_eq(phase, "Failed"))
		ok = ok && set_condition(st, SBX_CONDITION_FINISHED, "True",
		                         SBX_REASON_POD_FAILED, "Pod failed", g, now);
	else
		remove_condition(st, SBX_CONDITION_FINISHED);

	/* PodScheduled: only while an owned pod exists. */
	const cJSON *sc = NULL;
	if (pod_error && !pod) {
		ok = ok && set_condition(st, SBX_CONDITION_POD_SCHEDULED, "Unknown",
		                         SBX_REASON_POD_SCHEDULING_UNKNOWN,
		                         "Pod state is unknown. Pod scheduling cannot be determined",
		                         g, now);
	} else if (!pod || !owned) {
		remove_condition(st, SBX_CONDITION_POD_SCHEDULED);
	} else if (pod_condition_status(pod, "PodScheduled", &sc), sc) {
		const char *s = ju_nz(ju_str(sc, "status"));
		const char *reason = ju_str(sc, "reason");
		if (ju_empty(reason))
			reason = strcmp(s, "True") == 0 ? SBX_REASON_POD_SCHEDULED
			                                : SBX_REASON_POD_SCHEDULING_UNKNOWN;
		ok = ok && set_condition(st, SBX_CONDITION_POD_SCHEDULED, s, reason,
		                         ju_nz(ju_str(sc, "message")), g, now);
	} else {
		ok = ok && set_condition(st, SBX_CONDITION_POD_SCHEDULED, "Unknown",
		                         SBX_REASON_POD_SCHEDULING_UNKNOWN,
		                         "Pod has not reported a PodScheduled condition yet",
		                         g, now);
	}

	/* Ready: always present; first match wins. */
	char *all = join_errors(errs, n_errs);
	if (multiple) {
		ok = ok && set_condition(st, SBX_CONDITION_READY, "False",
		                         SBX_REASON_MULTIPLE_PODS, multiple_text, g, now);
	} else if (all) {
		char *msg = ju_printf("Error seen: %s", all);
		ok = ok && msg && set_condition(st, SBX_CONDITION_READY, "False",
		                                SBX_REASON_RECONCILER_ERROR, msg, g, now);
		free(msg);
	} else if (p->suspended) {
		ok = ok && set_condition(st, SBX_CONDITION_READY, "False",
		                         SBX_REASON_SANDBOX_SUSPENDED,
		                         pod ? "Sandbox is suspending" : "Sandbox is suspended",
		                         g, now);
	} else if (pod && ju_str_eq(phase, "Succeeded")) {
		ok = ok && set_condition(st, SBX_CONDITION_READY, "False",
		                         SBX_REASON_POD_SUCCEEDED,
		                         "Pod completed successfully", g, now);
	} else if (pod && ju_str_eq(phase, "Failed")) {
		ok = ok && set_condition(st, SBX_CONDITION_READY, "False",
		                         SBX_REASON_POD_FAILED, "Pod failed", g, now);
	} else {
		bool ready = false;
		char *msg = dependencies_message(p, pod, svc_exists, &ready);
		ok = ok && msg && set_condition(st, SBX_CONDITION_READY,
		                                ready ? "True" : "False",
		                                ready ? SBX_REASON_DEPENDENCIES_READY
		                                      : SBX_REASON_DEPENDENCIES_NOT_READY,
		                                msg, g, now);
		free(msg);
	}
	free(all);
	return ok;
}

/* ---- the outcome ---- */

static cJSON *status_copy(const sbx_plan *p)
{
	const cJSON *old = cJSON_GetObjectItemCaseSensitive(p->sandbox, "status");
	return cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
}

static const char *ready_reason(const cJSON *status)
{
	return ju_str(find_condition(status, SBX_CONDITION_READY), "reason");
}

static int outcome_reconcile(sbx_plan *p, int64_t now, sbx_outcome *out)
{
	step_result r[SBX_STEP_COUNT];
	bool ok = true;
	for (int s = 0; s < SBX_STEP_COUNT; s++)
		ok = read_step(p, (sbx_step)s, &r[s]) && ok;

	const cJSON *pod = pod_after(p, &r[SBX_STEP_POD]);
	bool owned = pod && p->pod_owner == K8S_OWNER_THIS;
	/* MultiplePods is reported by condition and event, not returned. */
	bool multiple = p->multiple_pods && !r[SBX_STEP_POD].failed;

	svc_status svc = p->svc_after;
	if (r[SBX_STEP_SERVICE].error)
		svc = r[SBX_STEP_SERVICE].failed && p->svc_clear_on_failure
		      ? SVC_STATUS_CLEAR : SVC_STATUS_KEEP;

	cJSON *st = status_copy(p);
	ok = ok && st && set_pod_fields(p, st, pod, owned) &&
	     set_service_fields(p, st, svc);
	char *errs[3] = { r[SBX_STEP_PVC].error, r[SBX_STEP_POD].error,
	                  r[SBX_STEP_SERVICE].error };
	ok = ok && set_conditions(p, st, now, pod, owned,
	                          r[SBX_STEP_POD].error != NULL, multiple, errs, 3,
	                          r[SBX_STEP_POD].error, svc == SVC_STATUS_SET);

	/* Expired while the pass ran (docs/api.md#sandbox-reconcile step 5)? */
	if (p->has_shutdown && now >= p->shutdown_ms) {
		ok = ok && set_expired(p, st, now);
		out->requeue_after_ms = EXPIRE_REQUEUE_MS;
	} else if (p->has_shutdown) {
		int64_t left = p->shutdown_ms - now;
		out->requeue_after_ms = left > MIN_SHUTDOWN_REQUEUE_MS
		                        ? (long)left : MIN_SHUTDOWN_REQUEUE_MS;
	}

	if (ok && multiple &&
	    !ju_str_eq(ready_reason(cJSON_GetObjectItemCaseSensitive(p->sandbox, "status")),
	               SBX_REASON_MULTIPLE_PODS)) {
		out->multiple_pods_event = strdup(r[SBX_STEP_POD].error);
		ok = out->multiple_pods_event != NULL;
	}
	char *returned[3] = { errs[0], multiple ? NULL : errs[1], errs[2] };
	int rcs[3] = { r[SBX_STEP_PVC].rc, r[SBX_STEP_POD].rc, r[SBX_STEP_SERVICE].rc };
	for (int i = 0; i < 3; i++)
		if (returned[i] && !out->error_code)
			out->error_code = rcs[i];
	if (ok && out->error_code) {
		out->error = join_errors(returned, 3);
		ok = out->error != NULL;
	}
	/* Idleness: come back when it becomes due (an activity write wakes
	 * the Sandbox earlier and moves it). */
	if (p->idle_due_ms > 0 && !out->error_code) {
		int64_t left = p->idle_due_ms - now;
		long idle_ms = left > 1 ? (left < LONG_MAX ? (long)left : LONG_MAX) : 1;
		if (out->requeue_after_ms <= 0 || idle_ms < out->requeue_after_ms)
			out->requeue_after_ms = idle_ms;
	}
	/* A deferred Pod patch: come back when its wait is over (docs/api.md#sandbox-reconcile step 5),
	 * unless an error already schedules a retry. */
	out->pod_patch_deferred_since_ms = p->deferred_since;
	if (p->deferred_since && !out->error_code &&
	    (out->requeue_after_ms <= 0 || p->deferred_left_ms < out->requeue_after_ms))
		out->requeue_after_ms = p->deferred_left_ms;
	for (int s = 0; s < SBX_STEP_COUNT; s++)
		free(r[s].error);
	out->status = st;
	return ok ? 0 : ASB_ENOMEM;
}

static int outcome_teardown(sbx_plan *p, int64_t now, sbx_outcome *out)
{
	step_result r[SBX_STEP_COUNT];
	bool ok = true;
	for (int s = 0; s < SBX_STEP_COUNT; s++)
		ok = read_step(p, (sbx_step)s, &r[s]) && ok;
	char *errs[3] = { r[SBX_STEP_POD].error, r[SBX_STEP_SERVICE].error,
	                  r[SBX_STEP_SANDBOX].error };
	bool deleted = false;
	if (p->policy_delete) {
		/* Deleted (or already gone): no status, and earlier errors drop. */
		deleted = !r[SBX_STEP_SANDBOX].error;
		for (size_t i = 0; i < p->n_actions; i++)
			if (p->actions[i]->pub.step == SBX_STEP_SANDBOX &&
			    p->actions[i]->pub.state != SBX_ACTION_DONE)
				deleted = false;
	}
	if (!deleted) {
		for (int i = 0; i < 3; i++)
			if (errs[i] && !out->error_code)
				out->error_code = r[i == 0 ? SBX_STEP_POD
				                    : i == 1 ? SBX_STEP_SERVICE
				                             : SBX_STEP_SANDBOX].rc;
		if (out->error_code) {
			out->error = join_errors(errs, 3);
			ok = ok && out->error;
		} else if (!p->policy_delete) {
			/* Retain, no error: keep only the conditions, re-assert expiry. */
			cJSON *st = cJSON_CreateObject();
			const cJSON *conds = k8s_obj_at(p->sandbox, "status.conditions");
			ok = ok && st && (!conds || ju_set(st, "conditions",
			                                   cJSON_Duplicate(conds, true))) &&
			     set_expired(p, st, now);
			out->status = st;
		}
	}
	for (int s = 0; s < SBX_STEP_COUNT; s++)
		free(r[s].error);
	return ok ? 0 : ASB_ENOMEM;
}

/* SBX_PASS_IDLE: no status; the event when the action worked, the error
 * when it did not. A Conflict (the Sandbox moved since it was judged idle,
 * usually activity) is no error: it is judged again shortly. */
static int outcome_idle(sbx_plan *p, sbx_outcome *out)
{
	step_result r;
	if (!read_step(p, SBX_STEP_SANDBOX, &r))
		return ASB_ENOMEM;
	int rc = 0;
	bool done = false, gone = false;
	for (size_t i = 0; i < p->n_actions; i++)
		if (p->actions[i]->pub.step == SBX_STEP_SANDBOX) {
			done = p->actions[i]->pub.state == SBX_ACTION_DONE ||
			       p->actions[i]->pub.state == SBX_ACTION_PENDING;
			/* deleted by an earlier pass: its event was recorded then */
			gone = p->actions[i]->gone;
		}
	if (r.error && r.rc == ASB_ECONFLICT) {
		out->requeue_after_ms = IDLE_CONFLICT_REQUEUE_MS;
	} else if (r.error) {
		out->error_code = r.rc ? r.rc : ASB_ERROR;
		out->error = r.error;
		r.error = NULL;
	} else if (done && !gone) {
		out->idle_event = plan_idle_event(p);
		out->idle_event_action = p->idle.action == SBX_IDLE_DELETE ? "Delete" : "Suspend";
		if (!out->idle_event)
			rc = ASB_ENOMEM;
	}
	free(r.error);
	return rc;
}

int sbx_plan_outcome(sbx_plan *p, int64_t now_ms, sbx_outcome *out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_plan_outcome: no output");
	memset(out, 0, sizeof(*out));
	if (!p)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_plan_outcome: no plan");
	int rc = 0;
	switch (p->pass) {
	case SBX_PASS_SKIP:
		return 0;
	case SBX_PASS_EXPIRE:
		out->status = status_copy(p);
		rc = out->status && set_expired(p, out->status, now_ms) ? 0 : ASB_ENOMEM;
		out->requeue_after_ms = EXPIRE_REQUEUE_MS;
		break;
	case SBX_PASS_TEARDOWN:
		rc = outcome_teardown(p, now_ms, out);
		break;
	case SBX_PASS_RECONCILE:
		rc = outcome_reconcile(p, now_ms, out);
		break;
	case SBX_PASS_IDLE:
		rc = outcome_idle(p, out);
		break;
	}
	if (rc == 0 && out->status)
		out->write_status = sbx_status_needs_write(
			cJSON_GetObjectItemCaseSensitive(p->sandbox, "status"), out->status);
	if (rc) {
		sbx_outcome_dispose(out);
		return asb_error_set(rc, 0, NULL, "out of memory computing the "
		                     "status of sandbox \"%s/%s\"", p->ns, p->name);
	}
	return 0;
}

void sbx_outcome_dispose(sbx_outcome *o)
{
	if (!o)
		return;
	cJSON_Delete(o->status);
	free(o->error);
	free(o->idle_event);
	free(o->multiple_pods_event);
	memset(o, 0, sizeof(*o));
}

/* ---- status comparison and patch ---- */

bool sbx_status_equal(const cJSON *a, const cJSON *b)
{
	return k8s_obj_semantic_equal(a, b);
}

bool sbx_status_needs_write(const cJSON *old_status, const cJSON *new_status)
{
	if (k8s_obj_semantic_equal(old_status, new_status))
		return false;
	const cJSON *ready = find_condition(new_status, SBX_CONDITION_READY);
	if (ju_str_eq(ju_str(ready, "status"), "True"))
		return true;
	/* Not Ready: a nodeName-only change waits for the next write. */
	cJSON *a = cJSON_IsObject(old_status) ? cJSON_Duplicate(old_status, true)
	                                      : cJSON_CreateObject();
	cJSON *b = cJSON_IsObject(new_status) ? cJSON_Duplicate(new_status, true)
	                                      : cJSON_CreateObject();
	if (!a || !b) {
		cJSON_Delete(a);
		cJSON_Delete(b);
		return true;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(a, "nodeName");
	cJSON_DeleteItemFromObjectCaseSensitive(b, "nodeName");
	bool only_node = k8s_obj_semantic_equal(a, b);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return !only_node;
}

bool sbx_status_coming_up(const cJSON *status)
{
	const cJSON *c = find_condition(status, SBX_CONDITION_READY);
	return !c || (ju_str_eq(ju_str(c, "status"), "False") &&
	              ju_str_eq(ju_str(c, "reason"), SBX_REASON_DEPENDENCIES_NOT_READY));
}

cJSON *sbx_status_patch(const cJSON *old_status, const cJSON *new_status)
{
	cJSON *patch = cJSON_CreateObject();
	cJSON *st = ju_obj(patch, "status");
	bool ok = st != NULL;
	const cJSON *kv;
	cJSON_ArrayForEach(kv, new_status) {
		if (!ok)
			break;
		const cJSON *was = cJSON_GetObjectItemCaseSensitive(old_status, kv->string);
		if (k8s_obj_semantic_equal(was, kv))
			continue;
		ok = k8s_obj_is_zero(kv) ? ju_set_null(st, kv->string)
		                    : ju_set(st, kv->string, cJSON_Duplicate(kv, true));
	}
	cJSON_ArrayForEach(kv, old_status) {
		if (!ok)
			break;
		if (!cJSON_GetObjectItemCaseSensitive(new_status, kv->string) &&
		    !k8s_obj_is_zero(kv))
			ok = ju_set_null(st, kv->string);
	}
	if (!ok) {
		cJSON_Delete(patch);
		return NULL;
	}
	return patch;
}
