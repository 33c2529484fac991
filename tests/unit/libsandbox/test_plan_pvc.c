/*
 * Unit tests of libsandbox/src/plan_pvc.c: the PVC step of docs/api.md#pvcs
 * (create, adopt, refuse, stop at the first error while the Pod step still
 * runs, kept while suspended).
 */
#include <stdio.h>
#include <string.h>
#include "fixture.h"

/* sandbox-vct.json with a second template "cache". */
static cJSON *two_vct_sandbox(void)
{
	cJSON *sb = fx_load("sandbox-vct.json");
	cJSON *vcts = cJSON_GetObjectItem(cJSON_GetObjectItem(sb, "spec"),
	                                  "volumeClaimTemplates");
	cJSON_AddItemToArray(vcts, cJSON_Parse(
		"{\"metadata\":{\"name\":\"cache\"},\"spec\":{\"accessModes\":"
		"[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"2Gi\"}}}}"));
	return sb;
}

static cJSON *pvc(const char *name, const char *owner_uid)
{
	char buf[512];
	if (owner_uid)
		snprintf(buf, sizeof(buf),
		         "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\","
		         "\"uid\":\"u-%s\",\"ownerReferences\":[{\"apiVersion\":"
		         "\"agents.x-k8s.io/v1alpha1\",\"kind\":\"Sandbox\",\"name\":"
		         "\"my-sandbox\",\"uid\":\"%s\",\"controller\":true}]},"
		         "\"spec\":{}}", name, name, owner_uid);
	else
		snprintf(buf, sizeof(buf),
		         "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\","
		         "\"uid\":\"u-%s\"},\"spec\":{}}", name, name);
	return cJSON_Parse(buf);
}

START_TEST(missing_claims_are_created_existing_owned_untouched)
{
	cJSON *sb = two_vct_sandbox();
	/* Owned (by UID; an old v1alpha1 apiVersion in the ref is fine). */
	cJSON *data = pvc("data-my-sandbox", FX_UID);
	cJSON *pvcs = fx_list(data, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pvcs = pvcs;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 3);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_PVC, SBX_VERB_CREATE,
	                                SBX_OBJ_PVC, "cache-my-sandbox");
	fx_assert_json_str(k8s_obj_at(a->body, "metadata.labels"),
	                   "{\"agents.x-k8s.io/sandbox-name-hash\":\"374de8f5\"}");
	ck_assert_ptr_null(k8s_obj_at(a->body, "metadata.annotations"));
	fx_assert_json_str(k8s_obj_at(a->body, "spec"),
		"{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{\"requests\":"
		"{\"storage\":\"2Gi\"}}}");
	fx_action(ps.plan, 1, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	/* The new Pod mounts both claims, in VCT order. */
	a = sbx_plan_action(ps.plan, 1);
	fx_assert_json_str(k8s_obj_at(a->body, "spec.volumes"),
		"[{\"name\":\"config\",\"configMap\":{\"name\":\"app-config\"}},"
		"{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":\"data-my-sandbox\"}},"
		"{\"name\":\"cache\",\"persistentVolumeClaim\":{\"claimName\":\"cache-my-sandbox\"}}]");
	ck_assert_ptr_null(ps.out.error);
	fx_pass_free(&ps);
	cJSON_Delete(pvcs);
	cJSON_Delete(data);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(unowned_claim_adopted_when_authorised)
{
	cJSON *sb = fx_load("sandbox-vct.json");
	cJSON *data = pvc("data-my-sandbox", NULL);
	fx_label(data, SBX_LABEL_ADOPTABLE, "true");
	cJSON *pvcs = fx_list(data, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pvcs = pvcs;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	const sbx_action *a = fx_action(ps.plan, 0, SBX_STEP_PVC, SBX_VERB_PATCH,
	                                SBX_OBJ_PVC, "data-my-sandbox");
	fx_assert_json_str(a->body,
		"{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":"
		"\"agents.x-k8s.io/v1beta1\",\"kind\":\"Sandbox\",\"name\":\"my-sandbox\","
		"\"uid\":\"6b1d7a52-0000-4000-8000-000000000001\",\"controller\":true,"
		"\"blockOwnerDeletion\":true}]}}");
	fx_pass_free(&ps);
	cJSON_Delete(pvcs);
	cJSON_Delete(data);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(refusal_stops_the_step_but_not_the_pod)
{
	cJSON *sb = two_vct_sandbox();
	cJSON *data = pvc("data-my-sandbox", NULL);
	cJSON *pvcs = fx_list(data, NULL);
	sbx_observed obs = fx_observed(sb);
	obs.pvcs = pvcs;
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	/* No claim for "cache" this pass; the Pod is still created. */
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	static const char *err =
		"cannot adopt unowned PVC \"data-my-sandbox\": missing required pool "
		"authorization label (\"agents.x-k8s.io/adoptable\") or sandbox "
		"tracking label (\"agents.x-k8s.io/sandbox-name-hash\")";
	ck_assert_str_eq(ps.out.error, err);
	char msg[512];
	snprintf(msg, sizeof(msg), "Error seen: %s", err);
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError", msg);
	/* The pod step itself was fine. */
	fx_assert_condition(ps.out.status, "PodScheduled", "Unknown",
	                    "PodSchedulingUnknown",
	                    "Pod has not reported a PodScheduled condition yet");
	fx_pass_free(&ps);

	/* Owned by someone else. */
	fx_set(data, "metadata.ownerReferences", cJSON_Parse(
		"[{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"name\":\"db\","
		"\"uid\":\"db-uid\",\"controller\":true}]"));
	cJSON_Delete(pvcs);
	pvcs = fx_list(data, NULL);
	obs.pvcs = pvcs;
	fx_run(&ps, &obs, NULL);
	ck_assert_str_eq(ps.out.error, "PVC \"data-my-sandbox\" is owned by "
	                 "StatefulSet/db (UID: db-uid), not by sandbox \"my-sandbox\"");
	fx_pass_free(&ps);

	/* A Get failure stops the step the same way. */
	obs.pvcs = NULL;
	obs.pvc_error_name = "data-my-sandbox";
	obs.pvc_error = "connection refused";
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 2);
	fx_action(ps.plan, 0, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD, "my-sandbox");
	ck_assert_str_eq(ps.out.error, "failed to get PVC: connection refused");
	fx_pass_free(&ps);
	cJSON_Delete(pvcs);
	cJSON_Delete(data);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(failed_create_skips_later_claims_and_joins_errors)
{
	cJSON *sb = two_vct_sandbox();
	fx_set(sb, "spec.service", cJSON_CreateTrue());
	sbx_observed obs = fx_observed(sb);
	fx_server srv = { 0 };
	fx_fail(&srv, SBX_OBJ_PVC, SBX_VERB_CREATE, ASB_EFORBIDDEN, "quota exceeded");
	fx_fail(&srv, SBX_OBJ_SERVICE, SBX_VERB_CREATE, ASB_EINVALID, "bad name");
	fx_pass ps;
	fx_run(&ps, &obs, &srv);
	ck_assert_int_eq(fx_action(ps.plan, 0, SBX_STEP_PVC, SBX_VERB_CREATE,
	                           SBX_OBJ_PVC, "data-my-sandbox")->state,
	                 SBX_ACTION_FAILED);
	ck_assert_int_eq(fx_action(ps.plan, 1, SBX_STEP_PVC, SBX_VERB_CREATE,
	                           SBX_OBJ_PVC, "cache-my-sandbox")->state,
	                 SBX_ACTION_SKIPPED);
	ck_assert_int_eq(fx_action(ps.plan, 2, SBX_STEP_POD, SBX_VERB_CREATE,
	                           SBX_OBJ_POD, "my-sandbox")->state,
	                 SBX_ACTION_DONE);
	/* PVC, Pod, Service errors in that order, joined by newlines. */
	fx_assert_condition(ps.out.status, "Ready", "False", "ReconcilerError",
	                    "Error seen: failed to create PVC: quota exceeded\n"
	                    "failed to create service: bad name");
	ck_assert_str_eq(ps.out.error, "failed to create PVC: quota exceeded\n"
	                 "failed to create service: bad name");
	ck_assert_int_eq(ps.out.error_code, ASB_EFORBIDDEN);
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

START_TEST(claims_are_kept_while_suspended)
{
	cJSON *sb = fx_load("sandbox-vct.json");
	fx_set_str(sb, "spec.operatingMode", "Suspended");
	sbx_observed obs = fx_observed(sb);
	fx_pass ps;
	fx_run(&ps, &obs, NULL);
	ck_assert_int_eq(sbx_plan_action_count(ps.plan), 1);
	fx_action(ps.plan, 0, SBX_STEP_PVC, SBX_VERB_CREATE, SBX_OBJ_PVC,
	          "data-my-sandbox");
	fx_assert_condition(ps.out.status, "Suspended", "True", "PodTerminated",
	                    "Pod has been terminated. Sandbox is suspended");
	fx_pass_free(&ps);
	cJSON_Delete(sb);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan_pvc");
	TCase *tc = tcase_create("pvc");
	tcase_add_test(tc, missing_claims_are_created_existing_owned_untouched);
	tcase_add_test(tc, unowned_claim_adopted_when_authorised);
	tcase_add_test(tc, refusal_stops_the_step_but_not_the_pod);
	tcase_add_test(tc, failed_create_skips_later_claims_and_joins_errors);
	tcase_add_test(tc, claims_are_kept_while_suspended);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
