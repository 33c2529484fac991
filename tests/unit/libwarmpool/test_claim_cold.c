/*
 * Unit tests of libwarmpool/src/claim_cold.c: the cold Sandbox of
 * docs/api.md#cold-start (name, labels, annotations, ownerReference, blueprint
 * copy, podTemplate labels, additionalPodMetadata, env, secure defaults),
 * and the order of its steps (the first failure wins, nothing built), and
 * its idle fields (ours, docs/api.md#idle-suspend-and-resume): the template's, or the
 * claim's pair when it sets a timeout.
 */
#include <string.h>
#include "fixture.h"
#include "claim.h"
#include "jsonutil.h"
#include "k8s/object.h"

#define VCT(n, size) "{\"metadata\":{\"name\":\"" n "\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"]," \
	"\"resources\":{\"requests\":{\"storage\":\"" size "\"}}}}"

static void spec_add(cJSON *obj, const char *member, const char *json)
{
	cJSON_AddItemToObject(cJSON_GetObjectItem(obj, "spec"), member, fx_json(json));
}

START_TEST(cold_sandbox_full)
{
	cJSON *claim = fx_load("claim.json");
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "metadata"), "annotations",
	                      fx_json("{\"opentelemetry.io/trace-context\":\"{\\\"traceparent\\\":\\\"x\\\"}\"}"));
	spec_add(claim, "additionalPodMetadata",
	         "{\"labels\":{\"sandbox.users.io/team\":\"t\"},\"annotations\":{\"note\":\"n\"}}");
	spec_add(claim, "env", "[{\"name\":\"A\",\"value\":\"1\"}]");
	spec_add(claim, "volumeClaimTemplates", "[" VCT("data", "5Gi") "]");
	cJSON *tpl = fx_load("claim-template.json");
	wp_claim_err err = { 0 };
	cJSON *sbx = wp_claim_cold_sandbox(claim, tpl, &err);
	ck_assert_msg(sbx != NULL, "%s", err.msg);
	fx_assert_json_str(cJSON_GetObjectItem(sbx, "metadata"),
		"{\"name\":\"my-claim\",\"namespace\":\"default\","
		"\"labels\":{\"agents.x-k8s.io/claim-uid\":\"c1a10000-0000-4000-8000-000000000001\","
		"\"agents.x-k8s.io/created-by\":\"python-client\",\"agents.x-k8s.io/launch-type\":\"cold\","
		"\"agents.x-k8s.io/sandbox-template-ref-hash\":\"69155462\"},"
		"\"annotations\":{\"opentelemetry.io/trace-context\":\"{\\\"traceparent\\\":\\\"x\\\"}\","
		"\"agents.x-k8s.io/sandbox-template-ref\":\"test-template\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\","
		"\"kind\":\"SandboxClaim\",\"name\":\"my-claim\",\"uid\":\"c1a10000-0000-4000-8000-000000000001\","
		"\"controller\":true,\"blockOwnerDeletion\":true}]}");
	ck_assert_str_eq(ju_str(sbx, "apiVersion"), "agents.x-k8s.io/v1beta1");
	ck_assert_str_eq(ju_str(sbx, "kind"), "Sandbox");
	fx_assert_json_str(k8s_obj_at(sbx, "spec.podTemplate.metadata"),
		"{\"labels\":{\"app\":\"demo\",\"agents.x-k8s.io/claim-uid\":\"c1a10000-0000-4000-8000-000000000001\","
		"\"agents.x-k8s.io/sandbox-template-ref-hash\":\"69155462\","
		"\"agents.x-k8s.io/created-by\":\"python-client\",\"sandbox.users.io/team\":\"t\"},"
		"\"annotations\":{\"team\":\"blue\",\"note\":\"n\"}}");
	/* VCT overridden by the claim (template policy Overrides) */
	fx_assert_json_str(k8s_obj_at(sbx, "spec.volumeClaimTemplates"), "[" VCT("data", "5Gi") "]");
	/* env into the first main container */
	const cJSON *main_env = cJSON_GetObjectItem(
		cJSON_GetArrayItem(k8s_obj_at(sbx, "spec.podTemplate.spec.containers"), 0), "env");
	ck_assert_int_eq(cJSON_GetArraySize(main_env), 3);
	/* secure defaults: no networkPolicy => public DNS, no token */
	const cJSON *ps = k8s_obj_at(sbx, "spec.podTemplate.spec");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(ps, "automountServiceAccountToken")));
	ck_assert_str_eq(ju_str(ps, "dnsPolicy"), "None");
	fx_assert_json_str(cJSON_GetObjectItem(ps, "dnsConfig"),
	                    "{\"nameservers\":[\"8.8.8.8\",\"1.1.1.1\"]}");
	/* never lifecycle or operatingMode */
	ck_assert_ptr_null(k8s_obj_at(sbx, "spec.shutdownTime"));
	ck_assert_ptr_null(k8s_obj_at(sbx, "spec.operatingMode"));
	cJSON_Delete(sbx);
	cJSON_Delete(claim);
	cJSON_Delete(tpl);
}
END_TEST

START_TEST(cold_sandbox_plain)
{
	cJSON *claim = fx_load("claim.json");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(claim, "metadata"), "labels");
	cJSON *tpl = fx_load("claim-template.json");
	/* a custom network policy: DNS untouched */
	spec_add(tpl, "networkPolicy", "{\"ingress\":[]}");
	wp_claim_err err = { 0 };
	cJSON *sbx = wp_claim_cold_sandbox(claim, tpl, &err);
	ck_assert_ptr_nonnull(sbx);
	ck_assert_ptr_null(k8s_obj_label(sbx, "agents.x-k8s.io/created-by"));
	ck_assert_ptr_null(k8s_obj_annotation(sbx, "opentelemetry.io/trace-context"));
	ck_assert_ptr_null(k8s_obj_at(sbx, "spec.podTemplate.spec.dnsPolicy"));
	fx_assert_json(k8s_obj_at(sbx, "spec.volumeClaimTemplates"),
	                k8s_obj_at(tpl, "spec.volumeClaimTemplates"));
	cJSON_Delete(sbx);
	cJSON_Delete(claim);
	cJSON_Delete(tpl);
}
END_TEST

START_TEST(cold_sandbox_step_order)
{
	cJSON *tpl = fx_load("claim-template.json");
	wp_claim_err err = { 0 };
	/* VCTs are checked before the metadata and env (all three bad here) */
	cJSON *claim = fx_load("claim.json");
	spec_add(claim, "volumeClaimTemplates", "[{\"spec\":{}}]");
	spec_add(claim, "additionalPodMetadata", "{\"labels\":{\"app\":\"other\"}}");
	spec_add(claim, "env", "[{\"name\":\"A\",\"value\":\"1\",\"containerName\":\"x\"}]");
	ck_assert_ptr_null(wp_claim_cold_sandbox(claim, tpl, &err));
	ck_assert_int_eq(err.kind, WP_CLAIM_E_VCT);
	ck_assert_str_eq(err.msg, "failed to merge volume claim templates: claim: invalid volume claim "
	                          "templates: name at index 0 is empty");
	/* then the metadata merge */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(claim, "spec"), "volumeClaimTemplates");
	ck_assert_ptr_null(wp_claim_cold_sandbox(claim, tpl, &err));
	ck_assert_str_eq(err.msg, "metadata override conflict: label \"app\" is defined in template "
	                          "with value \"demo\", but claim requests \"other\"");
	/* then env */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(claim, "spec"), "additionalPodMetadata");
	ck_assert_ptr_null(wp_claim_cold_sandbox(claim, tpl, &err));
	ck_assert_str_eq(err.msg, "target container \"x\" not found in template for environment "
	                          "variable \"A\"");
	cJSON_Delete(claim);
	/* a template with a bad VCT list and no claim VCTs */
	claim = fx_load("claim.json");
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(tpl, "spec"), "volumeClaimTemplates",
	                          fx_json("[" VCT("d", "1Gi") "," VCT("d", "1Gi") "]"));
	ck_assert_ptr_null(wp_claim_cold_sandbox(claim, tpl, &err));
	ck_assert_int_eq(err.kind, WP_CLAIM_E_VCT);
	ck_assert_str_eq(err.msg, "invalid volume claim templates in template: invalid volume claim "
	                          "templates: duplicate name \"d\"");
	/* no podTemplate */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(tpl, "spec"), "podTemplate");
	ck_assert_ptr_null(wp_claim_cold_sandbox(claim, tpl, &err));
	ck_assert_int_eq(err.kind, WP_CLAIM_E_OTHER);
	wp_claim_err_clear(&err);
	cJSON_Delete(claim);
	cJSON_Delete(tpl);
}
END_TEST

/* The cold Sandbox's spec idle fields for a claim lifecycle `lc` and template
 * spec members `tspec` (JSON objects, NULL: none) equal `want` (members
 * idleTimeoutSeconds/idlePolicy of the spec, "{}" for none). */
static void check_cold_idle(const char *lc, const char *tspec, const char *want)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *tpl = fx_load("claim-template.json");
	if (lc)
		spec_add(claim, "lifecycle", lc);
	cJSON *extra = tspec ? fx_json(tspec) : NULL;
	cJSON *it;
	cJSON_ArrayForEach(it, extra)
		cJSON_AddItemToObject(cJSON_GetObjectItem(tpl, "spec"), it->string, cJSON_Duplicate(it, true));
	cJSON_Delete(extra);
	wp_claim_err err = { 0 };
	cJSON *sbx = wp_claim_cold_sandbox(claim, tpl, &err);
	ck_assert_msg(sbx != NULL, "%s", err.msg);
	cJSON *got = cJSON_CreateObject();
	const cJSON *t = k8s_obj_at(sbx, "spec.idleTimeoutSeconds");
	const cJSON *p = k8s_obj_at(sbx, "spec.idlePolicy");
	if (t)
		cJSON_AddItemToObject(got, "idleTimeoutSeconds", cJSON_Duplicate(t, true));
	if (p)
		cJSON_AddItemToObject(got, "idlePolicy", cJSON_Duplicate(p, true));
	fx_assert_json_str(got, want);
	/* the template itself is untouched */
	ck_assert_ptr_null(k8s_obj_at(tpl, "spec.lifecycle"));
	/* never an activity stamp: a new Sandbox's clock is its creation */
	ck_assert_ptr_null(k8s_obj_annotation(sbx, "agents.x-k8s.io/last-activity"));
	cJSON_Delete(got);
	cJSON_Delete(sbx);
	cJSON_Delete(claim);
	cJSON_Delete(tpl);
}

START_TEST(cold_sandbox_idle_fields)
{
	const char *tpl_pair = "{\"idleTimeoutSeconds\":600,\"idlePolicy\":\"Delete\"}";
	/* the template's pair, copied with the blueprint */
	check_cold_idle(NULL, tpl_pair, tpl_pair);
	check_cold_idle(NULL, "{\"idleTimeoutSeconds\":600}", "{\"idleTimeoutSeconds\":600}");
	/* the claim's pair wins whole: no policy in the claim is Suspend (absent) */
	check_cold_idle("{\"idleTimeoutSeconds\":30,\"idlePolicy\":\"Suspend\"}", tpl_pair,
	                "{\"idleTimeoutSeconds\":30,\"idlePolicy\":\"Suspend\"}");
	check_cold_idle("{\"idleTimeoutSeconds\":30}", tpl_pair, "{\"idleTimeoutSeconds\":30}");
	check_cold_idle("{\"idleTimeoutSeconds\":120,\"idlePolicy\":\"Delete\"}", NULL,
	                "{\"idleTimeoutSeconds\":120,\"idlePolicy\":\"Delete\"}");
	/* a claim policy without a timeout: the template's pair */
	check_cold_idle("{\"idlePolicy\":\"Suspend\"}", tpl_pair, tpl_pair);
	/* none: neither field (a template policy without a timeout is dropped) */
	check_cold_idle(NULL, NULL, "{}");
	check_cold_idle("{\"shutdownPolicy\":\"Delete\"}", "{\"idlePolicy\":\"Delete\"}", "{}");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("claim_cold");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, cold_sandbox_full);
	tcase_add_test(tc, cold_sandbox_plain);
	tcase_add_test(tc, cold_sandbox_idle_fields);
	tcase_add_test(tc, cold_sandbox_step_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
