/*
 * Unit tests of libsandbox/src/plan_pod.c: the Pod step of docs/api.md#pod-management
 * (create body, lookup, adoption, refusals, MultiplePods, Suspended), the
 * metadata reconciliation of docs/api.md#pod-metadata and the extension labels of docs/api.md#extension-labels, each
 * checked with the status the pass ends with (docs/api.md#sandbox-conditions).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fixture.h"

#define SELECTOR "agents.x-k8s.io/sandbox-name-hash=374de8f5"
#define SET_POD_NAME "{\"metadata\":{\"annotations\":{\"agents.x-k8s.io/pod-name\":\"my-sandbox\"}}}"
#define DROP_POD_NAME "{\"metadata\":{\"annotations\":{\"agents.x-k8s.io/pod-name\":null}}}"

static void set_controller(cJSON *obj, const char *api_version, const char *kind,
                           const char *name, const char *uid)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
	         "[{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"name\":\"%s\","
	         "\"uid\":\"%s\",\"controller\":true}]", api_version, kind, name, uid);
	fx_set(obj, "metadata.ownerReferences", cJSON_Parse(buf));
}

static const char *status_str(const cJSON *status, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(status, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- create ---- */

START_TEST(new_sandbox_creates_pod)
{
	cJSON *sb = fx_load("sandbox.json");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);

	ck_assert_int_eq(sbx_plan_pass(ps.plan), SBX_PASS_RECONCILE);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE,
	                                SBX_OBJ_POD, "my-sandbox");
	cJSON *want = fx_load("expected-pod.json");
	fx_assert_json(a->body, want);
	/* System keys of the template never reach the Pod. */
	ck_assert_str_eq(k8s_obj_label(a->body, SBX_LABEL_NAME_HASH), FX_HASH);
	ck_assert_ptr_null(k8s_obj_label(a->body, SBX_LABEL_ADOPTABLE));
	ck_assert_ptr_null(k8s_obj_label(a->body, "extensions.agents.x-k8s.io/anything"));
	ck_assert_ptr_null(k8s_obj_annotation(a->body, SBX_ANNOTATION_TRACE_CONTEXT));
	ck_assert_ptr_null(k8s_obj_annotation(a->body, SBX_ANNOTATION_POD_NAME));
	ck_assert_int_eq(a->state, SBX_ACTION_DONE);
	a = fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_SANDBOX,
	              "my-sandbox");
	fx_assert_json_str(a->body, SET_POD_NAME);

	const cJSON *st = ps.out.status;
	ck_assert(ps.out.write_status);
	ck_assert_ptr_null(ps.out.error);
	ck_assert_int_eq(ps.out.requeue_after_ms, 0);
	ck_assert_str_eq(status_str(st, "selector"), SELECTOR);
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "podIPs"));
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "nodeName"));
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "service"));
	fx_assert_condition(st, "Ready", "False", "DependenciesNotReady",
	                    "Pod exists with phase: Pending");
	fx_assert_condition(st, "Suspended", "False", "NotSuspended",
	                    "Sandbox is not suspended");
	fx_assert_condition(st, "PodScheduled", "Unknown", "PodSchedulingUnknown",
	                    "Pod has not reported a PodScheduled condition yet");
	ck_assert_ptr_null(fx_condition(st, "Finished"));
	const cJSON *ready = fx_condition(st, "Ready");
	ck_assert_int_eq(cJSON_GetObjectItem(ready, "observedGeneration")->valueint, 3);
	ck_assert_str_eq(cJSON_GetObjectItem(ready, "lastTransitionTime")->valuestring,
	                 FX_NOW_STR);
	cJSON_Delete(want);
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(pod_spec_is_copied_as_given)
{
	/* The core defaults nothing in the pod spec (automountServiceAccountToken,
	 * DNS, ... are the extension controllers' business, docs/api.md#pod-management, #secure-defaults). */
	cJSON *sb = fx_load("sandbox.json");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE,
	                                SBX_OBJ_POD, "my-sandbox");
	fx_assert_json(k8s_obj_at(a->body, "spec"), k8s_obj_at(sb, "spec.podTemplate.spec"));
	ck_assert_ptr_null(k8s_obj_at(a->body, "spec.automountServiceAccountToken"));
	fx_pass_free(&ps);

	fx_set(sb, "spec.podTemplate.spec.automountServiceAccountToken", cJSON_CreateTrue());
	fx_set(sb, "spec.podTemplate.spec.dnsPolicy", cJSON_CreateString("None"));
	fx_run(&ps, &obs, NULL);
	a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	fx_assert_json(k8s_obj_at(a->body, "spec"), k8s_obj_at(sb, "spec.podTemplate.spec"));
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(created_by_is_normalised)
{
	static const struct { const char *in, *out; } v[] = {
		{ "go-client", "go-client" }, { "python-client", "python-client" },
		{ "controller", "controller" }, { "my-script", "unknown" },
		{ "", "unknown" }, { NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cJSON *sb = fx_load("sandbox.json");
		fx_label(sb, SBX_LABEL_CREATED_BY, v[i].in);
		sbx_observed obs = fx_observed(sb);
		fx_pass ps;
		fx_run(&ps, &obs, NULL);
		const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE,
		                                SBX_OBJ_POD, "my-sandbox");
		const char *got = k8s_obj_label(a->body, SBX_LABEL_CREATED_BY);
		if (v[i].out)
			ck_assert_str_eq(got, v[i].out);
		else
			ck_assert_ptr_null(got);
		fx_pass_free(&ps);
		cJSON_Delete(sb);
	}
}
END_TEST

START_TEST(extension_labels_follow_the_controller)
{
	static const struct {
		const char *api_version, *kind;
		bool warm, tref;
	} v[] = {
		{ "extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", true, true },
		{ "extensions.agents.x-k8s.io/v1alpha1", "SandboxWarmPool", true, true },
		{ "extensions.agents.x-k8s.io/v1beta1", "SandboxClaim", false, true },
		{ "apps/v1", "SandboxWarmPool", false, false },
		{ NULL, NULL, false, false },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cJSON *sb = fx_load("sandbox.json");
		fx_label(sb, SBX_LABEL_WARM_POOL_SANDBOX, "91dd7983");
		fx_label(sb, SBX_LABEL_TEMPLATE_REF_HASH, "9d22159f");
		fx_label(sb, "agents.x-k8s.io/claim-uid", "claim-1");
		if (v[i].kind)
			set_controller(sb, v[i].api_version, v[i].kind, "pool", "pool-uid");
		sbx_observed obs = fx_observed(sb);
		fx_pass ps;
		fx_run(&ps, &obs, NULL);
		const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE,
		                                SBX_OBJ_POD, "my-sandbox");
		const char *w = k8s_obj_label(a->body, SBX_LABEL_WARM_POOL_SANDBOX);
		const char *t = k8s_obj_label(a->body, SBX_LABEL_TEMPLATE_REF_HASH);
		if (v[i].warm)
			ck_assert_str_eq(w, "91dd7983");
		else
			ck_assert_ptr_null(w);
		if (v[i].tref)
			ck_assert_str_eq(t, "9d22159f");
		else
			ck_assert_ptr_null(t);
		ck_assert_ptr_null(k8s_obj_label(a->body, "agents.x-k8s.io/claim-uid"));
		fx_pass_free(&ps);
		cJSON_Delete(sb);
	}
}
END_TEST

START_TEST(create_without_template_metadata_omits_annotations)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_del(sb, "spec.podTemplate.metadata");
	fx_del(sb, "metadata.labels");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE,
	                                SBX_OBJ_POD, "my-sandbox");
	fx_assert_json_str(k8s_obj_at(a->body, "metadata.labels"),
	                   "{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"}");
	ck_assert_ptr_null(k8s_obj_at(a->body, "metadata.annotations"));
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(vct_volumes_are_merged)
{
	/* The example of docs/api.md#pod-management: [data(emptyDir), config(configMap)]
	 * + VCT data => [config(configMap), data(pvc data-<sandbox>)]. */
	cJSON *sb = fx_load("sandbox-vct.json");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 3);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_PVC, SBX_VERB_CREATE,
	                                SBX_OBJ_PVC, "data-my-sandbox");
	cJSON *want = fx_load("expected-pvc-data.json");
	fx_assert_json(a->body, want);
	cJSON_Delete(want);
	a = fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD,
	              "my-sandbox");
	want = fx_load("expected-pod-vct.json");
	fx_assert_json(a->body, want);
	cJSON_Delete(want);
	fx_action(ps.plan, 2, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_SANDBOX,
	          "my-sandbox");
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

/* ---- lookup ---- */

START_TEST(deleted_pod_is_recreated)
{
	/* docs/api.md#edge-cases: Pod deleted out-of-band => stale annotation removed, new Pod. */
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	fx_set(sb, "status", cJSON_Parse(
		"{\"selector\":\"" SELECTOR "\",\"podIPs\":[\"127.0.10.7\"],"
		"\"nodeName\":\"kwok-node-0\",\"conditions\":[{\"type\":\"Ready\","
		"\"status\":\"True\",\"reason\":\"DependenciesReady\",\"message\":"
		"\"Pod is Ready\",\"observedGeneration\":3,\"lastTransitionTime\":"
		"\"2026-01-01T00:00:00Z\"}]}"));
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* The annotation already names the Pod about to be created (a warm
	 * pool's member is created so): kept, no Sandbox write around the
	 * create. Upstream removes it and writes it back. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");

	const cJSON *st = ps.out.status;
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "podIPs"));
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "nodeName"));
	ck_assert_str_eq(status_str(st, "selector"), SELECTOR);
	fx_assert_condition(st, "Ready", "False", "DependenciesNotReady",
	                    "Pod exists with phase: Pending");
	/* The status flipped: a new transition time. */
	ck_assert_str_eq(cJSON_GetObjectItem(fx_condition(st, "Ready"),
	                                     "lastTransitionTime")->valuestring,
	                 FX_NOW_STR);
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(stale_pod_name_of_another_pod)
{
	/* The annotation names a Pod that is gone and is not the Sandbox's own
	 * name: removed, the Pod created under the Sandbox's name, annotated. */
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "old-pod");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 3);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_SANDBOX, "my-sandbox");
	fx_assert_json_str(a->body, DROP_POD_NAME);
	fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	a = fx_action(ps.plan, 2, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_SANDBOX,
	              "my-sandbox");
	fx_assert_json_str(a->body, SET_POD_NAME);
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(failed_create_yields_no_pod)
{
	cJSON *sb = fx_load("sandbox.json");
	sbx_observed obs = fx_observed(sb);
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_POD, SBX_VERB_CREATE, ASB_EFORBIDDEN,
	        "pods \"my-sandbox\" is forbidden: exceeded quota");
	fx_pass ps;
	fx_run(&ps, &obs, &srv);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE,
	                                SBX_OBJ_POD, "my-sandbox");
	ck_assert_int_eq(a->state, SBX_ACTION_FAILED);
	ck_assert_int_eq(a->rc, ASB_EFORBIDDEN);
	/* The annotation is not set for a Pod that was not made. */
	a = fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_SANDBOX,
	              "my-sandbox");
	ck_assert_int_eq(a->state, SBX_ACTION_SKIPPED);
	ck_assert_int_eq(srv.applied, 1);

	const cJSON *st = ps.out.status;
	fx_assert_condition(st, "Ready", "False", "ReconcilerError",
	                    "Error seen: failed to create pod: pods \"my-sandbox\" "
	                    "is forbidden: exceeded quota");
	fx_assert_condition(st, "PodScheduled", "Unknown", "PodSchedulingUnknown",
	                    "Pod state is unknown. Pod scheduling cannot be determined");
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "selector"));
	ck_assert_str_eq(ps.out.error, "failed to create pod: pods \"my-sandbox\" "
	                 "is forbidden: exceeded quota");
	ck_assert_int_eq(ps.out.error_code, ASB_EFORBIDDEN);
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(owned_pod_in_sync_needs_no_write)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	cJSON *pod = fx_load("pod-running.json");
	cJSON *pods = fx_list(pod, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	const cJSON *st = ps.out.status;
	fx_assert_condition(st, "Ready", "True", "DependenciesReady", "Pod is Ready");
	fx_assert_json_str(cJSON_GetObjectItem(st, "podIPs"), "[\"127.0.10.7\"]");
	ck_assert_str_eq(status_str(st, "nodeName"), "kwok-node-0");
	ck_assert_str_eq(status_str(st, "selector"), SELECTOR);
	/* The pod's PodScheduled has no reason: True => "PodScheduled". */
	fx_assert_condition(st, "PodScheduled", "True", "PodScheduled", "");
	fx_pass_free(&ps);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(stale_annotation_removed_owned_pod_wins)
{
	/* The annotation names a pod that is gone: removed (NotFound branch),
	 * the owned pod from the index is used and becomes the annotation. */
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "old-pod");
	cJSON *pod = fx_load("pod-running.json");
	cJSON *pods = fx_list(pod, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_SANDBOX, "my-sandbox");
	fx_assert_json_str(a->body, DROP_POD_NAME);
	a = fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_SANDBOX,
	              "my-sandbox");
	fx_assert_json_str(a->body, SET_POD_NAME);
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_pass_free(&ps);

	/* The annotation names an existing unowned pod: the owned one still
	 * wins, the unowned one is neither adopted nor deleted. */
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "other-pod");
	cJSON *other = fx_load("pod-running.json");
	fx_set_str(other, "metadata.name", "other-pod");
	fx_set_str(other, "metadata.uid", "other-uid");
	fx_del(other, "metadata.ownerReferences");
	fx_label(other, SBX_LABEL_ADOPTABLE, "true");
	obs.pod = other;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	fx_assert_json_str(fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, DROP_POD_NAME);
	fx_assert_json_str(fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, SET_POD_NAME);
	fx_pass_free(&ps);
	cJSON_Delete(other);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(owned_pod_missing_from_index_is_counted_and_relabelled)
{
	cJSON *sb = fx_load("sandbox.json");
	cJSON *pod = fx_load("pod-running.json");
	fx_label(pod, SBX_LABEL_NAME_HASH, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_POD, "my-sandbox");
	fx_assert_json_str(a->body, "{\"metadata\":{\"labels\":{"
	                   "\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"}}}");
	fx_assert_json_str(fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, SET_POD_NAME);
	fx_pass_free(&ps);

	/* The same pod also in the index counts once, not twice. */
	cJSON *pods = fx_list(pod, NULL);
	obs.pods = pods;
	fx_run(&ps, &obs, NULL);
	ck_assert_ptr_null(ps.out.error);
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_pass_free(&ps);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

/* ---- adoption and refusals ---- */

START_TEST(unowned_pod_with_adoptable_label_is_adopted)
{
	cJSON *sb = fx_load("sandbox.json");
	cJSON *pod = fx_load("pod-running.json");
	fx_del(pod, "metadata.ownerReferences");
	fx_label(pod, SBX_LABEL_NAME_HASH, NULL);
	fx_label(pod, SBX_LABEL_ADOPTABLE, "true");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_POD, "my-sandbox");
	/* One merge patch: ownership and metadata together. */
	fx_assert_json_str(a->body,
		"{\"metadata\":{\"labels\":{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"agents.x-k8s.io/v1beta1\","
		"\"kind\":\"Sandbox\",\"name\":\"my-sandbox\","
		"\"uid\":\"6b1d7a52-0000-4000-8000-000000000001\","
		"\"controller\":true,\"blockOwnerDeletion\":true}]}}");
	fx_assert_json_str(fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, SET_POD_NAME);
	/* Adopted => owned: its IPs and node are reported. */
	fx_assert_json_str(cJSON_GetObjectItem(ps.out.status, "podIPs"), "[\"127.0.10.7\"]");
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(unowned_pod_with_matching_hash_is_adopted)
{
	cJSON *sb = fx_load("sandbox.json");
	cJSON *pod = fx_load("pod-running.json");
	/* A non-controller reference survives adoption. */
	fx_set(pod, "metadata.ownerReferences", cJSON_Parse(
		"[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"cm\",\"uid\":\"cm-uid\"}]"));
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_POD, "my-sandbox");
	fx_assert_json_str(a->body,
		"{\"metadata\":{\"ownerReferences\":["
		"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"cm\",\"uid\":\"cm-uid\"},"
		"{\"apiVersion\":\"agents.x-k8s.io/v1beta1\","
		"\"kind\":\"Sandbox\",\"name\":\"my-sandbox\","
		"\"uid\":\"6b1d7a52-0000-4000-8000-000000000001\","
		"\"controller\":true,\"blockOwnerDeletion\":true}]}}");
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(unowned_pod_without_authorisation_is_refused)
{
	cJSON *sb = fx_load("sandbox.json");
	cJSON *pod = fx_load("pod-running.json");
	fx_del(pod, "metadata.ownerReferences");
	fx_label(pod, SBX_LABEL_NAME_HASH, "deadbeef");
	fx_label(pod, SBX_LABEL_ADOPTABLE, "yes");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* No adoption, no create, no annotation. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	static const char *err =
		"cannot adopt unowned pod \"my-sandbox\": missing required pool "
		"authorization label (\"agents.x-k8s.io/adoptable\") or sandbox "
		"tracking label (\"agents.x-k8s.io/sandbox-name-hash\")";
	ck_assert_str_eq(ps.out.error, err);
	ck_assert_int_eq(ps.out.error_code, ASB_ERROR);
	char msg[512];
	snprintf(msg, sizeof(msg), "Error seen: %s", err);
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError", msg);
	fx_assert_condition(ps.out.status, "PodScheduled", "Unknown",
	                    "PodSchedulingUnknown",
	                    "Pod state is unknown. Pod scheduling cannot be determined");
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "selector"));
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(pod_owned_by_other_is_refused)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	cJSON *pod = fx_load("pod-running.json");
	set_controller(pod, "apps/v1", "ReplicaSet", "rs-1", "rs-uid-9");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* Only the annotation is cleared; the pod is left alone. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_assert_json_str(fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, DROP_POD_NAME);
	ck_assert_str_eq(ps.out.error, "pod \"my-sandbox\" is owned by ReplicaSet/rs-1 "
	                 "(UID: rs-uid-9), not by sandbox \"my-sandbox\"");
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError",
	                    "Error seen: pod \"my-sandbox\" is owned by ReplicaSet/rs-1 "
	                    "(UID: rs-uid-9), not by sandbox \"my-sandbox\"");
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "podIPs"));
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(multiple_owned_pods_refuse_to_choose)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set(sb, "spec.service", cJSON_CreateTrue());
	cJSON *p1 = fx_load("pod-running.json");
	cJSON *p2 = fx_load("pod-running.json");
	fx_set_str(p2, "metadata.name", "my-sandbox-2");
	fx_set_str(p2, "metadata.uid", "pod-uid-2");
	cJSON *pods = fx_list(p1, p2, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* No create, no delete, and the Service step is skipped too. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	static const char *msg = "multiple Pods (2) are controlled by this Sandbox; "
	                         "refusing to choose or create a Pod";
	fx_assert_condition(ps.out.status, "Ready", "False", "MultiplePods", msg);
	fx_assert_condition(ps.out.status, "PodScheduled", "Unknown",
	                    "PodSchedulingUnknown",
	                    "Pod state is unknown. Pod scheduling cannot be determined");
	/* Surfaced by condition and event, not returned as an error. */
	ck_assert_ptr_null(ps.out.error);
	ck_assert_int_eq(ps.out.error_code, 0);
	ck_assert_str_eq(ps.out.multiple_pods_event, msg);
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "service"));

	/* Next pass with that status: no new event (only on transition). */
	fx_set(sb, "status", cJSON_Duplicate(ps.out.status, true));
	fx_pass_free(&ps);
	fx_run(&ps, &obs, NULL);
	ck_assert_ptr_null(ps.out.multiple_pods_event);
	ck_assert(!ps.out.write_status);
	fx_pass_free(&ps);

	/* Suspended: suspension cannot be confirmed. */
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_assert_condition(ps.out.status, "Suspended", "Unknown", "PodStateUnknown",
	                    "Pod state is unknown. Sandbox suspension cannot be confirmed");
	fx_pass_free(&ps);
	cJSON_Delete(pods);
	cJSON_Delete(p1);
	cJSON_Delete(p2);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(owned_pods_of_other_namespaces_are_not_counted)
{
	/* The index spans namespaces; a pod in another namespace carrying this
	 * Sandbox's UID as controller is neither counted nor used. */
	cJSON *sb = fx_load("sandbox.json");
	cJSON *here = fx_load("pod-running.json");
	cJSON *there = fx_load("pod-running.json");
	fx_set_str(there, "metadata.namespace", "team-b");
	fx_set_str(there, "metadata.name", "elsewhere");
	fx_set_str(there, "metadata.uid", "pod-uid-2");
	fx_set_str(there, "status.podIP", "127.0.99.9");
	fx_set(there, "status.podIPs", cJSON_Parse("[{\"ip\":\"127.0.99.9\"}]"));
	cJSON *pods = fx_list(there, here, NULL);
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = here;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady", "Pod is Ready");
	fx_assert_json_str(cJSON_GetObjectItem(ps.out.status, "podIPs"), "[\"127.0.10.7\"]");
	fx_pass_free(&ps);

	/* Only the other namespace's pod: ours is created, not that one used. */
	cJSON *only = fx_list(there, NULL);
	obs.pods = only;
	obs.pod = NULL;
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, NULL);
	obs.sandbox = sb;
	fx_run(&ps, &obs, NULL);
	fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "podIPs"));
	fx_pass_free(&ps);
	cJSON_Delete(only);
	cJSON_Delete(pods);
	cJSON_Delete(there);
	cJSON_Delete(here);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(multiple_pods_are_counted_by_uid)
{
	cJSON *sb = fx_load("sandbox.json");
	cJSON *p1 = fx_load("pod-running.json");
	cJSON *p2 = fx_load("pod-running.json");
	fx_set_str(p2, "metadata.name", "my-sandbox-2");
	fx_set_str(p2, "metadata.uid", "pod-uid-2");
	cJSON *p3 = fx_load("pod-running.json");
	fx_set_str(p3, "metadata.name", "my-sandbox-3");
	fx_set_str(p3, "metadata.uid", "pod-uid-3");
	fx_label(p3, SBX_LABEL_NAME_HASH, NULL);
	cJSON *foreign = fx_load("pod-running.json");
	fx_set_str(foreign, "metadata.name", "impostor");
	fx_set_str(foreign, "metadata.uid", "pod-uid-4");
	fx_del(foreign, "metadata.ownerReferences");
	/* p1 listed twice, an unowned pod with our label; p3 only by name. */
	cJSON *pods = fx_list(p1, p2, p1, foreign, NULL);
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox-3");
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = p3;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_assert_condition(ps.out.status, "Ready", "False", "MultiplePods",
	                    "multiple Pods (3) are controlled by this Sandbox; "
	                    "refusing to choose or create a Pod");
	fx_pass_free(&ps);
	cJSON_Delete(pods);
	cJSON_Delete(p1);
	cJSON_Delete(p2);
	cJSON_Delete(p3);
	cJSON_Delete(foreign);
	cJSON_Delete(sb);
}
END_TEST

/* ---- Suspended ---- */

START_TEST(suspended_owned_pod_is_deleted)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	cJSON *pod = fx_load("pod-running.json");
	cJSON *pods = fx_list(pod, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* Delete, and the annotation is kept while the pod exists. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_DELETE,
	                                SBX_OBJ_POD, "my-sandbox");
	ck_assert_ptr_null(a->body);
	fx_assert_condition(ps.out.status, "Suspended", "False", "PodTerminating",
	                    "Pod is terminating. Sandbox is suspending");
	fx_assert_condition(ps.out.status, "Ready", "False", "SandboxSuspended",
	                    "Sandbox is suspending");
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);

	/* Already terminating: no second delete. */
	fx_set_str(pod, "metadata.deletionTimestamp", "2026-01-02T03:04:00Z");
	cJSON_Delete(pods);
	pods = fx_list(pod, NULL);
	obs.pods = pods;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_assert_condition(ps.out.status, "Suspended", "False", "PodTerminating",
	                    "Pod is terminating. Sandbox is suspending");
	fx_pass_free(&ps);

	/* A failed delete still reports the pod as terminating. */
	fx_del(pod, "metadata.deletionTimestamp");
	cJSON_Delete(pods);
	pods = fx_list(pod, NULL);
	obs.pods = pods;
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_POD, SBX_VERB_DELETE, ASB_EINTERNAL, "etcd timeout");
	fx_run(&ps, &obs, &srv);
	fx_assert_condition(ps.out.status, "Suspended", "False", "PodTerminating",
	                    "Pod is terminating. Sandbox is suspending");
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError",
	                    "Error seen: failed to delete pod: etcd timeout");
	ck_assert_str_eq(ps.out.error, "failed to delete pod: etcd timeout");
	ck_assert_int_eq(ps.out.error_code, ASB_EINTERNAL);
	fx_pass_free(&ps);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(suspended_without_pod_is_suspended)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	fx_set(sb, "status", cJSON_Parse(
		"{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
		"\"reason\":\"PodScheduled\",\"message\":\"\",\"lastTransitionTime\":"
		"\"2026-01-01T00:00:00Z\"}]}"));
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* Only the annotation removal (from the NotFound branch). */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_assert_json_str(fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, DROP_POD_NAME);
	fx_assert_condition(ps.out.status, "Suspended", "True", "PodTerminated",
	                    "Pod has been terminated. Sandbox is suspended");
	fx_assert_condition(ps.out.status, "Ready", "False", "SandboxSuspended",
	                    "Sandbox is suspended");
	ck_assert_ptr_null(fx_condition(ps.out.status, "PodScheduled"));
	fx_pass_free(&ps);

	/* Without an annotation there is nothing to write at all. */
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, NULL);
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(empty_pod_name_annotation_counts_as_present)
{
	/* Suspended, no pod, the annotation present but "": removed ("if
	 * present", docs/api.md#pod-management), not left behind forever. */
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_assert_json_str(fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, DROP_POD_NAME);
	fx_pass_free(&ps);

	/* Running with the owned pod: "" is empty, so it is set to the pod's
	 * name in one patch. */
	fx_set_str(sb, "spec.operatingMode", "Running");
	cJSON *pod = fx_load("pod-running.json");
	obs.pod = pod;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_assert_json_str(fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, SET_POD_NAME);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(suspended_unowned_pod_is_not_deleted)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	cJSON *pod = fx_load("pod-running.json");
	fx_del(pod, "metadata.ownerReferences");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* No delete; the annotation goes since no owned pod remains. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_assert_json_str(fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_SANDBOX, "my-sandbox")->body, DROP_POD_NAME);
	const cJSON *st = ps.out.status;
	fx_assert_condition(st, "Suspended", "False", "PodNotOwned",
	                    "Refused to delete pod because it is not owned by this sandbox");
	fx_assert_condition(st, "Ready", "False", "SandboxSuspended",
	                    "Sandbox is suspending");
	ck_assert_str_eq(status_str(st, "selector"), SELECTOR);
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "podIPs"));
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "nodeName"));
	ck_assert_ptr_null(fx_condition(st, "PodScheduled"));
	fx_pass_free(&ps);

	/* Same for a foreign-controlled pod. */
	set_controller(pod, "apps/v1", "StatefulSet", "db", "db-uid");
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_assert_condition(ps.out.status, "Suspended", "False", "PodNotOwned",
	                    "Refused to delete pod because it is not owned by this sandbox");
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(suspended_lookup_failure_is_unknown)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	sbx_observed obs = fx_observed(sb);
	obs.pods_error = "informer not synced";
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_assert_condition(ps.out.status, "Suspended", "Unknown", "PodStateUnknown",
	                    "Pod state is unknown. Sandbox suspension cannot be confirmed");
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError",
	                    "Error seen: failed to list pods: informer not synced");
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

/* ---- metadata reconciliation (docs/api.md#pod-metadata) ---- */

START_TEST(metadata_reconciliation_scrubs_and_tracks)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_del(sb, "metadata.labels");   /* no created-by on the Sandbox */
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	cJSON *pod = fx_load("pod-running.json");
	fx_set(pod, "metadata.labels", cJSON_Parse(
		"{\"app\":\"old-value\",\"old\":\"1\",\"agents.x-k8s.io/claim-uid\":\"c\","
		"\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\",\"foreign\":\"keep\","
		"\"agents.x-k8s.io/warm-pool-sandbox\":\"91dd7983\","
		"\"agents.x-k8s.io/created-by\":\"go-client\"}"));
	fx_set(pod, "metadata.annotations", cJSON_Parse(
		"{\"agents.x-k8s.io/propagated-labels\":"
		"\"app,old,,agents.x-k8s.io/claim-uid,agents.x-k8s.io/sandbox-name-hash\","
		"\"agents.x-k8s.io/propagated-annotations\":"
		"\"team,gone,opentelemetry.io/trace-context,agents.x-k8s.io/propagated-labels\","
		"\"team\":\"old\",\"gone\":\"1\",\"opentelemetry.io/trace-context\":\"t\","
		"\"other\":\"keep\"}"));
	cJSON *pods = fx_list(pod, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pods = pods;
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_POD, "my-sandbox");
	fx_assert_json_str(a->body,
		"{\"metadata\":{\"labels\":{\"app\":\"agent\",\"tier\":\"sandbox\","
		"\"old\":null,\"agents.x-k8s.io/claim-uid\":null,"
		"\"agents.x-k8s.io/warm-pool-sandbox\":null,"
		"\"agents.x-k8s.io/created-by\":null},"
		"\"annotations\":{\"team\":\"research\",\"gone\":null,"
		"\"opentelemetry.io/trace-context\":null,"
		"\"agents.x-k8s.io/propagated-labels\":\"app,tier\","
		"\"agents.x-k8s.io/propagated-annotations\":\"team\"}}}");
	ck_assert_int_eq(a->state, SBX_ACTION_DONE);
	fx_pass_free(&ps);
	cJSON_Delete(pods);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(metadata_tracking_lists_empty_vs_absent)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_del(sb, "spec.podTemplate.metadata");
	fx_del(sb, "metadata.labels");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	cJSON *pod = fx_load("pod-running.json");
	fx_set(pod, "metadata.labels", cJSON_Parse(
		"{\"app\":\"agent\",\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"}"));
	fx_set(pod, "metadata.annotations", cJSON_Parse(
		"{\"agents.x-k8s.io/propagated-labels\":\"app\"}"));
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* A present list becomes "", an absent one stays absent. */
	fx_assert_json_str(fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                             SBX_OBJ_POD, "my-sandbox")->body,
		"{\"metadata\":{\"labels\":{\"app\":null},"
		"\"annotations\":{\"agents.x-k8s.io/propagated-labels\":\"\"}}}");
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

/* ---- write-behind (docs/api.md#pod-metadata last bullet, docs/api.md#sandbox-reconcile step 5) ---- */

/* An owned, Ready pod whose template label "app" changed: one metadata patch due. */
static cJSON *edited_sandbox(void)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	fx_set_str(sb, "spec.podTemplate.metadata.labels.app", "edited");
	return sb;
}

START_TEST(write_behind_off_patches_at_once)
{
	cJSON *sb = edited_sandbox();
	cJSON *pod = fx_load("pod-running.json");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	obs.pod_patch_deferred_since_ms = FX_NOW_MS - 50;   /* ignored when off */
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_POD, "my-sandbox");
	ck_assert_int_eq(ps.out.pod_patch_deferred_since_ms, 0);
	ck_assert_int_eq(ps.out.requeue_after_ms, 0);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(write_behind_defers_owned_pod_patch_then_writes_it)
{
	cJSON *sb = edited_sandbox();
	cJSON *pod = fx_load("pod-running.json");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	obs.write_behind_window_ms = 250;
	fx_pass ps;

	/* First pass: nothing written, status still computed, requeue = window. */
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_int_eq(ps.out.pod_patch_deferred_since_ms, FX_NOW_MS);
	ck_assert_int_eq(ps.out.requeue_after_ms, 250);
	ck_assert_ptr_null(ps.out.error);
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_pass_free(&ps);

	/* 100 ms later, still pending: requeue for the 150 ms left. */
	obs.pod_patch_deferred_since_ms = FX_NOW_MS;
	obs.now_ms = FX_NOW_MS + 100;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_int_eq(ps.out.pod_patch_deferred_since_ms, FX_NOW_MS);
	ck_assert_int_eq(ps.out.requeue_after_ms, 150);
	fx_pass_free(&ps);

	/* Window over: the patch (with the template as it is now) is written,
	 * and the deferral is forgotten. */
	obs.now_ms = FX_NOW_MS + 250;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_POD, "my-sandbox");
	fx_assert_json_str(a->body, "{\"metadata\":{\"labels\":{\"app\":\"edited\"}}}");
	ck_assert_int_eq(ps.out.pod_patch_deferred_since_ms, 0);
	ck_assert_int_eq(ps.out.requeue_after_ms, 0);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(write_behind_is_bounded_to_one_second)
{
	cJSON *sb = edited_sandbox();
	cJSON *pod = fx_load("pod-running.json");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	obs.write_behind_window_ms = 60000;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_int_eq(ps.out.requeue_after_ms, SBX_WRITE_BEHIND_POD_MAX_MS);
	fx_pass_free(&ps);
	obs.pod_patch_deferred_since_ms = FX_NOW_MS;
	obs.now_ms = FX_NOW_MS + SBX_WRITE_BEHIND_POD_MAX_MS;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(write_behind_never_defers_adoption)
{
	/* An unowned, adoptable pod: the ownership change is written at once. */
	cJSON *sb = edited_sandbox();
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, NULL);
	cJSON *pod = fx_load("pod-running.json");
	fx_del(pod, "metadata.ownerReferences");
	fx_label(pod, SBX_LABEL_ADOPTABLE, "true");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	obs.write_behind_window_ms = 500;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_PATCH,
	                                SBX_OBJ_POD, "my-sandbox");
	ck_assert_ptr_nonnull(k8s_obj_at(a->body, "metadata.ownerReferences"));
	ck_assert_int_eq(ps.out.pod_patch_deferred_since_ms, 0);
	ck_assert_int_eq(ps.out.requeue_after_ms, 0);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(write_behind_nothing_to_patch_forgets_deferral)
{
	/* In sync meanwhile (the template was edited back): nothing pending. */
	cJSON *sb = fx_load("sandbox.json");
	fx_annotation(sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	cJSON *pod = fx_load("pod-running.json");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	obs.write_behind_window_ms = 500;
	obs.pod_patch_deferred_since_ms = FX_NOW_MS - 100;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_int_eq(ps.out.pod_patch_deferred_since_ms, 0);
	ck_assert_int_eq(ps.out.requeue_after_ms, 0);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(write_behind_requeue_takes_the_sooner_and_not_on_error)
{
	/* shutdownTime 10 s ahead: the 300 ms deferral is sooner and wins. */
	cJSON *sb = edited_sandbox();
	fx_set_str(sb, "spec.shutdownTime", "2026-01-02T03:04:15Z");
	cJSON *pod = fx_load("pod-running.json");
	sbx_observed obs = fx_observed(sb);
	obs.pod = pod;
	obs.write_behind_window_ms = 300;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(ps.out.requeue_after_ms, 300);
	fx_pass_free(&ps);

	/* A failing Service step: the error's backoff applies, the deferral
	 * stays pending but does not shorten the requeue. */
	fx_set(sb, "spec.service", cJSON_CreateTrue());
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_SERVICE, SBX_VERB_CREATE, ASB_EFORBIDDEN, "forbidden");
	fx_run(&ps, &obs, &srv);
	ck_assert_ptr_nonnull(ps.out.error);
	ck_assert_int_eq(ps.out.pod_patch_deferred_since_ms, FX_NOW_MS);
	ck_assert_int_eq(ps.out.requeue_after_ms, 10000);
	fx_pass_free(&ps);
	cJSON_Delete(pod);
	cJSON_Delete(sb);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan_pod");
	TCase *tc = tcase_create("create");
	tcase_add_test(tc, new_sandbox_creates_pod);
	tcase_add_test(tc, pod_spec_is_copied_as_given);
	tcase_add_test(tc, created_by_is_normalised);
	tcase_add_test(tc, extension_labels_follow_the_controller);
	tcase_add_test(tc, create_without_template_metadata_omits_annotations);
	tcase_add_test(tc, vct_volumes_are_merged);
	suite_add_tcase(s, tc);
	tc = tcase_create("lookup");
	tcase_add_test(tc, deleted_pod_is_recreated);
	tcase_add_test(tc, stale_pod_name_of_another_pod);
	tcase_add_test(tc, failed_create_yields_no_pod);
	tcase_add_test(tc, owned_pod_in_sync_needs_no_write);
	tcase_add_test(tc, stale_annotation_removed_owned_pod_wins);
	tcase_add_test(tc, owned_pod_missing_from_index_is_counted_and_relabelled);
	suite_add_tcase(s, tc);
	tc = tcase_create("adoption");
	tcase_add_test(tc, unowned_pod_with_adoptable_label_is_adopted);
	tcase_add_test(tc, unowned_pod_with_matching_hash_is_adopted);
	tcase_add_test(tc, unowned_pod_without_authorisation_is_refused);
	tcase_add_test(tc, pod_owned_by_other_is_refused);
	tcase_add_test(tc, multiple_owned_pods_refuse_to_choose);
	tcase_add_test(tc, multiple_pods_are_counted_by_uid);
	tcase_add_test(tc, owned_pods_of_other_namespaces_are_not_counted);
	suite_add_tcase(s, tc);
	tc = tcase_create("suspended");
	tcase_add_test(tc, suspended_owned_pod_is_deleted);
	tcase_add_test(tc, suspended_without_pod_is_suspended);
	tcase_add_test(tc, empty_pod_name_annotation_counts_as_present);
	tcase_add_test(tc, suspended_unowned_pod_is_not_deleted);
	tcase_add_test(tc, suspended_lookup_failure_is_unknown);
	suite_add_tcase(s, tc);
	tc = tcase_create("metadata");
	tcase_add_test(tc, metadata_reconciliation_scrubs_and_tracks);
	tcase_add_test(tc, metadata_tracking_lists_empty_vs_absent);
	suite_add_tcase(s, tc);
	tc = tcase_create("write-behind");
	tcase_add_test(tc, write_behind_off_patches_at_once);
	tcase_add_test(tc, write_behind_defers_owned_pod_patch_then_writes_it);
	tcase_add_test(tc, write_behind_is_bounded_to_one_second);
	tcase_add_test(tc, write_behind_never_defers_adoption);
	tcase_add_test(tc, write_behind_nothing_to_patch_forgets_deferral);
	tcase_add_test(tc, write_behind_requeue_takes_the_sooner_and_not_on_error);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
