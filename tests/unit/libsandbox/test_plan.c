/*
 * Unit tests of libsandbox/src/plan.c: the pass decision (docs/api.md#sandbox-reconcile
 * steps 1 and 4), the expiry passes (docs/api.md#sandbox-expiry) and their outcome, the requeue
 * delay (docs/api.md#sandbox-reconcile step 5), and execution: failures skip the rest of a step, and
 * AlreadyExists fetches the object and plans the step again once.
 */
#include <stdio.h>
#include <string.h>
#include "fixture.h"

#define PAST "2026-01-02T03:00:00Z"

static const char *status_str(const cJSON *status, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(status, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A Ready sandbox status as a previous pass leaves it. */
static const char *READY_STATUS =
	"{\"selector\":\"agents.x-k8s.io/sandbox-name-hash=374de8f5\","
	"\"podIPs\":[\"127.0.10.7\"],\"nodeName\":\"kwok-node-0\","
	"\"service\":\"my-sandbox\",\"serviceFQDN\":\"my-sandbox.team-a.svc.cluster.local\","
	"\"conditions\":["
	"{\"type\":\"Suspended\",\"status\":\"False\",\"reason\":\"NotSuspended\","
	"\"message\":\"Sandbox is not suspended\",\"observedGeneration\":3,"
	"\"lastTransitionTime\":\"2026-01-02T03:00:00Z\"},"
	"{\"type\":\"PodScheduled\",\"status\":\"True\",\"reason\":\"PodScheduled\","
	"\"message\":\"\",\"observedGeneration\":3,"
	"\"lastTransitionTime\":\"2026-01-02T03:00:00Z\"},"
	"{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"DependenciesReady\","
	"\"message\":\"Pod is Ready; Service Exists\",\"observedGeneration\":3,"
	"\"lastTransitionTime\":\"2026-01-02T03:00:00Z\"}]}";

START_TEST(invalid_input)
{
	sbx_plan *plan = (sbx_plan *)1;
	ck_assert_int_eq(sbx_plan_new(&plan, NULL), ASB_EINVAL);
	cJSON *sb = fx_load("sandbox.json");
	fx_del(sb, "metadata.uid");
	sbx_observed obs = fx_observed(sb);
	ck_assert_int_eq(sbx_plan_new(&plan, &obs), ASB_EINVAL);
	ck_assert_ptr_null(plan);
	ck_assert(strstr(asb_error_last()->message, "team-a/my-sandbox") != NULL);
	fx_set_str(sb, "metadata.uid", FX_UID);
	ck_assert_int_eq(sbx_plan_new(&plan, &obs), 0);
	ck_assert_int_eq(sbx_plan_execute(plan, NULL), ASB_EINVAL);
	ck_assert_ptr_null(sbx_plan_action(plan, 99));
	sbx_plan_free(plan);
	sbx_plan_free(NULL);
	sbx_outcome_dispose(NULL);
	cJSON_Delete(sb);
}
END_TEST

/* sbx_plan_new_take() owns what it is given whatever it returns (valgrind
 * and ASan check that nothing leaks or is freed twice). */
START_TEST(take_owns_its_objects_on_every_path)
{
	sbx_plan *plan = (sbx_plan *)1;
	ck_assert_int_eq(sbx_plan_new_take(&plan, NULL, NULL), ASB_EINVAL);
	ck_assert_ptr_null(plan);

	/* objects that are not those observed: refused, and freed */
	cJSON *sb = fx_load("sandbox.json");
	sbx_observed obs = fx_observed(sb);
	sbx_observed_objects objs = { cJSON_Duplicate(sb, true), cJSON_CreateArray(), NULL, NULL, NULL };
	ck_assert_int_eq(sbx_plan_new_take(&plan, &obs, &objs), ASB_EINVAL);
	ck_assert_ptr_null(plan);
	ck_assert_ptr_null(objs.sandbox);
	ck_assert_ptr_null(objs.pods);
	ck_assert(strstr(asb_error_last()->message, "not those observed") != NULL);

	/* a Sandbox without a uid: refused with its name, and freed */
	cJSON *bad = cJSON_Duplicate(sb, true);
	fx_del(bad, "metadata.uid");
	obs = fx_observed(bad);
	objs = (sbx_observed_objects){ bad, NULL, NULL, NULL, NULL };
	ck_assert_int_eq(sbx_plan_new_take(&plan, &obs, &objs), ASB_EINVAL);
	ck_assert(strstr(asb_error_last()->message, "team-a/my-sandbox") != NULL);
	ck_assert_ptr_null(objs.sandbox);

	/* taken: the Sandbox stays readable through the caller's pointer */
	cJSON *mine = cJSON_Duplicate(sb, true);
	obs = fx_observed(mine);
	objs = (sbx_observed_objects){ mine, NULL, NULL, NULL, NULL };
	ck_assert_int_eq(sbx_plan_new_take(&plan, &obs, &objs), 0);
	ck_assert_ptr_null(objs.sandbox);
	ck_assert_str_eq(k8s_obj_uid(mine), FX_UID);
	ck_assert_int_eq(sbx_plan_pass(plan), SBX_PASS_RECONCILE);
	sbx_plan_free(plan);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(deleting_sandbox_is_skipped)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "metadata.deletionTimestamp", PAST);
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(ps.plan), SBX_PASS_SKIP);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_ptr_null(ps.out.status);
	ck_assert(!ps.out.write_status);
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(pass_decision)
{
	cJSON *sb = fx_load("sandbox.json");
	ck_assert_int_eq(sbx_pass_for(NULL, FX_NOW_MS), SBX_PASS_SKIP);
	ck_assert_int_eq(sbx_pass_for(sb, FX_NOW_MS), SBX_PASS_RECONCILE);
	fx_set_str(sb, "spec.shutdownTime", FX_NOW_STR);
	/* now >= shutdownTime is expired; one millisecond earlier is not. */
	ck_assert_int_eq(sbx_pass_for(sb, FX_NOW_MS - 1), SBX_PASS_RECONCILE);
	ck_assert_int_eq(sbx_pass_for(sb, FX_NOW_MS), SBX_PASS_EXPIRE);
	fx_set(sb, "status", cJSON_Parse("{\"conditions\":[{\"type\":\"Ready\","
	       "\"status\":\"False\",\"reason\":\"ReconcilerError\"}]}"));
	ck_assert_int_eq(sbx_pass_for(sb, FX_NOW_MS), SBX_PASS_EXPIRE);
	fx_set(sb, "status", cJSON_Parse("{\"conditions\":[{\"type\":\"Ready\","
	       "\"status\":\"False\",\"reason\":\"SandboxExpired\"}]}"));
	ck_assert_int_eq(sbx_pass_for(sb, FX_NOW_MS), SBX_PASS_TEARDOWN);
	/* An unparsable time never expires. */
	fx_set_str(sb, "spec.shutdownTime", "yesterday");
	ck_assert_int_eq(sbx_pass_for(sb, FX_NOW_MS), SBX_PASS_RECONCILE);
	fx_set_str(sb, "metadata.deletionTimestamp", PAST);
	ck_assert_int_eq(sbx_pass_for(sb, FX_NOW_MS), SBX_PASS_SKIP);
	cJSON_Delete(sb);
}
END_TEST

/* ---- expiry ---- */

START_TEST(expiry_first_pass_only_marks)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "spec.shutdownTime", PAST);
	fx_set(sb, "status", cJSON_Parse(READY_STATUS));
	cJSON *pod = fx_load("pod-running.json");
	cJSON *pods = fx_list(pod, NULL);
	cJSON *svc = fx_load("service-owned.json");
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = pod;
	obs.service = svc;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(ps.plan), SBX_PASS_EXPIRE);
	/* Nothing is touched in this pass. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	const cJSON *st = ps.out.status;
	fx_assert_condition(st, "Ready", "False", "SandboxExpired", "Sandbox has expired");
	ck_assert_str_eq(cJSON_GetObjectItem(fx_condition(st, "Ready"),
	                                     "lastTransitionTime")->valuestring, FX_NOW_STR);
	ck_assert_ptr_null(fx_condition(st, "PodScheduled"));
	fx_assert_condition(st, "Suspended", "False", "NotSuspended",
	                    "Sandbox is not suspended");
	ck_assert_str_eq(status_str(st, "service"), "my-sandbox");
	fx_assert_json_str(cJSON_GetObjectItem(st, "podIPs"), "[\"127.0.10.7\"]");
	ck_assert(ps.out.write_status);
	ck_assert_int_eq(ps.out.requeue_after_ms, 1);
	ck_assert_ptr_null(ps.out.error);

	/* The second pass tears down (Retain): owned pod and service deleted,
	 * the status keeps only its conditions, no requeue. */
	fx_set(sb, "status", cJSON_Duplicate(ps.out.status, true));
	fx_pass_free(&ps);
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(ps.plan), SBX_PASS_TEARDOWN);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	ck_assert(fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_DELETE, SBX_OBJ_POD,
	                    "my-sandbox")->not_found_ok);
	ck_assert(fx_action(ps.plan, 1, SBX_STEP_SERVICE, SBX_VERB_DELETE,
	                    SBX_OBJ_SERVICE, "my-sandbox")->not_found_ok);
	st = ps.out.status;
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(cJSON_GetArraySize(st), 1);
	fx_assert_condition(st, "Ready", "False", "SandboxExpired", "Sandbox has expired");
	fx_assert_condition(st, "Suspended", "False", "NotSuspended",
	                    "Sandbox is not suspended");
	ck_assert(ps.out.write_status);
	ck_assert_int_eq(ps.out.requeue_after_ms, 0);
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);
	cJSON_Delete(svc);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

/* An expired, already marked Sandbox with an owned pod and service. */
typedef struct {
	cJSON *sb, *pod, *svc;
	sbx_observed obs;
} expired_world;

static void expired_init(expired_world *w, const char *policy)
{
	w->sb = fx_load("sandbox-vct.json");
	fx_set_str(w->sb, "spec.shutdownTime", PAST);
	if (policy)
		fx_set_str(w->sb, "spec.shutdownPolicy", policy);
	fx_set(w->sb, "status", cJSON_Parse(
		"{\"selector\":\"agents.x-k8s.io/sandbox-name-hash=374de8f5\","
		"\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
		"\"reason\":\"SandboxExpired\",\"message\":\"Sandbox has expired\","
		"\"observedGeneration\":1,\"lastTransitionTime\":\"2026-01-02T03:00:01Z\"}]}"));
	w->pod = fx_load("pod-running.json");
	w->svc = fx_load("service-owned.json");
	w->obs = fx_observed(w->sb);
	w->obs.pod = w->pod;
	w->obs.service = w->svc;
}

static void expired_free(expired_world *w)
{
	cJSON_Delete(w->sb);
	cJSON_Delete(w->pod);
	cJSON_Delete(w->svc);
}

START_TEST(teardown_skips_foreign_objects_and_claims)
{
	expired_world w;
	expired_init(&w, "Retain");
	fx_del(w.pod, "metadata.ownerReferences");
	fx_set(w.svc, "metadata.ownerReferences", cJSON_Parse(
		"[{\"apiVersion\":\"v1\",\"kind\":\"X\",\"name\":\"x\",\"uid\":\"x\",\"controller\":true}]"));
	fx_pass ps;
	fx_run(&ps, &w.obs, NULL);
	/* Nothing deleted; PVCs of the VCTs are not touched either. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "selector"));
	ck_assert(ps.out.write_status);
	fx_pass_free(&ps);
	expired_free(&w);
}
END_TEST

START_TEST(teardown_errors_keep_status)
{
	expired_world w;
	expired_init(&w, NULL);
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_POD, SBX_VERB_DELETE, ASB_EINTERNAL, "boom");
	fx_pass ps;
	fx_run(&ps, &w.obs, &srv);
	/* The service delete still runs (another step). */
	ck_assert_int_eq(fx_action(ps.plan, 1, SBX_STEP_SERVICE, SBX_VERB_DELETE,
	                           SBX_OBJ_SERVICE, "my-sandbox")->state,
	                 SBX_ACTION_DONE);
	ck_assert_ptr_null(ps.out.status);
	ck_assert(!ps.out.write_status);
	ck_assert_str_eq(ps.out.error, "failed to delete pod: boom");
	ck_assert_int_eq(ps.out.error_code, ASB_EINTERNAL);
	fx_pass_free(&ps);

	/* Get failures are collected with their own texts. */
	w.obs.pod = NULL;
	w.obs.pod_error = "etcd unavailable";
	w.obs.service = NULL;
	w.obs.service_error = "i/o timeout";
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_str_eq(ps.out.error, "failed to get pod: etcd unavailable\n"
	                 "failed to get service: i/o timeout");
	fx_pass_free(&ps);
	expired_free(&w);
}
END_TEST

START_TEST(teardown_delete_policy_deletes_sandbox)
{
	expired_world w;
	expired_init(&w, "Delete");
	fx_pass ps;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 3);
	fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_DELETE, SBX_OBJ_POD, "my-sandbox");
	fx_action(ps.plan, 1, SBX_STEP_SERVICE, SBX_VERB_DELETE, SBX_OBJ_SERVICE,
	          "my-sandbox");
	fx_action(ps.plan, 2, SBX_STEP_SANDBOX, SBX_VERB_DELETE, SBX_OBJ_SANDBOX,
	          "my-sandbox");
	ck_assert_ptr_null(ps.out.status);
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);

	/* Deleted even when the pod step failed; that error is dropped. */
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_POD, SBX_VERB_DELETE, ASB_EINTERNAL, "boom");
	fx_run(&ps, &w.obs, &srv);
	ck_assert_ptr_null(ps.out.error);
	ck_assert_ptr_null(ps.out.status);
	fx_pass_free(&ps);

	/* Already gone (NotFound) counts as deleted. */
	fx_server gone = { 0 };
	fx_fail(&gone, SBX_OBJ_SANDBOX, SBX_VERB_DELETE, ASB_ENOTFOUND, "not found");
	fx_run(&ps, &w.obs, &gone);
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);

	/* A failed Sandbox delete joins the other errors. */
	fx_fail(&srv, SBX_OBJ_SANDBOX, SBX_VERB_DELETE, ASB_EFORBIDDEN, "nope");
	fx_run(&ps, &w.obs, &srv);
	ck_assert_str_eq(ps.out.error, "failed to delete pod: boom\n"
	                 "failed to delete sandbox: nope");
	ck_assert_int_eq(ps.out.error_code, ASB_EINTERNAL);
	ck_assert_ptr_null(ps.out.status);
	fx_pass_free(&ps);
	expired_free(&w);
}
END_TEST

START_TEST(requeue_until_shutdown)
{
	static const struct { const char *at; long want; } v[] = {
		{ "2026-01-02T03:14:05Z", 600000 },      /* 10 min left */
		{ "2026-01-02T03:04:05.500Z", 2000 },    /* 500 ms left: at least 2 s */
		{ "2026-01-02T03:04:07Z", 2000 },
		{ "2026-01-02T03:04:08Z", 3000 },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cJSON *sb = fx_load("sandbox.json");
		fx_set_str(sb, "spec.shutdownTime", v[i].at);
		sbx_observed obs = fx_observed(sb);
		fx_pass ps;
		fx_run(&ps, &obs, NULL);
		ck_assert_int_eq(sbx_plan_pass(ps.plan), SBX_PASS_RECONCILE);
		ck_assert_int_eq(ps.out.requeue_after_ms, v[i].want);
		fx_pass_free(&ps);
		cJSON_Delete(sb);
	}
	/* No shutdownTime: no requeue. */
	cJSON *sb = fx_load("sandbox.json");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(ps.out.requeue_after_ms, 0);
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(expiry_during_the_pass)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "spec.shutdownTime", "2026-01-02T03:04:05.100Z");
	cJSON *pod = fx_load("pod-running.json");
	cJSON *pods = fx_list(pod, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = pod;
	sbx_plan *plan;
	ck_assert_int_eq(sbx_plan_new(&plan, &obs), 0);
	ck_assert_int_eq(sbx_plan_pass(plan), SBX_PASS_RECONCILE);
	sbx_outcome out;
	/* The actions took 200 ms: expired by the time status is computed. */
	ck_assert_int_eq(sbx_plan_outcome(plan, FX_NOW_MS + 200, &out), 0);
	fx_assert_condition(out.status, "Ready", "False", "SandboxExpired",
	                    "Sandbox has expired");
	ck_assert_ptr_null(fx_condition(out.status, "PodScheduled"));
	ck_assert_int_eq(out.requeue_after_ms, 1);
	sbx_outcome_dispose(&out);
	sbx_plan_free(plan);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(moving_shutdown_later_unexpires)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "spec.shutdownTime", "2026-01-02T04:00:00Z");
	fx_set(sb, "status", cJSON_Parse(
		"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
		"\"reason\":\"SandboxExpired\",\"message\":\"Sandbox has expired\"}]}"));
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_pass(ps.plan), SBX_PASS_RECONCILE);
	fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	fx_assert_condition(ps.out.status, "Ready", "False", "DependenciesNotReady",
	                    "Pod exists with phase: Pending");
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

/* ---- AlreadyExists ---- */

START_TEST(already_exists_takes_the_existing_pod_path)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "old-pod");
	cJSON *existing = fx_load("pod-running.json");
	sbx_observed obs = fx_observed(sb);
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_POD, SBX_VERB_CREATE, ASB_EALREADYEXISTS,
	        "pods \"my-sandbox\" already exists");
	srv.fetch = existing;
	fx_pass ps;
	fx_run(&ps, &obs, &srv);
	ck_assert_int_eq(srv.fetched, 1);
	/* The create is replaced by the existing-pod path: the stale
	 * annotation was removed (applied to the plan's Sandbox), so the
	 * annotation is now set to the existing pod. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_SANDBOX, "my-sandbox");
	ck_assert_int_eq(a->state, SBX_ACTION_DONE);
	a = fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_SANDBOX,
	              "my-sandbox");
	fx_assert_json_str(a->body, "{\"metadata\":{\"annotations\":"
	                   "{\"agents.x-k8s.io/pod-name\":\"my-sandbox\"}}}");
	ck_assert_int_eq(a->state, SBX_ACTION_DONE);
	ck_assert_ptr_null(ps.out.error);
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_pass_free(&ps);

	/* The existing pod may not be adoptable: refused, never looping. */
	fx_del(existing, "metadata.ownerReferences");
	fx_label(existing, SBX_LABEL_NAME_HASH, "cafebabe");
	srv.fetched = 0;
	srv.rules[0].seen = 0;
	fx_run(&ps, &obs, &srv);
	ck_assert_int_eq(srv.fetched, 1);
	ck_assert_int_eq(srv.rules[0].seen, 1);
	ck_assert(strstr(ps.out.error, "cannot adopt unowned pod \"my-sandbox\"") == ps.out.error);
	fx_pass_free(&ps);

	/* The fetch fails: the create fails with the fetch's error. */
	srv.fetch = NULL;
	fx_run(&ps, &obs, &srv);
	a = fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD,
	              "my-sandbox");
	ck_assert_int_eq(a->state, SBX_ACTION_FAILED);
	ck_assert_int_eq(a->rc, ASB_ENOTFOUND);
	ck_assert_str_eq(ps.out.error, "failed to create pod: \"my-sandbox\" not found");
	fx_pass_free(&ps);
	cJSON_Delete(existing);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(already_exists_for_claim_and_service)
{
	cJSON *sb = fx_load("sandbox-vct.json");
	fx_set(sb, "spec.service", cJSON_CreateTrue());
	cJSON *claim = cJSON_Parse(
		"{\"metadata\":{\"name\":\"data-my-sandbox\",\"namespace\":\"team-a\","
		"\"labels\":{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"}},\"spec\":{}}");
	sbx_observed obs = fx_observed(sb);
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_PVC, SBX_VERB_CREATE, ASB_EALREADYEXISTS, "exists");
	srv.fetch = claim;
	fx_pass ps;
	fx_run(&ps, &obs, &srv);
	/* The claim exists unowned with our tracking label: adopted. */
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_PVC, SBX_VERB_PATCH,
	                                SBX_OBJ_PVC, "data-my-sandbox");
	ck_assert_int_eq(a->state, SBX_ACTION_DONE);
	fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);

	/* A Service create colliding with our own Service: just reported. */
	cJSON *svc = fx_load("service-owned.json");
	fx_server srv2 = { 0 };
	fx_fail(&srv2, SBX_OBJ_SERVICE, SBX_VERB_CREATE, ASB_EALREADYEXISTS, "exists");
	srv2.fetch = svc;
	fx_del(sb, "spec.volumeClaimTemplates");
	fx_set(sb, "spec.podTemplate.spec.containers", cJSON_Parse(
		"[{\"name\":\"main\",\"image\":\"x\",\"ports\":[{\"containerPort\":8888,\"name\":\"http\"}]}]"));
	fx_run(&ps, &obs, &srv2);
	ck_assert_int_eq(srv2.fetched, 1);
	ck_assert_ptr_null(ps.out.error);
	ck_assert_str_eq(status_str(ps.out.status, "service"), "my-sandbox");
	fx_pass_free(&ps);
	cJSON_Delete(svc);
	cJSON_Delete(claim);
	cJSON_Delete(sb);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("pass");
	tcase_add_test(tc, invalid_input);
	tcase_add_test(tc, take_owns_its_objects_on_every_path);
	tcase_add_test(tc, deleting_sandbox_is_skipped);
	tcase_add_test(tc, pass_decision);
	suite_add_tcase(s, tc);
	tc = tcase_create("expiry");
	tcase_add_test(tc, expiry_first_pass_only_marks);
	tcase_add_test(tc, teardown_skips_foreign_objects_and_claims);
	tcase_add_test(tc, teardown_errors_keep_status);
	tcase_add_test(tc, teardown_delete_policy_deletes_sandbox);
	tcase_add_test(tc, requeue_until_shutdown);
	tcase_add_test(tc, expiry_during_the_pass);
	tcase_add_test(tc, moving_shutdown_later_unexpires);
	suite_add_tcase(s, tc);
	tc = tcase_create("execute");
	tcase_add_test(tc, already_exists_takes_the_existing_pod_path);
	tcase_add_test(tc, already_exists_for_claim_and_service);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
