/*
 * plan.c - life cycle of an sbx_plan: copying the observed state, deciding
 * the pass (docs/api.md#sandbox-reconcile steps 1 and 4), planning the steps in order,
 * and executing the actions through the caller's callbacks, including the
 * AlreadyExists path (fetch, then plan that step once more).
 *
 * The step planners themselves live in plan_pvc.c, plan_pod.c and
 * plan_service.c; the outcome (status, requeue, errors) in status.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/array.h"
#include "plan.h"
#include "k8s/common.h"
#include "k8s/object.h"

/* ---- planning helpers ---- */

plan_action *plan_add(sbx_plan *p, sbx_step step, sbx_verb verb,
                      sbx_object object, const char *name, cJSON *body,
                      const char *what)
{
	if (ASB_ARRAY_GROW(p->actions, p->cap_actions, p->n_actions + 1, 8))
		goto oom;
	plan_action *a = calloc(1, sizeof(*a));
	if (!a)
		goto oom;
	a->name = strdup(name ? name : "");
	if (!a->name) {
		free(a);
		goto oom;
	}
	a->body = body;
	a->pub.step = step;
	a->pub.verb = verb;
	a->pub.object = object;
	a->pub.name = a->name;
	a->pub.body = body;
	a->pub.what = what;
	p->actions[p->n_actions++] = a;
	return a;
oom:
	cJSON_Delete(body);
	p->oom = true;
	return NULL;
}

void plan_fail(sbx_plan *p, sbx_step step, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0) {
		s = NULL;
		p->oom = true;
	}
	va_end(ap);
	free(p->step_error[step]);
	p->step_error[step] = s;
}

void plan_sandbox_annotation(sbx_plan *p, const char *key, const char *value)
{
	plan_sandbox_annotation_what(p, key, value,
	                             "failed to update sandbox pod-name annotation");
}

void plan_sandbox_annotation_what(sbx_plan *p, const char *key, const char *value,
                                  const char *what)
{
	cJSON *patch = cJSON_CreateObject();
	cJSON *ann = ju_obj(ju_obj(patch, "metadata"), "annotations");
	if (!plan_ok(p, ann && (value ? ju_set_str(ann, key, value)
	                              : ju_set_null(ann, key)))) {
		cJSON_Delete(patch);
		return;
	}
	plan_action *a = plan_add(p, SBX_STEP_POD, SBX_VERB_PATCH,
	                          SBX_OBJ_SANDBOX, p->name, patch, what);
	if (a)
		a->sets_annotation = true;
}

bool plan_adoptable(const sbx_plan *p, const cJSON *obj)
{
	return ju_str_eq(k8s_obj_label(obj, SBX_LABEL_ADOPTABLE), "true") ||
	       ju_str_eq(k8s_obj_label(obj, SBX_LABEL_NAME_HASH), p->hash);
}

void plan_fail_owned_by_other(sbx_plan *p, sbx_step step, const char *what,
                              const cJSON *obj)
{
	const cJSON *ref = k8s_obj_controller_ref(obj);
	plan_fail(p, step,
	          "%s \"%s\" is owned by %s/%s (UID: %s), not by sandbox \"%s\"",
	          what, ju_nz(k8s_obj_name(obj)), ju_nz(ju_str(ref, "kind")),
	          ju_nz(ju_str(ref, "name")), ju_nz(ju_str(ref, "uid")), p->name);
}

void plan_fail_not_adoptable(sbx_plan *p, sbx_step step, const char *what,
                             const char *name)
{
	plan_fail(p, step,
	          "cannot adopt unowned %s \"%s\": missing required pool "
	          "authorization label (\"" SBX_LABEL_ADOPTABLE "\") or sandbox "
	          "tracking label (\"" SBX_LABEL_NAME_HASH "\")", what, name);
}

const cJSON *plan_pod_spec(const sbx_plan *p)
{
	return k8s_obj_at(p->sandbox, "spec.podTemplate.spec");
}

/* ---- life cycle ---- */

static void action_free(plan_action *a)
{
	if (!a)
		return;
	free(a->name);
	free(a->precondition);
	free(a->precondition_uid);
	cJSON_Delete(a->body);
	free(a->message);
	cJSON_Delete(a->result);
	free(a);
}

void sbx_plan_free(sbx_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_actions; i++)
		action_free(p->actions[i]);
	free(p->actions);
	for (int s = 0; s < SBX_STEP_COUNT; s++)
		free(p->step_error[s]);
	cJSON_Delete(p->sandbox);
	cJSON_Delete(p->pods);
	cJSON_Delete(p->pod);
	cJSON_Delete(p->service);
	cJSON_Delete(p->pvcs);
	cJSON_Delete(p->claim);
	free(p->claim_error);
	cJSON_Delete(p->pod_result);
	free(p->pods_error);
	free(p->pod_error);
	free(p->service_error);
	free(p->pvc_error_name);
	free(p->pvc_error);
	free(p->cluster_domain);
	free(p->ns);
	free(p->name);
	free(p->uid);
	free(p);
}

/* Duplicates `src` (NULL stays NULL); records an allocation failure. */
static cJSON *dup_json(sbx_plan *p, const cJSON *src)
{
	if (!src)
		return NULL;
	cJSON *c = cJSON_Duplicate(src, true);
	plan_ok(p, c != NULL);
	return c;
}

static cJSON *dup_array(sbx_plan *p, const cJSON *src)
{
	cJSON *c = cJSON_IsArray(src) ? cJSON_Duplicate(src, true)
	                              : cJSON_CreateArray();
	plan_ok(p, c != NULL);
	return c;
}

static char *dup_str(sbx_plan *p, const char *s)
{
	if (!s)
		return NULL;
	char *c = strdup(s);
	plan_ok(p, c != NULL);
	return c;
}

/* spec.shutdownTime in ms; false when unset. An unparsable value (the CRD
 * validates the format) counts as unset: never expiring is the safe reading. */
static bool shutdown_time(const cJSON *sandbox, int64_t *ms)
{
	const char *st = k8s_obj_str(sandbox, "spec.shutdownTime");
	return st && *st && k8s_time_parse(st, ms) == 0;
}

sbx_pass sbx_pass_for(const cJSON *sandbox, int64_t now_ms)
{
	int64_t shutdown_ms;
	if (!sandbox || k8s_obj_is_deleting(sandbox))
		return SBX_PASS_SKIP;
	if (!shutdown_time(sandbox, &shutdown_ms) || now_ms < shutdown_ms) {
		int64_t idle_due = sbx_idle_due_ms(sandbox);
		return (idle_due > 0 && now_ms >= idle_due) || sbx_idle_delete_pending(sandbox)
		       ? SBX_PASS_IDLE : SBX_PASS_RECONCILE;
	}
	/* Expired: the first pass only persists the expiry (two-pass teardown). */
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(sandbox, "status.conditions")) {
		if (ju_str_eq(ju_str(c, "type"), SBX_CONDITION_READY))
			return ju_str_eq(ju_str(c, "reason"), SBX_REASON_SANDBOX_EXPIRED)
			       ? SBX_PASS_TEARDOWN : SBX_PASS_EXPIRE;
	}
	return SBX_PASS_EXPIRE;
}

/* Reads the fixed facts of the pass from the Sandbox copy. */
static void read_sandbox(sbx_plan *p)
{
	const cJSON *sb = p->sandbox;
	p->ns = dup_str(p, k8s_obj_namespace(sb));
	p->name = dup_str(p, k8s_obj_name(sb));
	p->uid = dup_str(p, k8s_obj_uid(sb));
	sbx_name_hash(p->name, p->hash);
	p->generation = k8s_obj_generation(sb);
	p->suspended = ju_str_eq(k8s_obj_str(sb, "spec.operatingMode"),
	                         SBX_OPERATING_MODE_SUSPENDED);
	const cJSON *svc = k8s_obj_at(sb, "spec.service");
	p->service_mode = cJSON_IsTrue(svc) ? SVC_TRUE
	                : cJSON_IsFalse(svc) ? SVC_FALSE : SVC_UNSET;
	p->has_shutdown = shutdown_time(sb, &p->shutdown_ms);
	p->policy_delete = ju_str_eq(k8s_obj_str(sb, "spec.shutdownPolicy"),
	                             SBX_SHUTDOWN_POLICY_DELETE);
	sbx_idle_policy_of(sb, &p->idle);
	p->idle_due_ms = sbx_idle_due_ms(sb);
	p->idle_last_ms = sbx_idle_last_activity_ms(sb);
}

/* Plans every step of the pass, in execution order. */
static void plan_all(sbx_plan *p)
{
	switch (p->pass) {
	case SBX_PASS_RECONCILE:
		plan_pvcs(p);
		plan_pod(p);
		plan_service(p);
		break;
	case SBX_PASS_TEARDOWN:
		plan_pod_teardown(p);
		plan_service_teardown(p);
		if (p->policy_delete) {
			plan_action *a = plan_add(p, SBX_STEP_SANDBOX, SBX_VERB_DELETE,
			                          SBX_OBJ_SANDBOX, p->name, NULL,
			                          "failed to delete sandbox");
			if (a)
				a->pub.not_found_ok = true;
		}
		break;
	case SBX_PASS_IDLE:
		plan_idle(p);
		break;
	case SBX_PASS_SKIP:
	case SBX_PASS_EXPIRE:
		break;
	}
}

/* The plan from `obs`, taking the trees of `objs` (their fields NULLed)
 * or, without `objs`, copying those of `obs`. */
static int plan_new(sbx_plan **out, const sbx_observed *obs, sbx_observed_objects *objs)
{
	sbx_observed_objects none = { 0 };
	sbx_observed_objects taken = objs ? *objs : none;
	if (objs)
		*objs = none;   /* ours from here, whatever happens */
	if (!out || !obs || !cJSON_IsObject(obs->sandbox) ||
	    (objs && (taken.sandbox != obs->sandbox || taken.pods != obs->pods ||
	              taken.pod != obs->pod || taken.service != obs->service ||
	              taken.pvcs != obs->pvcs))) {
		bool mismatch = obs && cJSON_IsObject(obs->sandbox);
		cJSON_Delete(taken.sandbox);
		cJSON_Delete(taken.pods);
		cJSON_Delete(taken.pod);
		cJSON_Delete(taken.service);
		cJSON_Delete(taken.pvcs);
		if (out)
			*out = NULL;
		return asb_error_set(ASB_EINVAL, 0, NULL, mismatch
		                     ? "sbx_plan_new_take: the objects are not those observed"
		                     : "sbx_plan_new: no sandbox given");
	}
	*out = NULL;
	const cJSON *sb = obs->sandbox;
	sbx_plan *p = calloc(1, sizeof(*p));
	if (!p) {
		cJSON_Delete(taken.sandbox);
		cJSON_Delete(taken.pods);
		cJSON_Delete(taken.pod);
		cJSON_Delete(taken.service);
		cJSON_Delete(taken.pvcs);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	if (objs) {
		p->sandbox = taken.sandbox;
		p->pods = cJSON_IsArray(taken.pods) ? taken.pods : NULL;
		if (!p->pods) {
			cJSON_Delete(taken.pods);
			p->pods = dup_array(p, NULL);
		}
		p->pod = taken.pod;
		p->service = taken.service;
		p->pvcs = cJSON_IsArray(taken.pvcs) ? taken.pvcs : NULL;
		if (!p->pvcs) {
			cJSON_Delete(taken.pvcs);
			p->pvcs = dup_array(p, NULL);
		}
	} else {
		p->sandbox = dup_json(p, sb);
		p->pods = dup_array(p, obs->pods);
		p->pod = dup_json(p, obs->pod);
		p->service = dup_json(p, obs->service);
		p->pvcs = dup_array(p, obs->pvcs);
	}
	p->claim = dup_json(p, obs->claim);
	p->claim_error = dup_str(p, obs->claim_error);
	p->pods_error = dup_str(p, obs->pods_error);
	p->pod_error = dup_str(p, obs->pod_error);
	p->service_error = dup_str(p, obs->service_error);
	p->pvc_error_name = dup_str(p, obs->pvc_error_name);
	p->pvc_error = dup_str(p, obs->pvc_error);
	p->now_ms = obs->now_ms;
	p->write_behind_window_ms = obs->write_behind_window_ms;
	p->deferred_since_in = obs->pod_patch_deferred_since_ms;
	p->cluster_domain = dup_str(p, obs->cluster_domain
	                               ? obs->cluster_domain
	                               : SBX_DEFAULT_CLUSTER_DOMAIN);
	if (!p->oom && (ju_empty(k8s_obj_name(sb)) || ju_empty(k8s_obj_namespace(sb)) ||
	                ju_empty(k8s_obj_uid(sb)))) {
		asb_error_set(ASB_EINVAL, 0, NULL,
		              "sandbox \"%s/%s\" lacks metadata.name, namespace or uid",
		              ju_nz(k8s_obj_namespace(sb)), ju_nz(k8s_obj_name(sb)));
		sbx_plan_free(p);
		return ASB_EINVAL;
	}
	if (!p->oom) {
		read_sandbox(p);
		p->pass = sbx_pass_for(p->sandbox, p->now_ms);
		if (!p->oom)
			plan_all(p);
	}
	if (p->oom) {
		/* `sb` may be the plan's own: build the message before freeing */
		asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory planning sandbox \"%s/%s\"",
		              ju_nz(k8s_obj_namespace(sb)), ju_nz(k8s_obj_name(sb)));
		sbx_plan_free(p);
		return ASB_ENOMEM;
	}
	*out = p;
	return 0;
}

int sbx_plan_new(sbx_plan **out, const sbx_observed *obs)
{
	return plan_new(out, obs, NULL);
}

int sbx_plan_new_take(sbx_plan **out, const sbx_observed *obs, sbx_observed_objects *objs)
{
	if (!objs) {
		if (out)
			*out = NULL;
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_plan_new_take: no objects given");
	}
	return plan_new(out, obs, objs);
}

sbx_pass sbx_plan_pass(const sbx_plan *p)
{
	return p ? p->pass : SBX_PASS_SKIP;
}

size_t sbx_plan_action_count(const sbx_plan *p)
{
	return p ? p->n_actions : 0;
}

const sbx_action *sbx_plan_action(const sbx_plan *p, size_t i)
{
	return p && i < p->n_actions ? &p->actions[i]->pub : NULL;
}

/* ---- execution ---- */

/*
 * Plans `step` again after its object was fetched: drops the step's actions
 * not yet run (the create that collided included) and its decided error,
 * plans the step into fresh actions at the end, then moves them where the
 * dropped ones were. The step's actions already done stay, as history.
 * Returns the index of the step's first new action.
 */
static size_t replan_step(sbx_plan *p, sbx_step step)
{
	size_t first = p->n_actions, kept = 0;
	for (size_t i = 0; i < p->n_actions; i++) {
		plan_action *a = p->actions[i];
		if (a->pub.step == step && a->pub.state == SBX_ACTION_PENDING) {
			if (first == p->n_actions)
				first = i;
			action_free(a);
		} else {
			p->actions[kept++] = a;
		}
	}
	p->n_actions = kept;
	free(p->step_error[step]);
	p->step_error[step] = NULL;
	p->replanned[step] = true;

	size_t tail = p->n_actions;
	if (step == SBX_STEP_PVC)
		plan_pvcs(p);
	else if (step == SBX_STEP_POD)
		plan_pod(p);
	else if (step == SBX_STEP_SERVICE)
		plan_service(p);
	/* Rotate the new actions [tail, n) to position `first`. */
	size_t added = p->n_actions - tail;
	if (added && first < tail) {
		plan_action **tmp = malloc(added * sizeof(*tmp));
		if (!tmp) {
			p->oom = true;
			return first;
		}
		memcpy(tmp, p->actions + tail, added * sizeof(*tmp));
		memmove(p->actions + first + added, p->actions + first,
		        (tail - first) * sizeof(*tmp));
		memcpy(p->actions + first, tmp, added * sizeof(*tmp));
		free(tmp);
	}
	return first;
}

/* Records the failure of `a` from the calling thread's last error. */
static void action_failed(plan_action *a, int rc)
{
	const asb_error *e = asb_error_last();
	a->pub.state = SBX_ACTION_FAILED;
	a->pub.rc = rc;
	free(a->message);
	a->message = strdup(e->message && *e->message ? e->message
	                                               : asb_strerror(rc));
	a->pub.message = a->message ? a->message : "out of memory";
}

/* Updates the observed state with what a successful action did. */
static void action_done(sbx_plan *p, plan_action *a)
{
	a->pub.state = SBX_ACTION_DONE;
	if (a->sets_annotation)
		plan_ok(p, k8s_obj_merge_patch(p->sandbox, a->body));
	if (a->pub.object == SBX_OBJ_PVC && a->pub.verb == SBX_VERB_CREATE) {
		cJSON *pvc = cJSON_Duplicate(a->result ? a->result : a->body, true);
		plan_ok(p, pvc && cJSON_AddItemToArray(p->pvcs, pvc));
	}
}

/* After AlreadyExists: puts the fetched object in the observed state. */
static void observe_fetched(sbx_plan *p, sbx_object object, cJSON *obj)
{
	switch (object) {
	case SBX_OBJ_POD:
		cJSON_Delete(p->pod);
		p->pod = obj;
		free(p->pod_error);
		p->pod_error = NULL;
		break;
	case SBX_OBJ_SERVICE:
		cJSON_Delete(p->service);
		p->service = obj;
		free(p->service_error);
		p->service_error = NULL;
		break;
	case SBX_OBJ_PVC:
		plan_ok(p, cJSON_AddItemToArray(p->pvcs, obj));
		break;
	default:
		cJSON_Delete(obj);
		break;
	}
}

int sbx_plan_execute(sbx_plan *p, const sbx_executor *ex)
{
	if (!p || !ex || !ex->apply)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "sbx_plan_execute: no plan or apply callback");
	bool failed[SBX_STEP_COUNT] = { false };

	for (size_t i = 0; i < p->n_actions; i++) {
		plan_action *a = p->actions[i];
		if (a->pub.state != SBX_ACTION_PENDING)
			continue;
		if (failed[a->pub.step]) {
			a->pub.state = SBX_ACTION_SKIPPED;
			continue;
		}
		cJSON *result = NULL;
		asb_error_clear();
		int rc = ex->apply(&a->pub, p->ns, &result, ex->userdata);
		if (rc == 0 || (rc == ASB_ENOTFOUND && a->pub.not_found_ok)) {
			a->result = rc == 0 ? result : NULL;
			if (rc != 0) {
				cJSON_Delete(result);
				a->gone = true;
			}
			a->pub.result = a->result;
			action_done(p, a);
			continue;
		}
		cJSON_Delete(result);
		sbx_step step = a->pub.step;
		if (rc == ASB_EALREADYEXISTS && a->pub.verb == SBX_VERB_CREATE &&
		    ex->fetch && !p->replanned[step]) {
			cJSON *obj = NULL;
			asb_error_clear();
			int frc = ex->fetch(a->pub.object, p->ns, a->name, &obj,
			                    ex->userdata);
			if (frc == 0 && obj) {
				observe_fetched(p, a->pub.object, obj);
				size_t first = replan_step(p, step);
				if (p->oom)
					break;
				i = first - 1;  /* resume at the step's new first action */
				continue;
			}
			cJSON_Delete(obj);
			rc = frc ? frc : ASB_ERROR;
		}
		action_failed(a, rc);
		failed[step] = true;
	}
	if (p->oom)
		return asb_error_set(ASB_ENOMEM, 0, NULL,
		                     "out of memory executing the plan of sandbox "
		                     "\"%s/%s\"", p->ns, p->name);
	return 0;
}
