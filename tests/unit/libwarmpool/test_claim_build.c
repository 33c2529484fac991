/*
 * Unit tests of libwarmpool/src/claim_build.c: env injection
 * (docs/api.md#env-injection: policies, routing to init/main containers, order, envFrom, override
 * rules), the VCT merge (docs/api.md#claim-volumeclaimtemplates), the adoption patch (docs/api.md#claim-adoption step 2, with and
 * without the template), candidate verification (docs/api.md#claim-adoption), the merge-patch
 * diff, and the idle fields (ours, docs/api.md#idle-suspend-and-resume): the claim's pair over
 * the template's, and the adoption patch that sets them and starts the idle clock.
 */
#include <string.h>
#include "fixture.h"
#include "claim.h"
#include "jsonutil.h"
#include "k8s/object.h"

/* 2026-01-02T03:10:00Z: the adoption time of the tests. */
#define NOW_MS 1767323400000LL
#define NOW "2026-01-02T03:10:00Z"

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
	cJSON *p = wp_claim_adoption_patch(claim, sbx, tpl, NULL, NOW_MS, &err);
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
	ck_assert_ptr_null(wp_claim_adoption_patch(claim, sbx, tpl, NULL, NOW_MS, &err));
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
	cJSON *p = wp_claim_adoption_patch(claim, sbx, NULL, "test-template", NOW_MS, &err);
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

/* ---- idle fields (ours, docs/api.md#idle-suspend-and-resume) ---- */

/* Sets each member of the JSON object `json` (NULL: none) under `path` of `obj`. */
static void set_members(cJSON *obj, const char *path, const char *json)
{
	if (!json || !obj)
		return;
	cJSON *extra = fx_json(json);
	cJSON *it;
	cJSON_ArrayForEach(it, extra) {
		char p[128];
		snprintf(p, sizeof(p), "%s.%s", path, it->string);
		fx_set(obj, p, cJSON_Duplicate(it, true));
	}
	cJSON_Delete(extra);
}

/* wp_claim_idle_fields() of a claim with lifecycle `lc` and a template with
 * spec members `tspec` (JSON objects, NULL: none) is `want`, `want_action`. */
static void check_idle(const char *lc, const char *tspec, const char *want, sbx_idle_action want_action)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *tpl = fx_load("claim-template.json");
	set_members(claim, "spec.lifecycle", lc);
	set_members(tpl, "spec", tspec);
	sbx_idle_action action = (sbx_idle_action)-1;
	cJSON *got = wp_claim_idle_fields(claim, tpl, &action);
	ck_assert_ptr_nonnull(got);
	fx_assert_json_str(got, want);
	ck_assert_msg(action == want_action, "lifecycle %s, template %s: action %d, want %d",
	              lc ? lc : "-", tspec ? tspec : "-", (int)action, (int)want_action);
	cJSON_Delete(got);
	cJSON_Delete(claim);
	cJSON_Delete(tpl);
}

START_TEST(idle_fields_claim_over_template)
{
	const char *tpl_delete = "{\"idleTimeoutSeconds\":3600,\"idlePolicy\":\"Delete\"}";
	/* the claim's pair wins whole */
	check_idle("{\"idleTimeoutSeconds\":60,\"idlePolicy\":\"Suspend\"}", tpl_delete,
	           "{\"idleTimeoutSeconds\":60,\"idlePolicy\":\"Suspend\"}", SBX_IDLE_SUSPEND);
	/* a claim timeout without a policy: Suspend, not the template's Delete */
	check_idle("{\"idleTimeoutSeconds\":60,\"shutdownPolicy\":\"Retain\"}", tpl_delete,
	           "{\"idleTimeoutSeconds\":60}", SBX_IDLE_SUSPEND);
	check_idle("{\"idleTimeoutSeconds\":90,\"idlePolicy\":\"Delete\"}", NULL,
	           "{\"idleTimeoutSeconds\":90,\"idlePolicy\":\"Delete\"}", SBX_IDLE_DELETE);
	/* a claim policy without a timeout sets nothing: the template's pair */
	check_idle("{\"idlePolicy\":\"Suspend\"}", tpl_delete, tpl_delete, SBX_IDLE_DELETE);
	check_idle(NULL, "{\"idleTimeoutSeconds\":30}", "{\"idleTimeoutSeconds\":30}", SBX_IDLE_SUSPEND);
	/* neither sets a timeout: none (a lone template policy included) */
	check_idle(NULL, NULL, "{}", SBX_IDLE_OFF);
	check_idle("{\"idlePolicy\":\"Delete\"}", "{\"idlePolicy\":\"Delete\"}", "{}", SBX_IDLE_OFF);
	/* no claim, no base */
	cJSON *got = wp_claim_idle_fields(NULL, NULL, NULL);
	fx_assert_json_str(got, "{}");
	cJSON_Delete(got);
}
END_TEST

/* The adoption patch of the fixture warm member carrying `member` idle
 * fields (JSON object members of its spec, NULL: none) for a claim with
 * lifecycle `lc` from a template with `tspec` (NULL template: unknown). The
 * patch is applied to the member, which is returned in *adopted. */
static cJSON *adopt_idle(const char *member, const char *lc, const char *tspec, bool with_tpl,
                         cJSON **adopted)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *sbx = fx_load("sandbox-warm.json");
	cJSON *tpl = with_tpl ? fx_load("claim-template.json") : NULL;
	set_members(claim, "spec.lifecycle", lc);
	set_members(sbx, "spec", member);
	set_members(tpl, "spec", tspec);
	wp_claim_err err = { 0 };
	cJSON *p = wp_claim_adoption_patch(claim, sbx, tpl, "test-template", NOW_MS, &err);
	ck_assert_msg(p != NULL, "%s", err.msg);
	ck_assert(k8s_obj_merge_patch(sbx, p));
	*adopted = sbx;
	cJSON_Delete(claim);
	cJSON_Delete(tpl);
	return p;
}

static const cJSON *spec_idle(const cJSON *p, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "spec"), key);
}

START_TEST(adoption_patch_idle_from_template)
{
	const char *pair = "{\"idleTimeoutSeconds\":300,\"idlePolicy\":\"Delete\"}";
	cJSON *sbx;
	/* the member carries the template's pair: spec untouched, clock stamped */
	cJSON *p = adopt_idle(pair, NULL, pair, true, &sbx);
	ck_assert_ptr_null(spec_idle(p, "idleTimeoutSeconds"));
	ck_assert_ptr_null(spec_idle(p, "idlePolicy"));
	ck_assert_str_eq(k8s_obj_annotation(sbx, SBX_ANNOTATION_LAST_ACTIVITY), NOW);
	ck_assert_int_eq(k8s_obj_at(sbx, "spec.idleTimeoutSeconds")->valueint, 300);
	ck_assert_str_eq(k8s_obj_str(sbx, "spec.idlePolicy"), "Delete");
	/* its idle clock is the adoption, not its creation or Ready hours before */
	ck_assert(sbx_idle_last_activity_ms(sbx) == NOW_MS);
	cJSON_Delete(p);
	cJSON_Delete(sbx);
	/* a member built before the template got them: set from the template */
	p = adopt_idle(NULL, NULL, pair, true, &sbx);
	ck_assert_int_eq(spec_idle(p, "idleTimeoutSeconds")->valueint, 300);
	ck_assert_str_eq(spec_idle(p, "idlePolicy")->valuestring, "Delete");
	ck_assert_str_eq(k8s_obj_annotation(sbx, SBX_ANNOTATION_LAST_ACTIVITY), NOW);
	cJSON_Delete(p);
	cJSON_Delete(sbx);
	/* the template dropped them since: nulled, no stamp */
	p = adopt_idle(pair, NULL, NULL, true, &sbx);
	ck_assert(cJSON_IsNull(spec_idle(p, "idleTimeoutSeconds")));
	ck_assert(cJSON_IsNull(spec_idle(p, "idlePolicy")));
	ck_assert_ptr_null(k8s_obj_at(sbx, "spec.idleTimeoutSeconds"));
	ck_assert_ptr_null(k8s_obj_at(sbx, "spec.idlePolicy"));
	ck_assert_ptr_null(k8s_obj_annotation(sbx, SBX_ANNOTATION_LAST_ACTIVITY));
	cJSON_Delete(p);
	cJSON_Delete(sbx);
	/* template unknown: the member's own pair stands */
	p = adopt_idle(pair, NULL, NULL, false, &sbx);
	ck_assert_ptr_null(spec_idle(p, "idleTimeoutSeconds"));
	ck_assert_ptr_null(spec_idle(p, "idlePolicy"));
	ck_assert_str_eq(k8s_obj_annotation(sbx, SBX_ANNOTATION_LAST_ACTIVITY), NOW);
	cJSON_Delete(p);
	cJSON_Delete(sbx);
	/* nothing anywhere: neither spec nor annotation (the upstream patch) */
	p = adopt_idle(NULL, NULL, NULL, true, &sbx);
	ck_assert_ptr_null(spec_idle(p, "idleTimeoutSeconds"));
	ck_assert_ptr_null(spec_idle(p, "idlePolicy"));
	ck_assert_ptr_null(cJSON_GetObjectItem(k8s_obj_at(p, "metadata.annotations"),
	                                       SBX_ANNOTATION_LAST_ACTIVITY));
	cJSON_Delete(p);
	cJSON_Delete(sbx);
}
END_TEST

START_TEST(adoption_patch_idle_claim_wins)
{
	const char *pair = "{\"idleTimeoutSeconds\":300,\"idlePolicy\":\"Delete\"}";
	cJSON *sbx;
	/* the claim's pair replaces the member's (the template's) */
	cJSON *p = adopt_idle(pair, "{\"idleTimeoutSeconds\":45,\"idlePolicy\":\"Suspend\"}", pair,
	                      true, &sbx);
	ck_assert_int_eq(spec_idle(p, "idleTimeoutSeconds")->valueint, 45);
	ck_assert_str_eq(spec_idle(p, "idlePolicy")->valuestring, "Suspend");
	ck_assert_int_eq(k8s_obj_at(sbx, "spec.idleTimeoutSeconds")->valueint, 45);
	ck_assert_str_eq(k8s_obj_str(sbx, "spec.idlePolicy"), "Suspend");
	ck_assert_str_eq(k8s_obj_annotation(sbx, SBX_ANNOTATION_LAST_ACTIVITY), NOW);
	cJSON_Delete(p);
	cJSON_Delete(sbx);
	/* a claim timeout alone: the template's Delete is nulled (Suspend) */
	p = adopt_idle(pair, "{\"idleTimeoutSeconds\":45}", pair, true, &sbx);
	ck_assert_int_eq(spec_idle(p, "idleTimeoutSeconds")->valueint, 45);
	ck_assert(cJSON_IsNull(spec_idle(p, "idlePolicy")));
	ck_assert_ptr_null(k8s_obj_at(sbx, "spec.idlePolicy"));
	sbx_idle_policy pol;
	sbx_idle_policy_of(sbx, &pol);
	ck_assert_int_eq(pol.action, SBX_IDLE_SUSPEND);
	ck_assert(pol.timeout_ms == 45000);
	cJSON_Delete(p);
	cJSON_Delete(sbx);
	/* a claim pair on a member of a template without one; template unknown too */
	for (int with_tpl = 0; with_tpl < 2; with_tpl++) {
		p = adopt_idle(NULL, "{\"idleTimeoutSeconds\":31536000,\"idlePolicy\":\"Delete\"}", NULL,
		               with_tpl, &sbx);
		fx_assert_json_str(k8s_obj_at(sbx, "spec.idleTimeoutSeconds"), "31536000");
		ck_assert_str_eq(k8s_obj_str(sbx, "spec.idlePolicy"), "Delete");
		ck_assert_str_eq(k8s_obj_annotation(sbx, SBX_ANNOTATION_LAST_ACTIVITY), NOW);
		/* the rest of the adoption is unchanged */
		ck_assert_ptr_null(k8s_obj_label(sbx, "agents.x-k8s.io/warm-pool-sandbox"));
		ck_assert_str_eq(k8s_obj_label(sbx, "agents.x-k8s.io/launch-type"), "warm");
		cJSON_Delete(p);
		cJSON_Delete(sbx);
	}
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
	tcase_add_test(tc, idle_fields_claim_over_template);
	tcase_add_test(tc, adoption_patch_idle_from_template);
	tcase_add_test(tc, adoption_patch_idle_claim_wins);
	tcase_add_test(tc, candidates);
	tcase_add_test(tc, merge_diff);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
