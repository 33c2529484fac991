/*
 * Unit tests of libsandbox/src/idle.c and plan_idle.c (docs/api.md#idle-suspend-and-resume):
 * the policy and the idle clock of a Sandbox, the pass that suspends or
 * deletes an idle Sandbox, its outcome (event, Conflict, errors), the
 * requeue at the moment a Sandbox becomes idle, the idle-suspended-at
 * annotation and the Suspended condition's IdleTimeout reason.
 */
#include <string.h>
#include "fixture.h"
#include "sandbox/idle.h"

/* fixtures: created 03:00:00, now 03:04:05 */
#define CREATED_MS (FX_NOW_MS - 245000)

static void set_ready(cJSON *sb, const char *status, const char *at);

/* A Ready Sandbox (since its creation) with an idle policy. */
static cJSON *idle_sandbox(int timeout_s, const char *policy)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set(sb, "spec.idleTimeoutSeconds", cJSON_CreateNumber(timeout_s));
	if (policy)
		fx_set_str(sb, "spec.idlePolicy", policy);
	set_ready(sb, "True", "2026-01-02T03:00:00Z");
	return sb;
}

static void set_ready(cJSON *sb, const char *status, const char *at)
{
	cJSON *conds = cJSON_CreateArray();
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", "Ready");
	cJSON_AddStringToObject(c, "status", status);
	cJSON_AddStringToObject(c, "reason", "DependenciesReady");
	cJSON_AddStringToObject(c, "lastTransitionTime", at);
	cJSON_AddItemToArray(conds, c);
	fx_set(sb, "status.conditions", conds);
}

START_TEST(policy_is_read_from_the_spec)
{
	sbx_idle_policy pol;
	cJSON *sb = fx_load("sandbox.json");
	sbx_idle_policy_of(sb, &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_OFF);
	ck_assert_int_eq(pol.timeout_ms, 0);
	fx_set(sb, "spec.idleTimeoutSeconds", cJSON_CreateNumber(0));
	sbx_idle_policy_of(sb, &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_OFF);
	fx_set_str(sb, "spec.idleTimeoutSeconds", "60");   /* not a number */
	sbx_idle_policy_of(sb, &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_OFF);
	fx_set(sb, "spec.idleTimeoutSeconds", cJSON_CreateNumber(60));
	sbx_idle_policy_of(sb, &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_SUSPEND);
	ck_assert_int_eq(pol.timeout_ms, 60000);
	fx_set_str(sb, "spec.idlePolicy", "Delete");
	sbx_idle_policy_of(sb, &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_DELETE);
	fx_set_str(sb, "spec.idlePolicy", "Pause");          /* unknown: the safe action */
	sbx_idle_policy_of(sb, &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_SUSPEND);
	fx_set(sb, "spec.idleTimeoutSeconds", cJSON_CreateNumber(1e300));
	sbx_idle_policy_of(sb, &pol);
	ck_assert_int_eq(pol.timeout_ms, (int64_t)SBX_IDLE_TIMEOUT_MAX_SECONDS * 1000);
	/* the claim's shape */
	cJSON *claim = cJSON_Parse("{\"spec\":{\"lifecycle\":{\"idleTimeoutSeconds\":90,"
	                           "\"idlePolicy\":\"Delete\"}}}");
	sbx_idle_policy_at(claim, "spec.lifecycle", &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_DELETE);
	ck_assert_int_eq(pol.timeout_ms, 90000);
	sbx_idle_policy_at(NULL, "spec", &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_OFF);
	cJSON_Delete(claim);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(last_activity_is_the_latest_known_time)
{
	cJSON *sb = idle_sandbox(60, NULL);
	ck_assert_int_eq(sbx_idle_last_activity_ms(sb), CREATED_MS);
	fx_annotation(sb, SBX_ANNOTATION_LAST_ACTIVITY, "2026-01-02T03:02:00Z");
	ck_assert_int_eq(sbx_idle_last_activity_ms(sb), CREATED_MS + 120000);
	/* a Ready that turned True later (a resume) moves it */
	set_ready(sb, "True", "2026-01-02T03:03:00Z");
	ck_assert_int_eq(sbx_idle_last_activity_ms(sb), CREATED_MS + 180000);
	/* a Ready False transition does not */
	set_ready(sb, "False", "2026-01-02T03:04:00Z");
	ck_assert_int_eq(sbx_idle_last_activity_ms(sb), CREATED_MS + 120000);
	/* unparsable values are ignored */
	fx_annotation(sb, SBX_ANNOTATION_LAST_ACTIVITY, "yesterday");
	ck_assert_int_eq(sbx_idle_last_activity_ms(sb), CREATED_MS);
	ck_assert_int_eq(sbx_idle_last_activity_ms(NULL), 0);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(idleness_applies_only_to_running_claimed_sandboxes_with_a_policy)
{
	cJSON *sb = idle_sandbox(60, NULL);
	ck_assert(sbx_idle_applies(sb));
	ck_assert_int_eq(sbx_idle_due_ms(sb), CREATED_MS + 60000);
	ck_assert(!sbx_idle_resumable(sb));   /* running */

	fx_label(sb, SBX_LABEL_WARM_POOL_SANDBOX, "abcd1234");   /* unclaimed member */
	ck_assert(!sbx_idle_applies(sb));
	ck_assert_int_eq(sbx_idle_due_ms(sb), 0);
	fx_label(sb, SBX_LABEL_WARM_POOL_SANDBOX, NULL);

	/* starting, or resumed and not Ready again: not judged */
	set_ready(sb, "False", "2026-01-02T03:00:00Z");
	ck_assert(!sbx_idle_applies(sb));
	fx_del(sb, "status");
	ck_assert(!sbx_idle_applies(sb));
	ck_assert_int_eq(sbx_idle_due_ms(sb), 0);
	set_ready(sb, "True", "2026-01-02T03:00:00Z");

	fx_set_str(sb, "spec.operatingMode", "Suspended");
	ck_assert(!sbx_idle_applies(sb));
	ck_assert(sbx_idle_resumable(sb));
	fx_set_str(sb, "spec.idlePolicy", "Delete");
	ck_assert(!sbx_idle_resumable(sb));   /* Delete never resumes */
	fx_del(sb, "spec.idlePolicy");

	fx_set_str(sb, "metadata.deletionTimestamp", FX_NOW_STR);
	ck_assert(!sbx_idle_resumable(sb));
	fx_del(sb, "metadata.deletionTimestamp");
	fx_set_str(sb, "spec.operatingMode", "Running");
	fx_set_str(sb, "metadata.deletionTimestamp", FX_NOW_STR);
	ck_assert(!sbx_idle_applies(sb));
	cJSON_Delete(sb);

	cJSON *plain = fx_load("sandbox.json");
	ck_assert(!sbx_idle_applies(plain));
	fx_set_str(plain, "spec.operatingMode", "Suspended");
	ck_assert(!sbx_idle_resumable(plain));   /* no policy: stays suspended */
	cJSON_Delete(plain);
}
END_TEST

START_TEST(publish_interval_is_a_quarter_of_the_timeout_and_at_least_ten_seconds)
{
	ck_assert_int_eq(sbx_idle_publish_interval_ms(30000), 10000);
	ck_assert_int_eq(sbx_idle_publish_interval_ms(40000), 10000);
	ck_assert_int_eq(sbx_idle_publish_interval_ms(120000), 30000);
	ck_assert_int_eq(sbx_idle_publish_interval_ms(0), 10000);
	/* with the smallest timeout, the published activity of a Sandbox in
	 * use stays younger than a third of it */
	ck_assert_int_le(sbx_idle_publish_interval_ms(SBX_IDLE_TIMEOUT_MIN_SECONDS * 1000LL) * 3,
	                 SBX_IDLE_TIMEOUT_MIN_SECONDS * 1000LL);
}
END_TEST

START_TEST(pass_is_idle_once_due_and_expiry_comes_first)
{
	cJSON *sb = idle_sandbox(300, NULL);
	ck_assert_int_eq(sbx_pass_for(sb, FX_NOW_MS), SBX_PASS_RECONCILE);
	ck_assert_int_eq(sbx_pass_for(sb, CREATED_MS + 300000), SBX_PASS_IDLE);
	fx_set_str(sb, "spec.shutdownTime", "2026-01-02T03:01:00Z");
	ck_assert_int_eq(sbx_pass_for(sb, CREATED_MS + 300000), SBX_PASS_EXPIRE);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(idle_suspend_patches_the_mode_at_the_version_judged)
{
	cJSON *sb = idle_sandbox(60, NULL);
	sbx_observed obs = fx_observed(sb);
	fx_pass pass;
	fx_run(&pass, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(pass.plan), SBX_PASS_IDLE);
	ck_assert_uint_eq(sbx_plan_action_count(pass.plan), 1);   /* nothing else this pass */
	const sbx_action *a = fx_action(pass.plan, 0, SBX_STEP_SANDBOX, SBX_VERB_PATCH,
	                                SBX_OBJ_SANDBOX, "my-sandbox");
	fx_assert_json_str(a->body,
		"{\"metadata\":{\"resourceVersion\":\"1001\",\"annotations\":"
		"{\"agents.x-k8s.io/idle-suspended-at\":\"" FX_NOW_STR "\"}},"
		"\"spec\":{\"operatingMode\":\"Suspended\"}}");
	ck_assert_ptr_null(pass.out.status);
	ck_assert_ptr_null(pass.out.error);
	ck_assert_str_eq(pass.out.idle_event_action, "Suspend");
	ck_assert_str_eq(pass.out.idle_event,
	                 "No activity for 245s (idleTimeoutSeconds 60): suspending the Sandbox");
	fx_pass_free(&pass);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(idle_delete_deletes_the_sandbox_at_its_version_or_its_claim)
{
	cJSON *sb = idle_sandbox(60, "Delete");
	sbx_observed obs = fx_observed(sb);
	fx_pass pass;
	fx_run(&pass, &obs, NULL);
	const sbx_action *a = fx_action(pass.plan, 0, SBX_STEP_SANDBOX, SBX_VERB_DELETE,
	                                SBX_OBJ_SANDBOX, "my-sandbox");
	ck_assert_str_eq(a->precondition_rv, "1001");
	ck_assert(a->not_found_ok);
	ck_assert_str_eq(pass.out.idle_event_action, "Delete");
	ck_assert(strstr(pass.out.idle_event, "deleting the Sandbox") != NULL);
	fx_pass_free(&pass);

	/* controlled by a claim that binds it: suspended at the version judged
	 * idle, then the claim goes, at its uid (it would replace its Sandbox) */
	cJSON *refs = cJSON_Parse("[{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\","
	                          "\"kind\":\"SandboxClaim\",\"name\":\"my-claim\",\"uid\":\"c-1\","
	                          "\"controller\":true}]");
	fx_set(sb, "metadata.ownerReferences", refs);
	ck_assert_str_eq(sbx_idle_controlling_claim(sb), "my-claim");
	cJSON *claim = cJSON_Parse("{\"metadata\":{\"name\":\"my-claim\",\"namespace\":\"team-a\","
	                           "\"uid\":\"c-1\"},\"status\":{\"sandbox\":{\"name\":\"my-sandbox\"}}}");
	obs.claim = claim;
	fx_run(&pass, &obs, NULL);
	a = fx_action(pass.plan, 0, SBX_STEP_SANDBOX, SBX_VERB_PATCH, SBX_OBJ_SANDBOX, "my-sandbox");
	ck_assert_str_eq(k8s_obj_str(a->body, "metadata.resourceVersion"), "1001");
	ck_assert_str_eq(k8s_obj_str(a->body, "spec.operatingMode"), "Suspended");
	a = fx_action(pass.plan, 1, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_CLAIM, "my-claim");
	ck_assert_str_eq(a->precondition_uid, "c-1");
	ck_assert(a->not_found_ok);
	ck_assert_str_eq(pass.out.idle_event,
	                 "No activity for 245s (idleTimeoutSeconds 60): deleting SandboxClaim my-claim");
	fx_pass_free(&pass);

	/* activity since: the suspend's Conflict skips the claim's delete */
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_SANDBOX, SBX_VERB_PATCH, ASB_ECONFLICT, "the object has been modified");
	fx_run(&pass, &obs, &srv);
	ck_assert_int_eq(sbx_plan_action(pass.plan, 1)->state, SBX_ACTION_SKIPPED);
	ck_assert_int_eq(pass.out.error_code, 0);
	ck_assert_ptr_null(pass.out.idle_event);
	fx_pass_free(&pass);

	/* suspended on the way and the delete failed: the next pass deletes it */
	cJSON *susp = cJSON_Duplicate(sb, true);
	fx_set_str(susp, "spec.operatingMode", "Suspended");
	fx_annotation(susp, SBX_ANNOTATION_IDLE_SUSPENDED_AT, FX_NOW_STR);
	ck_assert(sbx_idle_delete_pending(susp));
	sbx_observed sobs = fx_observed(susp);
	sobs.claim = claim;
	fx_run(&pass, &sobs, NULL);
	ck_assert_int_eq(sbx_plan_pass(pass.plan), SBX_PASS_IDLE);
	ck_assert_uint_eq(sbx_plan_action_count(pass.plan), 1);
	fx_action(pass.plan, 0, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_CLAIM, "my-claim");
	fx_pass_free(&pass);
	/* the claim already gone (an earlier pass's delete): no second event */
	fx_server gone = { 0 };
	fx_fail(&gone, SBX_OBJ_CLAIM, SBX_VERB_DELETE, ASB_ENOTFOUND, "not found");
	fx_run(&pass, &sobs, &gone);
	ck_assert_int_eq(pass.out.error_code, 0);
	ck_assert_ptr_null(pass.out.idle_event);
	fx_pass_free(&pass);
	cJSON_Delete(susp);

	/* a reference to a claim that does not bind it (anyone can write an
	 * owner reference): only the Sandbox goes, never that claim */
	fx_set_str(claim, "status.sandbox.name", "someone-elses");
	fx_run(&pass, &obs, NULL);
	ck_assert_uint_eq(sbx_plan_action_count(pass.plan), 1);
	a = fx_action(pass.plan, 0, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_SANDBOX, "my-sandbox");
	ck_assert_str_eq(a->precondition_rv, "1001");
	ck_assert(strstr(pass.out.idle_event, "deleting the Sandbox") != NULL);
	fx_pass_free(&pass);
	fx_set_str(claim, "status.sandbox.name", "my-sandbox");
	fx_set_str(claim, "metadata.uid", "c-2");   /* another claim of that name */
	fx_run(&pass, &obs, NULL);
	fx_action(pass.plan, 0, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_SANDBOX, "my-sandbox");
	fx_pass_free(&pass);
	obs.claim = NULL;   /* no such claim */
	fx_run(&pass, &obs, NULL);
	fx_action(pass.plan, 0, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_SANDBOX, "my-sandbox");
	fx_pass_free(&pass);
	obs.claim_error = "forbidden";   /* unknown: nothing is deleted */
	fx_run(&pass, &obs, NULL);
	ck_assert_uint_eq(sbx_plan_action_count(pass.plan), 0);
	ck_assert_int_eq(pass.out.error_code, ASB_ERROR);
	ck_assert(strstr(pass.out.error, "forbidden") != NULL);
	fx_pass_free(&pass);
	obs.claim_error = NULL;
	cJSON_Delete(claim);

	/* a claim kind of another group is not a claim */
	fx_set(sb, "metadata.ownerReferences",
	       cJSON_Parse("[{\"apiVersion\":\"example.com/v1\",\"kind\":\"SandboxClaim\","
	                   "\"name\":\"x\",\"uid\":\"u\",\"controller\":true}]"));
	fx_run(&pass, &obs, NULL);
	fx_action(pass.plan, 0, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_SANDBOX, "my-sandbox");
	fx_pass_free(&pass);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(a_conflict_is_judged_again_other_failures_are_errors)
{
	cJSON *sb = idle_sandbox(60, NULL);
	sbx_observed obs = fx_observed(sb);
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_SANDBOX, SBX_VERB_PATCH, ASB_ECONFLICT,
	        "the object has been modified");
	fx_pass pass;
	fx_run(&pass, &obs, &srv);
	ck_assert_int_eq(pass.out.error_code, 0);
	ck_assert_ptr_null(pass.out.idle_event);
	ck_assert_int_gt(pass.out.requeue_after_ms, 0);
	fx_pass_free(&pass);

	fx_server srv2 = { 0 };
	fx_fail(&srv2, SBX_OBJ_SANDBOX, SBX_VERB_PATCH, ASB_EFORBIDDEN, "forbidden");
	fx_run(&pass, &obs, &srv2);
	ck_assert_int_eq(pass.out.error_code, ASB_EFORBIDDEN);
	ck_assert_str_eq(pass.out.error, "failed to suspend idle sandbox: forbidden");
	ck_assert_ptr_null(pass.out.idle_event);
	fx_pass_free(&pass);

	/* no resourceVersion: nothing is written */
	fx_del(sb, "metadata.resourceVersion");
	fx_run(&pass, &obs, NULL);
	ck_assert_uint_eq(sbx_plan_action_count(pass.plan), 0);
	ck_assert_int_eq(pass.out.error_code, ASB_ERROR);
	fx_pass_free(&pass);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(a_running_sandbox_is_requeued_when_it_becomes_idle)
{
	cJSON *sb = idle_sandbox(300, NULL);   /* due at 03:05:00, 55 s from now */
	sbx_observed obs = fx_observed(sb);
	fx_pass pass;
	fx_run(&pass, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(pass.plan), SBX_PASS_RECONCILE);
	ck_assert_int_eq(pass.out.requeue_after_ms, 55000);
	fx_pass_free(&pass);

	/* activity moves it */
	fx_annotation(sb, SBX_ANNOTATION_LAST_ACTIVITY, "2026-01-02T03:04:00Z");
	fx_run(&pass, &obs, NULL);
	ck_assert_int_eq(pass.out.requeue_after_ms, 295000);
	fx_pass_free(&pass);

	/* without a policy: no requeue of its own */
	cJSON *plain = fx_load("sandbox.json");
	obs = fx_observed(plain);
	fx_run(&pass, &obs, NULL);
	ck_assert_int_eq(pass.out.requeue_after_ms, 0);
	fx_pass_free(&pass);
	cJSON_Delete(plain);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(an_unclaimed_warm_member_is_never_idle)
{
	cJSON *sb = idle_sandbox(60, NULL);
	fx_label(sb, SBX_LABEL_WARM_POOL_SANDBOX, "abcd1234");
	sbx_observed obs = fx_observed(sb);
	fx_pass pass;
	fx_run(&pass, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(pass.plan), SBX_PASS_RECONCILE);
	ck_assert_int_eq(pass.out.requeue_after_ms, 0);
	fx_pass_free(&pass);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(idle_suspended_sandbox_says_so_and_a_running_one_drops_the_mark)
{
	cJSON *sb = idle_sandbox(60, NULL);
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	fx_annotation(sb, SBX_ANNOTATION_IDLE_SUSPENDED_AT, "2026-01-02T03:01:00Z");
	sbx_observed obs = fx_observed(sb);
	fx_pass pass;
	fx_run(&pass, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(pass.plan), SBX_PASS_RECONCILE);
	fx_assert_condition(pass.out.status, "Suspended", "True", "IdleTimeout",
	                    "Sandbox was idle past its idleTimeoutSeconds. Pod has been "
	                    "terminated. Sandbox is suspended");
	fx_assert_condition(pass.out.status, "Ready", "False", "SandboxSuspended",
	                    "Sandbox is suspended");
	for (size_t i = 0; i < sbx_plan_action_count(pass.plan); i++)
		ck_assert(sbx_plan_action(pass.plan, i)->object != SBX_OBJ_SANDBOX);
	fx_pass_free(&pass);

	/* suspended by hand: the upstream reason */
	fx_annotation(sb, SBX_ANNOTATION_IDLE_SUSPENDED_AT, NULL);
	fx_run(&pass, &obs, NULL);
	fx_assert_condition(pass.out.status, "Suspended", "True", "PodTerminated",
	                    "Pod has been terminated. Sandbox is suspended");
	fx_pass_free(&pass);

	/* resumed by hand (the mark left behind): the mark goes */
	fx_annotation(sb, SBX_ANNOTATION_IDLE_SUSPENDED_AT, "2026-01-02T03:01:00Z");
	fx_set_str(sb, "spec.operatingMode", "Running");
	set_ready(sb, "True", FX_NOW_STR);   /* just resumed: not idle */
	fx_run(&pass, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(pass.plan), SBX_PASS_RECONCILE);
	bool removed = false;
	for (size_t i = 0; i < sbx_plan_action_count(pass.plan); i++) {
		const sbx_action *a = sbx_plan_action(pass.plan, i);
		const cJSON *ann = k8s_obj_at(a->body, "metadata.annotations");
		if (a->object == SBX_OBJ_SANDBOX && a->verb == SBX_VERB_PATCH &&
		    cJSON_GetObjectItemCaseSensitive(ann, SBX_ANNOTATION_IDLE_SUSPENDED_AT)) {
			fx_assert_json_str(a->body, "{\"metadata\":{\"annotations\":"
			                   "{\"agents.x-k8s.io/idle-suspended-at\":null}}}");
			ck_assert_int_eq(a->state, SBX_ACTION_DONE);
			removed = true;
		}
	}
	ck_assert(removed);
	fx_pass_free(&pass);
	cJSON_Delete(sb);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("idle");
	TCase *tc = tcase_create("idle");
	tcase_add_test(tc, policy_is_read_from_the_spec);
	tcase_add_test(tc, last_activity_is_the_latest_known_time);
	tcase_add_test(tc, idleness_applies_only_to_running_claimed_sandboxes_with_a_policy);
	tcase_add_test(tc, publish_interval_is_a_quarter_of_the_timeout_and_at_least_ten_seconds);
	tcase_add_test(tc, pass_is_idle_once_due_and_expiry_comes_first);
	tcase_add_test(tc, idle_suspend_patches_the_mode_at_the_version_judged);
	tcase_add_test(tc, idle_delete_deletes_the_sandbox_at_its_version_or_its_claim);
	tcase_add_test(tc, a_conflict_is_judged_again_other_failures_are_errors);
	tcase_add_test(tc, a_running_sandbox_is_requeued_when_it_becomes_idle);
	tcase_add_test(tc, an_unclaimed_warm_member_is_never_idle);
	tcase_add_test(tc, idle_suspended_sandbox_says_so_and_a_running_one_drops_the_mark);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
