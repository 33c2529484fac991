/*
 * Unit tests of libwarmpool/src/claim_build.c: env injection
 * (docs/api.md#env-injection: policies, routing to init/main containers, order, envFrom, override
 * rules), the VCT merge (docs/api.md#claim-volumeclaimtemplates), the adoption patch (docs/api.md#claim-adoption step 2, with and
 * without the template), candidate verification (docs/api.md#claim-adoption) and the merge-patch
 * diff.
 */
#include <string.h>
#include "fixture.h"
#include "claim.h"
#include "jsonutil.h"
#include "k8s/object.h"

static cJSON *claim_with(const char *member, const char *json)
{
	cJSON *claim = fx_load("claim.json");
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "spec"), member, fx_json(json));
	return claim;
}

/* Injects `env` into the fixture template's pod spec under `policy`. */
static cJSON *inject(const char *env, const char *policy, wp_claim_err *err, bool *ok)
{
	cJSON *tpl = fx_load("claim-template.json");
	cJSON *spec = cJSON_Duplicate(k8s_obj_at(tpl, "spec.podTemplate.spec"), true);
	cJSON *claim = claim_with("env", env);
	*ok = wp_inject_env(spec, claim, policy, err);
	cJSON_Delete(claim);
	cJSON_Delete(tpl);
	return spec;
}

static const cJSON *ctr(const cJSON *spec, const char *list, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(spec, list), i);
}

START_TEST(env_routing_and_order)
{
	wp_claim_err err = { 0 };
	bool ok;
	cJSON *spec = inject("[{\"name\":\"A\",\"value\":\"1\"},"
	                     "{\"name\":\"B\",\"value\":\"2\",\"containerName\":\"sidecar\"},"
	                     "{\"name\":\"C\",\"value\":\"3\",\"containerName\":\"main\"},"
	                     "{\"name\":\"D\",\"value\":\"4\",\"containerName\":\"setup\"},"
	                     "{\"name\":\"SECRET\",\"value\":\"plain\"}]",
	                     WP_POLICY_OVERRIDES, &err, &ok);
	ck_assert_msg(ok, "%s", err.msg);
	/* main: named first (C), then unnamed (A, SECRET replaced in place, valueFrom dropped) */
	fx_assert_json_str(cJSON_GetObjectItem(ctr(spec, "containers", 0), "env"),
	                    "[{\"name\":\"HOME\",\"value\":\"/root\"},{\"name\":\"SECRET\",\"value\":\"plain\"},"
	                    "{\"name\":\"C\",\"value\":\"3\"},{\"name\":\"A\",\"value\":\"1\"}]");
	fx_assert_json_str(cJSON_GetObjectItem(ctr(spec, "containers", 1), "env"),
	                    "[{\"name\":\"B\",\"value\":\"2\"}]");
	fx_assert_json_str(cJSON_GetObjectItem(ctr(spec, "initContainers", 0), "env"),
	                    "[{\"name\":\"MODE\",\"value\":\"init\"},{\"name\":\"D\",\"value\":\"4\"}]");
	cJSON_Delete(spec);
	wp_claim_err_clear(&err);
}
END_TEST

START_TEST(env_policies)
{
	wp_claim_err err = { 0 };
	bool ok;
	cJSON *spec = inject("[{\"name\":\"A\",\"value\":\"1\"}]", NULL, &err, &ok);
	ck_assert(!ok);
	ck_assert_int_eq(err.kind, WP_CLAIM_E_ENV_REJECTED);
	ck_assert_str_eq(err.msg, "environment variable injection rejected: environment variable "
	                          "injection is not allowed by the template policy");
	cJSON_Delete(spec);
	spec = inject("[{\"name\":\"A\",\"value\":\"1\"}]", WP_POLICY_DISALLOWED, &err, &ok);
	ck_assert(!ok && err.kind == WP_CLAIM_E_ENV_REJECTED);
	cJSON_Delete(spec);
	/* Allowed: override of an existing name is a plain error */
	spec = inject("[{\"name\":\"HOME\",\"value\":\"/x\"}]", WP_POLICY_ALLOWED, &err, &ok);
	ck_assert(!ok);
	ck_assert_int_eq(err.kind, WP_CLAIM_E_OTHER);
	ck_assert_str_eq(err.msg, "environment variable override is not allowed by the template "
	                          "policy for variable \"HOME\"");
	cJSON_Delete(spec);
	/* ... also against an entry appended earlier from the same list */
	spec = inject("[{\"name\":\"N\",\"value\":\"1\"},{\"name\":\"N\",\"value\":\"2\"}]",
	              WP_POLICY_ALLOWED, &err, &ok);
	ck_assert(!ok && err.kind == WP_CLAIM_E_OTHER);
	cJSON_Delete(spec);
	/* Allowed: new names appended */
	spec = inject("[{\"name\":\"NEW\",\"value\":\"1\"}]", WP_POLICY_ALLOWED, &err, &ok);
	ck_assert(ok);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ctr(spec, "containers", 0), "env")), 3);
	cJSON_Delete(spec);
	/* unknown container */
	spec = inject("[{\"name\":\"A\",\"value\":\"1\",\"containerName\":\"nope\"},"
	              "{\"name\":\"B\",\"value\":\"1\",\"containerName\":\"nope\"}]",
	              WP_POLICY_OVERRIDES, &err, &ok);
	ck_assert(!ok && err.kind == WP_CLAIM_E_OTHER);
	ck_assert_str_eq(err.msg, "target container \"nope\" not found in template for environment "
	                          "variable \"A\"");
	cJSON_Delete(spec);
	wp_claim_err_clear(&err);
}
END_TEST

START_TEST(env_envfrom)
{
	cJSON *tpl = fx_load("claim-template.json");
	cJSON *spec = cJSON_Duplicate(k8s_obj_at(tpl, "spec.podTemplate.spec"), true);
	cJSON_AddItemToObject((cJSON *)ctr(spec, "containers", 1), "envFrom",
	                      fx_json("[{\"configMapRef\":{\"name\":\"c\"}}]"));
	cJSON *claim = claim_with("env", "[{\"name\":\"A\",\"value\":\"1\"}]");
	wp_claim_err err = { 0 };
	/* sidecar receives nothing: its envFrom does not matter */
	ck_assert(wp_inject_env(spec, claim, WP_POLICY_ALLOWED, &err));
	cJSON_Delete(claim);
	claim = claim_with("env", "[{\"name\":\"A\",\"value\":\"1\",\"containerName\":\"sidecar\"}]");
	ck_assert(!wp_inject_env(spec, claim, WP_POLICY_ALLOWED, &err));
	ck_assert_int_eq(err.kind, WP_CLAIM_E_ENV_REJECTED);
	ck_assert_str_eq(err.msg, "environment variable injection rejected: container \"sidecar\" "
	                          "uses EnvFrom sources; Allowed policy cannot safely prevent "
	                          "overriding EnvFrom-provided variables");
	/* Overrides does not care */
	ck_assert(wp_inject_env(spec, claim, WP_POLICY_OVERRIDES, &err));
	wp_claim_err_clear(&err);
	cJSON_Delete(claim);
	cJSON_Delete(spec);
	cJSON_Delete(tpl);
}
END_TEST

#define VCT(n, size) "{\"metadata\":{\"name\":\"" n "\"},\"spec\":{\"resources\":{\"requests\":{\"storage\":\"" size "\"}}}}"

START_TEST(vct_merge)
{
	cJSON *tpl = fx_json("[" VCT("data", "1Gi") "," VCT("logs", "1Gi") "]");
	cJSON *claim = fx_json("[" VCT("cache", "2Gi") "," VCT("data", "5Gi") "]");
	wp_claim_err err = { 0 };
	cJSON *m = wp_merge_vcts(tpl, claim, WP_POLICY_OVERRIDES, &err);
	ck_assert_ptr_nonnull(m);
	fx_assert_json_str(m, "[" VCT("data", "5Gi") "," VCT("logs", "1Gi") "," VCT("cache", "2Gi") "]");
	cJSON_Delete(m);
	ck_assert_ptr_null(wp_merge_vcts(tpl, claim, WP_POLICY_ALLOWED, &err));
	ck_assert_int_eq(err.kind, WP_CLAIM_E_VCT);
	ck_assert_str_eq(err.msg, "failed to merge volume claim templates: overriding volume claim "
	                          "templates is forbidden by the template: cannot override template "
	                          "volume \"data\"");
	cJSON *claim2 = fx_json("[" VCT("cache", "2Gi") "]");
	m = wp_merge_vcts(tpl, claim2, WP_POLICY_ALLOWED, &err);
	fx_assert_json_str(m, "[" VCT("data", "1Gi") "," VCT("logs", "1Gi") "," VCT("cache", "2Gi") "]");
	cJSON_Delete(m);
	ck_assert_ptr_null(wp_merge_vcts(tpl, claim2, NULL, &err));
	ck_assert_str_eq(err.msg, "failed to merge volume claim templates: volume claim templates are "
	                          "disallowed by the template");
	ck_assert_ptr_null(wp_merge_vcts(tpl, claim2, "Sometimes", &err));
	ck_assert_int_eq(err.kind, WP_CLAIM_E_OTHER);
	ck_assert_str_eq(err.msg, "failed to merge volume claim templates: unknown volume claim "
	                          "templates policy \"Sometimes\"");
	/* validation: template first, then claim */
	cJSON *dup = fx_json("[" VCT("x", "1Gi") "," VCT("x", "1Gi") "]");
	cJSON *noname = fx_json("[" VCT("x", "1Gi") ",{\"spec\":{}}]");
	ck_assert_ptr_null(wp_merge_vcts(noname, dup, WP_POLICY_OVERRIDES, &err));
	ck_assert_str_eq(err.msg, "failed to merge volume claim templates: template: invalid volume "
	                          "claim templates: name at index 1 is empty");
	ck_assert_ptr_null(wp_merge_vcts(tpl, dup, WP_POLICY_OVERRIDES, &err));
	ck_assert_int_eq(err.kind, WP_CLAIM_E_VCT);
	ck_assert_str_eq(err.msg, "failed to merge volume claim templates: claim: invalid volume "
	                          "claim templates: duplicate name \"x\"");
	char *e = wp_vct_errors(tpl);
	ck_assert_ptr_null(e);
	wp_claim_err_clear(&err);
	cJSON_Delete(tpl);
	cJSON_Delete(claim);
	cJSON_Delete(claim2);
	cJSON_Delete(dup);
	cJSON_Delete(noname);
}
END_TEST

START_TEST(adoption_patch_with_template)
{
	cJSON *claim = fx_load("claim.json");
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "spec"), "additionalPodMetadata",
	                      fx_json("{\"labels\":{\"sandbox.users.io/t\":\"x\"}}"));
	cJSON *sbx = fx_load("sandbox-warm.json");
	cJSON *tpl = fx_load("claim-template.json");
	wp_claim_err err = { 0 };
	cJSON *p = wp_claim_adoption_patch(claim, sbx, tpl, NULL, &err);
	ck_assert_msg(p != NULL, "%s", err.msg);
	fx_assert_json_str(p,
		"{\"metadata\":{\"labels\":{"
		"\"agents.x-k8s.io/warm-pool-sandbox\":null,"
		"\"agents.x-k8s.io/sandbox-pod-template-hash\":null,"
		"\"agents.x-k8s.io/sandbox-template-hash\":null,"
		"\"agents.x-k8s.io/launch-type\":\"warm\","
		"\"agents.x-k8s.io/claim-uid\":\"c1a10000-0000-4000-8000-000000000001\","
		"\"agents.x-k8s.io/created-by\":\"python-client\","
		"\"agents.x-k8s.io/sandbox-template-ref-hash\":\"69155462\"},"
		"\"annotations\":{\"agents.x-k8s.io/pod-name\":\"test-pool-abcde\"},"
		"\"resourceVersion\":\"1001\","
		"\"ownerReferences\":[{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\","
		"\"kind\":\"SandboxClaim\",\"name\":\"my-claim\",\"uid\":\"c1a10000-0000-4000-8000-000000000001\","
		"\"controller\":true,\"blockOwnerDeletion\":true}]},"
		"\"spec\":{\"podTemplate\":{\"metadata\":{"
		"\"labels\":{\"agents.x-k8s.io/warm-pool-sandbox\":null,"
		"\"agents.x-k8s.io/sandbox-pod-template-hash\":null,"
		"\"agents.x-k8s.io/sandbox-template-hash\":null,"
		"\"agents.x-k8s.io/claim-uid\":\"c1a10000-0000-4000-8000-000000000001\","
		"\"agents.x-k8s.io/created-by\":\"python-client\","
		"\"sandbox.users.io/t\":\"x\"},"
		"\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":null}}}}}");
	/* applied, the podTemplate metadata is the template's + claim keys */
	ck_assert(k8s_obj_merge_patch(sbx, p));
	fx_assert_json_str(k8s_obj_at(sbx, "spec.podTemplate.metadata"),
		"{\"labels\":{\"app\":\"demo\",\"agents.x-k8s.io/sandbox-template-ref-hash\":\"69155462\","
		"\"agents.x-k8s.io/claim-uid\":\"c1a10000-0000-4000-8000-000000000001\","
		"\"agents.x-k8s.io/created-by\":\"python-client\",\"sandbox.users.io/t\":\"x\"},"
		"\"annotations\":{\"team\":\"blue\"}}");
	ck_assert(wp_controlled_by_claim(sbx, claim));
	ck_assert(wp_controlled_by_any_claim(sbx));
	cJSON_Delete(p);
	/* a conflicting claim key fails */
	cJSON_Delete(claim);
	claim = fx_load("claim.json");
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "spec"), "additionalPodMetadata",
	                      fx_json("{\"annotations\":{\"team\":\"red\"}}"));
	ck_assert_ptr_null(wp_claim_adoption_patch(claim, sbx, tpl, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "metadata override conflict: annotation \"team\""));
	wp_claim_err_clear(&err);
	cJSON_Delete(claim);
	cJSON_Delete(sbx);
	cJSON_Delete(tpl);
}
END_TEST

START_TEST(adoption_patch_without_template)
{
	cJSON *claim = fx_load("claim.json");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(claim, "metadata"), "labels");
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "metadata"), "annotations",
	                      fx_json("{\"opentelemetry.io/trace-context\":\"{}\"}"));
	cJSON *sbx = fx_load("sandbox-warm.json");
	/* no template-ref-hash label: computed from the template name */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(sbx, "metadata"), "labels"),
	                           "agents.x-k8s.io/sandbox-template-ref-hash");
	wp_claim_err err = { 0 };
	cJSON *p = wp_claim_adoption_patch(claim, sbx, NULL, "test-template", &err);
	ck_assert_ptr_nonnull(p);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(k8s_obj_at(p, "metadata.labels"),
	                                          "agents.x-k8s.io/created-by")));
	ck_assert_str_eq(cJSON_GetObjectItem(k8s_obj_at(p, "metadata.labels"),
	                                     "agents.x-k8s.io/sandbox-template-ref-hash")->valuestring,
	                 "69155462");
	ck_assert_str_eq(cJSON_GetObjectItem(k8s_obj_at(p, "metadata.annotations"),
	                                     "opentelemetry.io/trace-context")->valuestring, "{}");
	ck_assert(k8s_obj_merge_patch(sbx, p));
	/* the Sandbox's own metadata (pool labels kept), safe-to-evict "true" gone */
	fx_assert_json_str(k8s_obj_at(sbx, "spec.podTemplate.metadata"),
		"{\"labels\":{\"app\":\"demo\",\"agents.x-k8s.io/warm-pool-sandbox\":\"59733166\","
		"\"agents.x-k8s.io/sandbox-template-ref-hash\":\"69155462\","
		"\"agents.x-k8s.io/sandbox-pod-template-hash\":\"11111111\","
		"\"agents.x-k8s.io/sandbox-template-hash\":\"22222222\","
		"\"agents.x-k8s.io/claim-uid\":\"c1a10000-0000-4000-8000-000000000001\"},"
		"\"annotations\":{\"team\":\"blue\"}}");
	cJSON_Delete(p);
	cJSON_Delete(claim);
	cJSON_Delete(sbx);
}
END_TEST

START_TEST(candidates)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *sbx = fx_load("sandbox-warm.json");
	const char *why = "x";
	ck_assert(wp_claim_candidate_ok(claim, sbx, &why));
	ck_assert_ptr_null(why);
	cJSON *other = cJSON_Duplicate(sbx, true);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(other, "metadata"), "namespace",
	                          cJSON_CreateString("ns2"));
	ck_assert(!wp_claim_candidate_ok(claim, other, &why));
	cJSON_Delete(other);
	other = cJSON_Duplicate(sbx, true);
	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(k8s_obj_at(other, "metadata.ownerReferences"), 0),
	                          "name", cJSON_CreateString("other-pool"));
	ck_assert(!wp_claim_candidate_ok(claim, other, &why));
	ck_assert_str_eq(why, "sandbox belongs to another SandboxWarmPool");
	cJSON_Delete(other);
	other = cJSON_Duplicate(sbx, true);
	cJSON_AddStringToObject(cJSON_GetObjectItem(other, "metadata"), "deletionTimestamp", "2026-01-01T00:00:00Z");
	ck_assert(!wp_claim_candidate_ok(claim, other, NULL));
	cJSON_Delete(other);
	ck_assert(!wp_claim_forces_cold(claim));
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "spec"), "env",
	                      fx_json("[{\"name\":\"a\",\"value\":\"b\"}]"));
	ck_assert(wp_claim_forces_cold(claim));
	cJSON_Delete(claim);
	cJSON_Delete(sbx);
}
END_TEST

START_TEST(merge_diff)
{
	cJSON *a = fx_json("{\"x\":1,\"y\":{\"a\":1,\"b\":2},\"z\":[1,2],\"gone\":true}");
	cJSON *b = fx_json("{\"x\":1,\"y\":{\"a\":1,\"c\":3},\"z\":[1],\"new\":\"n\"}");
	cJSON *d = wp_merge_patch_diff(a, b);
	fx_assert_json_str(d, "{\"gone\":null,\"y\":{\"b\":null,\"c\":3},\"z\":[1],\"new\":\"n\"}");
	ck_assert(k8s_obj_merge_patch(a, d));
	fx_assert_json(a, b);
	cJSON_Delete(d);
	d = wp_merge_patch_diff(a, b);
	fx_assert_json_str(d, "{}");
	cJSON_Delete(d);
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("claim_build");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, env_routing_and_order);
	tcase_add_test(tc, env_policies);
	tcase_add_test(tc, env_envfrom);
	tcase_add_test(tc, vct_merge);
	tcase_add_test(tc, adoption_patch_with_template);
	tcase_add_test(tc, adoption_patch_without_template);
	tcase_add_test(tc, candidates);
	tcase_add_test(tc, merge_diff);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
