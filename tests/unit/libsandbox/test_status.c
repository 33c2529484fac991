/*
 * Unit tests of libsandbox/src/status.c: the conditions of docs/api.md#sandbox-conditions
 * (Ready messages in order, Finished, PodScheduled copying), set-condition
 * semantics, the write decision of docs/api.md#sandbox-reconcile step 6 (no write when unchanged,
 * nodeName-only rule), semantic equality and the status merge patch.
 */
#include <stdio.h>
#include <string.h>
#include "fixture.h"

/* One pass over the fixtures' Sandbox and `pod` (owned, by name and index). */
static void run_with_pod(fx_pass *ps, cJSON *sb, const cJSON *pod)
{
	cJSON *pods = fx_list(pod, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = pod;
	fx_run(ps, &obs, NULL);
	cJSON_Delete(pods);
}

static cJSON *ready_sandbox(void)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	return sb;
}

static void set_pod_condition(cJSON *pod, const char *type, const char *json)
{
	cJSON *conds = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "status"), "conditions");
	for (int i = cJSON_GetArraySize(conds) - 1; i >= 0; i--) {
		cJSON *c = cJSON_GetArrayItem(conds, i);
		if (strcmp(cJSON_GetObjectItem(c, "type")->valuestring, type) == 0)
			cJSON_DeleteItemFromArray(conds, i);
	}
	if (json)
		cJSON_AddItemToArray(conds, cJSON_Parse(json));
}

START_TEST(coming_up)
{
	/* no status, no Ready yet, or Ready False because the Pod is not Ready */
	ck_assert(sbx_status_coming_up(NULL));
	cJSON *st = cJSON_Parse("{\"selector\":\"x\"}");
	ck_assert(sbx_status_coming_up(st));
	cJSON_Delete(st);
	st = cJSON_Parse("{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
	                 "\"reason\":\"DependenciesNotReady\"}]}");
	ck_assert(sbx_status_coming_up(st));
	cJSON_Delete(st);
	/* Ready, an error, a suspended Sandbox: written at once */
	static const char *const not_up[] = {
		"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"DependenciesReady\"}]}",
		"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"ReconcilerError\"}]}",
		"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"SandboxSuspended\"}]}",
		"{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\",\"reason\":\"DependenciesNotReady\"}]}",
	};
	for (size_t i = 0; i < sizeof(not_up) / sizeof(not_up[0]); i++) {
		st = cJSON_Parse(not_up[i]);
		ck_assert_msg(!sbx_status_coming_up(st), "%s", not_up[i]);
		cJSON_Delete(st);
	}
}
END_TEST

START_TEST(ready_messages_in_order)
{
	cJSON *sb = ready_sandbox();
	cJSON *pod = fx_load("pod-running.json");
	fx_pass ps;

	fx_set_str(pod, "status.phase", "Pending");
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "Ready", "False", "DependenciesNotReady",
	                    "Pod exists with phase: Pending");
	fx_pass_free(&ps);

	fx_set_str(pod, "status.phase", "Running");
	set_pod_condition(pod, "Ready", "{\"type\":\"Ready\",\"status\":\"False\"}");
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "Ready", "False", "DependenciesNotReady",
	                    "Pod is Running but not Ready");
	fx_pass_free(&ps);

	set_pod_condition(pod, "Ready", NULL);
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "Ready", "False", "DependenciesNotReady",
	                    "Pod is Running but not Ready");
	fx_pass_free(&ps);

	set_pod_condition(pod, "Ready", "{\"type\":\"Ready\",\"status\":\"True\"}");
	fx_del(pod, "status.podIPs");
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "Ready", "False", "DependenciesNotReady",
	                    "Pod is Ready but has no podIPs yet");
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "podIPs"));
	fx_pass_free(&ps);

	fx_set(pod, "status.podIPs", cJSON_Parse("[{\"ip\":\"127.0.10.7\"},{\"ip\":\"fd00::7\"}]"));
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_assert_json_str(cJSON_GetObjectItem(ps.out.status, "podIPs"),
	                   "[\"127.0.10.7\",\"fd00::7\"]");
	fx_pass_free(&ps);

	/* Service required but missing (its create failed): not Ready. */
	fx_set(sb, "spec.service", cJSON_CreateTrue());
	cJSON *pods = fx_list(pod, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = pod;
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_SERVICE, SBX_VERB_CREATE, ASB_ETRANSPORT, "connection reset");
	fx_run(&ps, &obs, &srv);
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError",
	                    "Error seen: failed to create service: connection reset");
	fx_pass_free(&ps);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(finished_on_terminal_phase)
{
	cJSON *sb = ready_sandbox();
	cJSON *pod = fx_load("pod-running.json");
	fx_pass ps;

	fx_set_str(pod, "status.phase", "Succeeded");
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "Finished", "True", "PodSucceeded",
	                    "Pod completed successfully");
	fx_assert_condition(ps.out.status, "Ready", "False", "PodSucceeded",
	                    "Pod completed successfully");
	/* Not restarted, not deleted. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_set(sb, "status", cJSON_Duplicate(ps.out.status, true));
	fx_pass_free(&ps);

	fx_set_str(pod, "status.phase", "Failed");
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "Finished", "True", "PodFailed", "Pod failed");
	fx_assert_condition(ps.out.status, "Ready", "False", "PodFailed", "Pod failed");
	fx_pass_free(&ps);

	/* Back to Running (e.g. a new pod): Finished is removed. */
	fx_set_str(pod, "status.phase", "Running");
	run_with_pod(&ps, sb, pod);
	ck_assert_ptr_null(fx_condition(ps.out.status, "Finished"));
	fx_pass_free(&ps);

	/* An unowned terminal pod gives no Finished (Suspended mode). */
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	fx_set_str(pod, "status.phase", "Succeeded");
	fx_del(pod, "metadata.ownerReferences");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	fx_run(&ps, &obs, NULL);
	ck_assert_ptr_null(fx_condition(ps.out.status, "Finished"));
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(pod_scheduled_is_copied)
{
	cJSON *sb = ready_sandbox();
	cJSON *pod = fx_load("pod-running.json");
	fx_set_str(pod, "status.phase", "Pending");
	set_pod_condition(pod, "PodScheduled",
		"{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\","
		"\"message\":\"0/3 nodes are available: 3 Insufficient cpu.\"}");
	fx_pass ps;
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "PodScheduled", "False", "Unschedulable",
	                    "0/3 nodes are available: 3 Insufficient cpu.");
	fx_pass_free(&ps);

	/* Empty reason and not True: PodSchedulingUnknown. */
	set_pod_condition(pod, "PodScheduled",
		"{\"type\":\"PodScheduled\",\"status\":\"False\",\"message\":\"waiting\"}");
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "PodScheduled", "False",
	                    "PodSchedulingUnknown", "waiting");
	fx_pass_free(&ps);

	/* None yet. */
	set_pod_condition(pod, "PodScheduled", NULL);
	run_with_pod(&ps, sb, pod);
	fx_assert_condition(ps.out.status, "PodScheduled", "Unknown",
	                    "PodSchedulingUnknown",
	                    "Pod has not reported a PodScheduled condition yet");
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(unchanged_status_is_not_written)
{
	cJSON *sb = ready_sandbox();
	cJSON *pod = fx_load("pod-running.json");
	fx_pass ps;
	run_with_pod(&ps, sb, pod);
	ck_assert(ps.out.write_status);
	/* As the API server would store it. */
	fx_set(sb, "status", cJSON_Duplicate(ps.out.status, true));
	fx_pass_free(&ps);

	run_with_pod(&ps, sb, pod);
	ck_assert(!ps.out.write_status);
	ck_assert(sbx_status_equal(cJSON_GetObjectItem(sb, "status"), ps.out.status));
	fx_pass_free(&ps);

	/* Later: same verdicts, so no new transition times and no write. */
	cJSON *pods = fx_list(pod, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = pod;
	obs.now_ms = FX_NOW_MS + 60000;
	fx_run(&ps, &obs, NULL);
	ck_assert(!ps.out.write_status);
	ck_assert_str_eq(cJSON_GetObjectItem(fx_condition(ps.out.status, "Ready"),
	                                     "lastTransitionTime")->valuestring, FX_NOW_STR);
	fx_pass_free(&ps);

	/* A new generation changes observedGeneration: written. */
	fx_set(sb, "metadata.generation", cJSON_CreateNumber(4));
	fx_run(&ps, &obs, NULL);
	ck_assert(ps.out.write_status);
	const cJSON *ready = fx_condition(ps.out.status, "Ready");
	ck_assert_int_eq(cJSON_GetObjectItem(ready, "observedGeneration")->valueint, 4);
	/* Status did not flip: the transition time stays. */
	ck_assert_str_eq(cJSON_GetObjectItem(ready, "lastTransitionTime")->valuestring,
	                 FX_NOW_STR);
	fx_pass_free(&ps);

	/* Flip to not Ready: a new transition time. */
	set_pod_condition(pod, "Ready", "{\"type\":\"Ready\",\"status\":\"False\"}");
	cJSON_Delete(pods);
	pods = fx_list(pod, NULL);
	obs.pods = pods;
	fx_run(&ps, &obs, NULL);
	ready = fx_condition(ps.out.status, "Ready");
	ck_assert_str_eq(cJSON_GetObjectItem(ready, "lastTransitionTime")->valuestring,
	                 "2026-01-02T03:05:05Z");
	fx_pass_free(&ps);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(node_name_only_change_waits_unless_ready)
{
	cJSON *sb = ready_sandbox();
	cJSON *pod = fx_load("pod-running.json");
	set_pod_condition(pod, "Ready", "{\"type\":\"Ready\",\"status\":\"False\"}");
	fx_pass ps;
	run_with_pod(&ps, sb, pod);
	fx_set(sb, "status", cJSON_Duplicate(ps.out.status, true));
	fx_pass_free(&ps);

	/* Only nodeName moves, not Ready: no write. */
	fx_set_str(pod, "spec.nodeName", "kwok-node-1");
	run_with_pod(&ps, sb, pod);
	ck_assert_str_eq(cJSON_GetObjectItem(ps.out.status, "nodeName")->valuestring,
	                 "kwok-node-1");
	ck_assert(!sbx_status_equal(cJSON_GetObjectItem(sb, "status"), ps.out.status));
	ck_assert(!ps.out.write_status);
	fx_pass_free(&ps);

	/* The same change along with Ready turning True: written. */
	set_pod_condition(pod, "Ready", "{\"type\":\"Ready\",\"status\":\"True\"}");
	run_with_pod(&ps, sb, pod);
	ck_assert(ps.out.write_status);
	fx_pass_free(&ps);

	/* Directly: nodeName-only differences while Ready is True are written. */
	cJSON *a = cJSON_Parse("{\"nodeName\":\"n1\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}");
	cJSON *b = cJSON_Parse("{\"nodeName\":\"n2\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}");
	ck_assert(sbx_status_needs_write(a, b));
	cJSON_Delete(a);
	cJSON_Delete(b);
	a = cJSON_Parse("{\"nodeName\":\"n1\"}");
	b = cJSON_Parse("{\"nodeName\":\"n2\"}");
	ck_assert(!sbx_status_needs_write(a, b));
	ck_assert(!sbx_status_needs_write(NULL, b));
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(semantic_equality)
{
	cJSON *a = cJSON_Parse("{\"service\":\"\",\"podIPs\":[],\"conditions\":"
	                       "[{\"type\":\"Ready\",\"observedGeneration\":0,\"status\":\"True\"}]}");
	cJSON *b = cJSON_Parse("{\"conditions\":[{\"status\":\"True\",\"type\":\"Ready\"}]}");
	ck_assert(sbx_status_equal(a, b));
	ck_assert(sbx_status_equal(NULL, NULL));
	cJSON *empty = cJSON_Parse("{\"podIPs\":null,\"conditions\":[]}");
	ck_assert(sbx_status_equal(NULL, empty));
	cJSON_Delete(empty);
	cJSON *c = cJSON_Parse("{\"podIPs\":[\"1.2.3.4\"],\"conditions\":"
	                       "[{\"status\":\"True\",\"type\":\"Ready\"}]}");
	ck_assert(!sbx_status_equal(b, c));
	cJSON *d = cJSON_Parse("{\"conditions\":[{\"status\":\"False\",\"type\":\"Ready\"}]}");
	ck_assert(!sbx_status_equal(b, d));
	cJSON *e = cJSON_Parse("{\"conditions\":[{\"status\":\"True\",\"type\":\"Ready\","
	                       "\"observedGeneration\":2}]}");
	ck_assert(!sbx_status_equal(b, e));
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON_Delete(d);
	cJSON_Delete(e);
}
END_TEST

START_TEST(status_merge_patch)
{
	cJSON *old = cJSON_Parse(
		"{\"selector\":\"s\",\"podIPs\":[\"1.1.1.1\"],\"nodeName\":\"n\","
		"\"service\":\"x\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
		"{\"type\":\"PodScheduled\",\"status\":\"True\"}]}");
	cJSON *new = cJSON_Parse(
		"{\"selector\":\"s\",\"service\":\"\",\"nodeName\":\"m\","
		"\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}");
	cJSON *p = sbx_status_patch(old, new);
	fx_assert_json_str(p, "{\"status\":{\"podIPs\":null,\"nodeName\":\"m\","
	                   "\"service\":null,\"conditions\":[{\"type\":\"Ready\","
	                   "\"status\":\"False\"}]}}");
	cJSON_Delete(p);
	p = sbx_status_patch(NULL, new);
	fx_assert_json_str(p, "{\"status\":{\"selector\":\"s\",\"nodeName\":\"m\","
	                   "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}");
	cJSON_Delete(p);
	p = sbx_status_patch(new, new);
	fx_assert_json_str(p, "{\"status\":{}}");
	cJSON_Delete(p);
	cJSON_Delete(old);
	cJSON_Delete(new);
}
END_TEST

START_TEST(conditions_carry_generation_and_time)
{
	cJSON *sb = ready_sandbox();
	fx_set(sb, "metadata.generation", cJSON_CreateNumber(7));
	cJSON *pod = fx_load("pod-running.json");
	fx_pass ps;
	run_with_pod(&ps, sb, pod);
	const char *types[] = { "Ready", "Suspended", "PodScheduled" };
	for (int i = 0; i < 3; i++) {
		const cJSON *c = fx_condition(ps.out.status, types[i]);
		ck_assert_ptr_nonnull(c);
		ck_assert_int_eq(cJSON_GetObjectItem(c, "observedGeneration")->valueint, 7);
		ck_assert_str_eq(cJSON_GetObjectItem(c, "lastTransitionTime")->valuestring,
		                 FX_NOW_STR);
	}
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ps.out.status, "conditions")), 3);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("status");
	TCase *tc = tcase_create("conditions");
	tcase_add_test(tc, coming_up);
	tcase_add_test(tc, ready_messages_in_order);
	tcase_add_test(tc, finished_on_terminal_phase);
	tcase_add_test(tc, pod_scheduled_is_copied);
	tcase_add_test(tc, conditions_carry_generation_and_time);
	suite_add_tcase(s, tc);
	tc = tcase_create("write");
	tcase_add_test(tc, unchanged_status_is_not_written);
	tcase_add_test(tc, node_name_only_change_waits_unless_ready);
	tcase_add_test(tc, semantic_equality);
	tcase_add_test(tc, status_merge_patch);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
