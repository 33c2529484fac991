/*
 * plan_idle.c - the idle action of a Sandbox (docs/api.md#idle-suspend-and-resume,
 * sandbox/idle.h): the pass that suspends or deletes a Sandbox idle past
 * its timeout, and the idle-suspended-at annotation a running Sandbox no
 * longer needs.
 *
 * The pass writes one thing and nothing else: the next pass, woken by the
 * watch event of that write, does the rest as for any suspend (the Pod is
 * deleted, PVCs and the Service kept). The suspend patch carries the
 * resourceVersion the Sandbox was judged idle at: if the router published
 * activity or resumed it meanwhile, the patch fails with a Conflict and
 * the Sandbox is judged again from the newer version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plan.h"
#include "sandbox/idle.h"
#include "k8s/object.h"

static void plan_suspend(sbx_plan *p, const char *rv)
{
	char now[32];
	k8s_time_format(p->now_ms, now, sizeof(now));
	cJSON *patch = cJSON_CreateObject();
	cJSON *md = patch ? ju_obj(patch, "metadata") : NULL;
	cJSON *ann = md ? ju_obj(md, "annotations") : NULL;
	cJSON *spec = patch ? ju_obj(patch, "spec") : NULL;
	if (!plan_ok(p, ann && spec && ju_set_str(md, "resourceVersion", rv) &&
	                ju_set_str(ann, SBX_ANNOTATION_IDLE_SUSPENDED_AT, now) &&
	                ju_set_str(spec, "operatingMode", SBX_OPERATING_MODE_SUSPENDED))) {
		cJSON_Delete(patch);
		return;
	}
	plan_action *a = plan_add(p, SBX_STEP_SANDBOX, SBX_VERB_PATCH, SBX_OBJ_SANDBOX,
	                          p->name, patch, "failed to suspend idle sandbox");
	if (a)
		a->sets_annotation = true;   /* the copy shows the suspend */
}

/* Whether the observed claim is the one the Sandbox's controller
 * reference names and binds this Sandbox (an owner reference is anyone's
 * to write: a tenant's Sandbox naming another's claim must not get that
 * claim deleted). */
static bool claim_binds(const sbx_plan *p)
{
	const cJSON *ref = k8s_obj_controller_ref(p->sandbox);
	return p->claim && !k8s_obj_is_deleting(p->claim) &&
	       ju_str_eq(k8s_obj_uid(p->claim), ju_str(ref, "uid")) &&
	       ju_str_eq(k8s_obj_str(p->claim, "status.sandbox.name"), p->name);
}

static void plan_delete(sbx_plan *p, const char *rv)
{
	const char *claim = sbx_idle_controlling_claim(p->sandbox);
	plan_action *a;
	if (claim && p->claim_error) {
		plan_fail(p, SBX_STEP_SANDBOX, "failed to get SandboxClaim \"%s\" of idle sandbox: %s",
		          claim, p->claim_error);
		return;
	}
	if (claim && claim_binds(p)) {
		/* The claim would replace a Sandbox deleted under it: delete the
		 * claim, whose Sandbox the garbage collector then removes. The
		 * suspend first carries the version judged idle (the claim's
		 * delete cannot): activity published since makes it fail, and
		 * the delete, in the same step, is skipped. */
		p->idle_claim = true;
		if (!p->suspended)   /* else a pass that suspended it could not delete */
			plan_suspend(p, rv);
		a = plan_add(p, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_CLAIM, claim,
		             NULL, "failed to delete the claim of idle sandbox");
		if (a) {
			a->precondition_uid = strdup(k8s_obj_uid(p->claim));
			plan_ok(p, a->precondition_uid != NULL);
			a->pub.precondition_uid = a->precondition_uid;
		}
	} else {
		a = plan_add(p, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_SANDBOX,
		             p->name, NULL, "failed to delete idle sandbox");
		if (a) {
			a->precondition = strdup(rv);
			plan_ok(p, a->precondition != NULL);
			a->pub.precondition_rv = a->precondition;
		}
	}
	if (a)
		a->pub.not_found_ok = true;
}

void plan_idle(sbx_plan *p)
{
	const char *rv = k8s_obj_resource_version(p->sandbox);
	if (ju_empty(rv)) {
		/* Never act on a version we cannot name (a fixture, a lost field). */
		plan_fail(p, SBX_STEP_SANDBOX, "idle sandbox \"%s\" has no resourceVersion", p->name);
		return;
	}
	if (p->idle.action == SBX_IDLE_DELETE)
		plan_delete(p, rv);
	else
		plan_suspend(p, rv);
}

void plan_idle_annotation(sbx_plan *p)
{
	if (!p->suspended && k8s_obj_annotation(p->sandbox, SBX_ANNOTATION_IDLE_SUSPENDED_AT))
		plan_sandbox_annotation_what(p, SBX_ANNOTATION_IDLE_SUSPENDED_AT, NULL,
		                             "failed to remove sandbox idle-suspended-at annotation");
}

char *plan_idle_event(const sbx_plan *p)
{
	const char *claim = p->idle_claim ? sbx_idle_controlling_claim(p->sandbox) : NULL;
	long secs = (long)(p->idle.timeout_ms / 1000);
	long idle = p->idle_last_ms > 0 ? (long)((p->now_ms - p->idle_last_ms) / 1000) : secs;
	if (p->idle.action == SBX_IDLE_DELETE && claim)
		return ju_printf("No activity for %lds (idleTimeoutSeconds %ld): "
		                 "deleting SandboxClaim %s", idle, secs, claim);
	return ju_printf("No activity for %lds (idleTimeoutSeconds %ld): %s", idle, secs,
	                 p->idle.action == SBX_IDLE_DELETE ? "deleting the Sandbox"
	                                                    : "suspending the Sandbox");
}
