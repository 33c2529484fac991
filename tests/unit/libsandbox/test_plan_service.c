/*
 * Unit tests of libsandbox/src/plan_service.c: the Service step of
 * docs/api.md#service-management (headless create with the port naming rules, adoption,
 * drift repair, spec.service true/false/unset) and the service fields and
 * Ready requirement it feeds (docs/api.md#sandbox-status, #sandbox-conditions rule 4).
 */
#include <stdio.h>
#include <string.h>
#include "fixture.h"

#define FQDN "my-sandbox.team-a.svc.cluster.local"

static const char *status_str(const cJSON *status, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(status, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A Sandbox whose owned pod is Ready, optionally with spec.service. */
typedef struct {
	cJSON *sb, *pod, *pods;
	sbx_observed obs;
} ready_world;

static void world_init(ready_world *w, const char *service_json)
{
	w->sb = fx_load("sandbox.json");
	fx_annotation(w->sb, SBX_ANNOTATION_POD_NAME, "my-sandbox");
	if (service_json)
		fx_set(w->sb, "spec.service", cJSON_Parse(service_json));
	w->pod = fx_load("pod-running.json");
	w->pods = fx_list(w->pod, NULL);
	w->obs = fx_observed(w->sb);
	w->obs.pods = w->pods;
	w->obs.pod = w->pod;
}

static void world_free(ready_world *w)
{
	cJSON_Delete(w->sb);
	cJSON_Delete(w->pod);
	cJSON_Delete(w->pods);
}

START_TEST(service_true_creates_headless_service)
{
	cJSON *sb = fx_load("sandbox-ports.json");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 3);
	fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_SANDBOX, "my-sandbox");
	const sbx_action *a = fx_action(ps.plan, 2, SBX_STEP_SERVICE, SBX_VERB_CREATE,
	                                SBX_OBJ_SERVICE, "my-sandbox");
	/* Ports: containers then native sidecars; first unclaimed explicit
	 * name per (port, protocol); generated p-<port>-<proto>[-n] in sorted
	 * order; port 0 and plain init containers skipped. */
	cJSON *want = fx_load("expected-service-ports.json");
	fx_assert_json(a->body, want);
	cJSON_Delete(want);

	ck_assert_str_eq(status_str(ps.out.status, "service"), "my-sandbox");
	ck_assert_str_eq(status_str(ps.out.status, "serviceFQDN"), FQDN);
	fx_assert_condition(ps.out.status, "Ready", "False", "DependenciesNotReady",
	                    "Pod exists with phase: Pending; Service Exists");
	fx_pass_free(&ps);

	/* The cluster domain comes from the observed state (--cluster-domain). */
	obs.cluster_domain = "corp.example";
	fx_run(&ps, &obs, NULL);
	ck_assert_str_eq(status_str(ps.out.status, "serviceFQDN"),
	                 "my-sandbox.team-a.svc.corp.example");
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(service_without_ports_has_no_port_list)
{
	cJSON *sb = fx_load("sandbox.json");
	fx_set(sb, "spec.service", cJSON_CreateTrue());
	fx_del(sb, "spec.podTemplate.spec.containers");
	fx_set(sb, "spec.podTemplate.spec.containers", cJSON_Parse(
		"[{\"name\":\"main\",\"image\":\"busybox\",\"ports\":[{\"containerPort\":0}]}]"));
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	const sbx_action *a = fx_action(ps.plan, 2, SBX_STEP_SERVICE, SBX_VERB_CREATE,
	                                SBX_OBJ_SERVICE, "my-sandbox");
	fx_assert_json_str(k8s_obj_at(a->body, "spec"),
		"{\"clusterIP\":\"None\",\"selector\":"
		"{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"}}");
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(service_true_ready_needs_service)
{
	ready_world w;
	world_init(&w, "true");
	fx_pass ps;
	fx_run(&ps, &w.obs, NULL);
	/* Created on this pass: Ready at once. */
	fx_action(ps.plan, 0, SBX_STEP_SERVICE, SBX_VERB_CREATE, SBX_OBJ_SERVICE,
	          "my-sandbox");
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready; Service Exists");
	fx_pass_free(&ps);

	/* A failed create: the previous service fields stay, not Ready. */
	fx_set(w.sb, "status", cJSON_Parse(
		"{\"service\":\"old-name\",\"serviceFQDN\":\"old-name.team-a.svc.cluster.local\"}"));
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_SERVICE, SBX_VERB_CREATE, ASB_EINVALID,
	        "Service \"my-sandbox\" is invalid: metadata.name: must be no more than 63 characters");
	fx_run(&ps, &w.obs, &srv);
	ck_assert_str_eq(status_str(ps.out.status, "service"), "old-name");
	ck_assert_str_eq(status_str(ps.out.status, "serviceFQDN"),
	                 "old-name.team-a.svc.cluster.local");
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError",
	                    "Error seen: failed to create service: Service \"my-sandbox\" "
	                    "is invalid: metadata.name: must be no more than 63 characters");
	ck_assert_int_eq(ps.out.error_code, ASB_EINVALID);
	fx_pass_free(&ps);
	world_free(&w);
}
END_TEST

START_TEST(service_false_deletes_owned_only)
{
	ready_world w;
	world_init(&w, "false");
	fx_set(w.sb, "status", cJSON_Parse(
		"{\"service\":\"my-sandbox\",\"serviceFQDN\":\"" FQDN "\"}"));
	cJSON *svc = fx_load("service-owned.json");
	w.obs.service = svc;
	fx_pass ps;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_SERVICE, SBX_VERB_DELETE,
	                                SBX_OBJ_SERVICE, "my-sandbox");
	ck_assert(a->not_found_ok);
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "service"));
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "serviceFQDN"));
	/* false: the Service is not required for Ready. */
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_pass_free(&ps);

	/* A failed delete still clears the status fields. */
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_SERVICE, SBX_VERB_DELETE, ASB_EFORBIDDEN, "forbidden");
	fx_run(&ps, &w.obs, &srv);
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "service"));
	ck_assert_str_eq(ps.out.error, "failed to delete service: forbidden");
	fx_pass_free(&ps);

	/* Not owned: never deleted. */
	fx_del(svc, "metadata.ownerReferences");
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "service"));
	fx_pass_free(&ps);
	cJSON_Delete(svc);
	world_free(&w);
}
END_TEST

START_TEST(service_unset_keeps_owned_and_requires_it)
{
	ready_world w;
	world_init(&w, NULL);
	cJSON *svc = fx_load("service-owned.json");
	w.obs.service = svc;
	fx_pass ps;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_str_eq(status_str(ps.out.status, "service"), "my-sandbox");
	ck_assert_str_eq(status_str(ps.out.status, "serviceFQDN"), FQDN);
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready; Service Exists");
	fx_pass_free(&ps);

	/* Unset and no Service: never created, not required. */
	w.obs.service = NULL;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_pass_free(&ps);

	/* Unset and unowned: ignored (not adopted, not counted). */
	fx_del(svc, "metadata.ownerReferences");
	w.obs.service = svc;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(ps.out.status, "service"));
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready");
	fx_pass_free(&ps);
	cJSON_Delete(svc);
	world_free(&w);
}
END_TEST

START_TEST(service_owned_by_other_is_refused)
{
	ready_world w;
	world_init(&w, NULL);
	fx_set(w.sb, "status", cJSON_Parse(
		"{\"service\":\"my-sandbox\",\"serviceFQDN\":\"" FQDN "\"}"));
	cJSON *svc = fx_load("service-owned.json");
	fx_set(svc, "metadata.ownerReferences", cJSON_Parse(
		"[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"web\","
		"\"uid\":\"web-uid\",\"controller\":true}]"));
	w.obs.service = svc;
	fx_pass ps;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_str_eq(ps.out.error, "service \"my-sandbox\" is owned by "
	                 "Deployment/web (UID: web-uid), not by sandbox \"my-sandbox\"");
	/* Error path: previous values kept. */
	ck_assert_str_eq(status_str(ps.out.status, "service"), "my-sandbox");
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError",
	                    "Error seen: service \"my-sandbox\" is owned by "
	                    "Deployment/web (UID: web-uid), not by sandbox \"my-sandbox\"");
	fx_pass_free(&ps);
	cJSON_Delete(svc);
	world_free(&w);
}
END_TEST

START_TEST(service_adoption)
{
	ready_world w;
	world_init(&w, "true");
	cJSON *svc = fx_load("service-owned.json");
	fx_del(svc, "metadata.ownerReferences");
	fx_set(svc, "metadata.labels", cJSON_Parse("{\"team\":\"x\"}"));
	fx_set(svc, "spec.selector", cJSON_Parse("{\"app\":\"other\"}"));
	fx_del(svc, "spec.ports");
	w.obs.service = svc;
	fx_pass ps;

	/* Neither adoptable nor tracking label. */
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_str_eq(ps.out.error, "cannot adopt unowned service \"my-sandbox\": "
	                 "missing required pool authorization label "
	                 "(\"agents.x-k8s.io/adoptable\") or sandbox tracking label "
	                 "(\"agents.x-k8s.io/sandbox-name-hash\")");
	fx_pass_free(&ps);

	/* Authorised, but with a real ClusterIP: refused. */
	fx_label(svc, SBX_LABEL_ADOPTABLE, "true");
	fx_set_str(svc, "spec.clusterIP", "10.96.4.2");
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_str_eq(ps.out.error, "cannot adopt service \"my-sandbox\": ClusterIP "
	                 "is \"10.96.4.2\" (expected \"None\", field is immutable)");
	fx_pass_free(&ps);

	/* Headless and authorised: a full Update of the edited object. */
	fx_set_str(svc, "spec.clusterIP", "None");
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_SERVICE, SBX_VERB_UPDATE,
	                                SBX_OBJ_SERVICE, "my-sandbox");
	fx_assert_json_str(a->body,
		"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{"
		"\"name\":\"my-sandbox\",\"namespace\":\"team-a\",\"uid\":\"svc-uid-1\","
		"\"resourceVersion\":\"3003\",\"labels\":{\"team\":\"x\","
		"\"agents.x-k8s.io/adoptable\":\"true\","
		"\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"agents.x-k8s.io/v1beta1\","
		"\"kind\":\"Sandbox\",\"name\":\"my-sandbox\","
		"\"uid\":\"6b1d7a52-0000-4000-8000-000000000001\",\"controller\":true,"
		"\"blockOwnerDeletion\":true}]},"
		"\"spec\":{\"clusterIP\":\"None\",\"clusterIPs\":[\"None\"],"
		"\"type\":\"ClusterIP\",\"selector\":"
		"{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"},"
		"\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8888,"
		"\"targetPort\":8888}]}}");
	ck_assert_str_eq(status_str(ps.out.status, "service"), "my-sandbox");
	fx_assert_condition(ps.out.status, "Ready", "True", "DependenciesReady",
	                    "Pod is Ready; Service Exists");
	fx_pass_free(&ps);

	/* The tracking label alone also authorises. */
	fx_label(svc, SBX_LABEL_ADOPTABLE, NULL);
	fx_label(svc, SBX_LABEL_NAME_HASH, FX_HASH);
	fx_run(&ps, &w.obs, NULL);
	fx_action(ps.plan, 0, SBX_STEP_SERVICE, SBX_VERB_UPDATE, SBX_OBJ_SERVICE,
	          "my-sandbox");
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);
	cJSON_Delete(svc);
	world_free(&w);
}
END_TEST

START_TEST(service_drift_is_repaired)
{
	ready_world w;
	world_init(&w, "true");
	cJSON *svc = fx_load("service-owned.json");
	fx_label(svc, SBX_LABEL_NAME_HASH, "00000000");
	fx_set(svc, "spec.selector", cJSON_Parse(
		"{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\",\"app\":\"x\"}"));
	fx_set(svc, "spec.ports", cJSON_Parse(
		"[{\"name\":\"web\",\"protocol\":\"TCP\",\"port\":8888,\"targetPort\":8888}]"));
	w.obs.service = svc;
	fx_pass ps;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_SERVICE, SBX_VERB_PATCH,
	                                SBX_OBJ_SERVICE, "my-sandbox");
	fx_assert_json_str(a->body,
		"{\"metadata\":{\"labels\":{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"}},"
		"\"spec\":{\"selector\":{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\","
		"\"app\":null},\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\","
		"\"port\":8888,\"targetPort\":8888}]}}");
	fx_pass_free(&ps);

	/* Unset: label and selector repaired, ports left alone. */
	fx_del(w.sb, "spec.service");
	fx_run(&ps, &w.obs, NULL);
	a = fx_action(ps.plan, 0, SBX_STEP_SERVICE, SBX_VERB_PATCH, SBX_OBJ_SERVICE,
	              "my-sandbox");
	ck_assert_ptr_null(k8s_obj_at(a->body, "spec.ports"));
	ck_assert_ptr_nonnull(k8s_obj_at(a->body, "spec.selector"));
	fx_pass_free(&ps);

	/* Only name/protocol/port/targetPort count: extra fields are no drift. */
	fx_set(w.sb, "spec.service", cJSON_CreateTrue());
	cJSON_Delete(svc);
	svc = fx_load("service-owned.json");
	fx_set(svc, "spec.ports", cJSON_Parse(
		"[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8888,\"targetPort\":8888,"
		"\"appProtocol\":\"http\",\"nodePort\":30001}]"));
	w.obs.service = svc;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	fx_pass_free(&ps);

	/* A string targetPort is drift. */
	fx_set(svc, "spec.ports", cJSON_Parse(
		"[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8888,\"targetPort\":\"http\"}]"));
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_pass_free(&ps);
	cJSON_Delete(svc);
	world_free(&w);
}
END_TEST

START_TEST(service_get_failure_keeps_status)
{
	ready_world w;
	world_init(&w, "true");
	fx_set(w.sb, "status", cJSON_Parse(
		"{\"service\":\"my-sandbox\",\"serviceFQDN\":\"" FQDN "\"}"));
	w.obs.service_error = "the server was unable to return a response in the time allotted";
	fx_pass ps;
	fx_run(&ps, &w.obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 0);
	ck_assert_str_eq(ps.out.error, "service get failed: the server was unable to "
	                 "return a response in the time allotted");
	ck_assert_str_eq(status_str(ps.out.status, "serviceFQDN"), FQDN);
	fx_pass_free(&ps);
	world_free(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan_service");
	TCase *tc = tcase_create("service");
	tcase_add_test(tc, service_true_creates_headless_service);
	tcase_add_test(tc, service_without_ports_has_no_port_list);
	tcase_add_test(tc, service_true_ready_needs_service);
	tcase_add_test(tc, service_false_deletes_owned_only);
	tcase_add_test(tc, service_unset_keeps_owned_and_requires_it);
	tcase_add_test(tc, service_owned_by_other_is_refused);
	tcase_add_test(tc, service_adoption);
	tcase_add_test(tc, service_drift_is_repaired);
	tcase_add_test(tc, service_get_failure_keeps_status);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
