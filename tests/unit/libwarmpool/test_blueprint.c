/* Unit tests of libwarmpool/src/blueprint.c: secure defaults
 * (docs/api.md#secure-defaults), the blueprint and its hashes (docs/api.md#name-hash), semantic staleness (docs/api.md#staleness-and-update-strategies),
 * and the idle fields the blueprint carries (ours, docs/api.md#idle-suspend-and-resume). */
#include <check.h>
#include <string.h>
#include "warmpool/blueprint.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "fixture.h"

static cJSON *spec_of(const char *json)
{
	cJSON *s = cJSON_Parse(json);
	ck_assert_ptr_nonnull(s);
	return s;
}

START_TEST(secure_by_default_modes)
{
	cJSON *t = fx_load("template.json");
	ck_assert(wp_template_secure_by_default(t));            /* empty mgmt, no policy */
	fx_set_str(t, "spec.networkPolicyManagement", "Managed");
	ck_assert(wp_template_secure_by_default(t));
	fx_set(t, "spec.networkPolicy", cJSON_CreateNull());
	ck_assert(wp_template_secure_by_default(t));            /* null == absent */
	fx_set_json(t, "spec.networkPolicy", "{\"ingress\":[]}");
	ck_assert(!wp_template_secure_by_default(t));            /* custom rules */
	fx_del(t, "spec.networkPolicy");
	fx_set_str(t, "spec.networkPolicyManagement", "Unmanaged");
	ck_assert(!wp_template_secure_by_default(t));
	fx_set_str(t, "spec.networkPolicyManagement", "");
	ck_assert(wp_template_secure_by_default(t));
	cJSON_Delete(t);
	ck_assert(wp_template_secure_by_default(NULL));
}
END_TEST

START_TEST(secure_defaults_applied)
{
	cJSON *s = spec_of("{\"containers\":[],\"dnsConfig\":{\"searches\":[\"a\"],\"options\":[{\"name\":\"ndots\"}]}}");
	ck_assert_int_eq(wp_apply_secure_defaults(s, true), 0);
	cJSON *want = spec_of("{\"containers\":[],\"automountServiceAccountToken\":false,"
	                      "\"dnsPolicy\":\"None\",\"dnsConfig\":{\"nameservers\":[\"8.8.8.8\",\"1.1.1.1\"]}}");
	/* dnsConfig is replaced entirely: searches/options dropped. */
	ck_assert(cJSON_Compare(s, want, true));
	/* Idempotent. */
	ck_assert_int_eq(wp_apply_secure_defaults(s, true), 0);
	ck_assert(cJSON_Compare(s, want, true));
	cJSON_Delete(s);
	cJSON_Delete(want);
}
END_TEST

START_TEST(secure_defaults_keep_explicit)
{
	/* Explicit automount true and a set dnsPolicy are kept. */
	cJSON *s = spec_of("{\"automountServiceAccountToken\":true,\"dnsPolicy\":\"ClusterFirst\","
	                   "\"dnsConfig\":{\"searches\":[\"a\"]}}");
	cJSON *copy = cJSON_Duplicate(s, true);
	ck_assert_int_eq(wp_apply_secure_defaults(s, true), 0);
	ck_assert(cJSON_Compare(s, copy, true));
	cJSON_Delete(copy);
	cJSON_Delete(s);

	/* Not secure-by-default: only automount; DNS untouched. */
	s = spec_of("{\"automountServiceAccountToken\":null}");
	ck_assert_int_eq(wp_apply_secure_defaults(s, false), 0);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(s, "automountServiceAccountToken")));
	ck_assert_ptr_null(cJSON_GetObjectItem(s, "dnsPolicy"));
	ck_assert_ptr_null(cJSON_GetObjectItem(s, "dnsConfig"));
	cJSON_Delete(s);

	/* An explicit false stays false. */
	s = spec_of("{\"automountServiceAccountToken\":false,\"dnsPolicy\":\"\"}");
	ck_assert_int_eq(wp_apply_secure_defaults(s, true), 0);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(s, "automountServiceAccountToken")));
	ck_assert_str_eq(cJSON_GetObjectItem(s, "dnsPolicy")->valuestring, "None");
	cJSON_Delete(s);
}
END_TEST

START_TEST(secure_defaults_invalid)
{
	ck_assert_int_eq(wp_apply_secure_defaults(NULL, true), ASB_EINVAL);
	cJSON *a = cJSON_CreateArray();
	ck_assert_int_eq(wp_apply_secure_defaults(a, true), ASB_EINVAL);
	ck_assert(strlen(asb_error_last()->message) > 0);
	cJSON_Delete(a);
}
END_TEST

START_TEST(blueprint_members)
{
	cJSON *t = fx_load("template.json");
	fx_set_str(t, "spec.envVarsInjectionPolicy", "Allowed");
	fx_set(t, "spec.service", cJSON_CreateTrue());
	cJSON *bp = wp_blueprint_new(t);
	ck_assert_ptr_nonnull(bp);
	ck_assert_int_eq(cJSON_GetArraySize(bp), 3);
	/* Go field order, deep copies of the template's members. */
	ck_assert_str_eq(bp->child->string, "podTemplate");
	ck_assert_str_eq(bp->child->next->string, "volumeClaimTemplates");
	ck_assert_str_eq(bp->child->next->next->string, "service");
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(bp, "podTemplate"),
	                        k8s_obj_at(t, "spec.podTemplate"), true));
	ck_assert_ptr_ne(cJSON_GetObjectItem(bp, "podTemplate"), k8s_obj_at(t, "spec.podTemplate"));
	ck_assert_ptr_null(cJSON_GetObjectItem(bp, "envVarsInjectionPolicy"));
	cJSON_Delete(bp);

	/* Absent members stay absent. */
	fx_del(t, "spec.volumeClaimTemplates");
	fx_del(t, "spec.service");
	bp = wp_blueprint_new(t);
	ck_assert_int_eq(cJSON_GetArraySize(bp), 1);
	cJSON_Delete(bp);

	fx_del(t, "spec.podTemplate");
	ck_assert_ptr_null(wp_blueprint_new(t));
	ck_assert_int_eq(asb_error_last()->code, ASB_EINVAL);
	cJSON_Delete(t);
}
END_TEST

START_TEST(hashes)
{
	cJSON *t = fx_load("template.json");
	char bh[SBX_NAME_HASH_SIZE], ph[SBX_NAME_HASH_SIZE], h2[SBX_NAME_HASH_SIZE];
	ck_assert_int_eq(wp_blueprint_hash(t, bh), 0);
	ck_assert_int_eq(wp_pod_template_hash(t, ph), 0);
	ck_assert_int_eq(strlen(bh), 8);
	ck_assert_int_eq(strlen(ph), 8);

	/* The pod-template hash is NameHash(JSON(spec.podTemplate)). */
	char *s = cJSON_PrintUnformatted(k8s_obj_at(t, "spec.podTemplate"));
	sbx_name_hash(s, h2);
	cJSON_free(s);
	ck_assert_str_eq(ph, h2);

	/* Policies and metadata outside the blueprint do not change it ... */
	fx_set_str(t, "spec.envVarsInjectionPolicy", "Allowed");
	fx_set_str(t, "metadata.resourceVersion", "101");
	ck_assert_int_eq(wp_blueprint_hash(t, h2), 0);
	ck_assert_str_eq(bh, h2);
	/* ... the VCTs and service change the blueprint hash but not the pod one. */
	fx_set(t, "spec.service", cJSON_CreateTrue());
	ck_assert_int_eq(wp_blueprint_hash(t, h2), 0);
	ck_assert_str_ne(bh, h2);
	ck_assert_int_eq(wp_pod_template_hash(t, h2), 0);
	ck_assert_str_eq(ph, h2);

	fx_del(t, "spec.podTemplate");
	ck_assert_int_eq(wp_blueprint_hash(t, h2), ASB_EINVAL);
	ck_assert_int_eq(wp_pod_template_hash(t, h2), ASB_EINVAL);
	cJSON_Delete(t);
}
END_TEST

START_TEST(differs_not_for_defaults_and_metadata)
{
	cJSON *t = fx_load("template.json"), *m = fx_load("member.json");
	/* The member carries the secure defaults, pool labels and a
	 * different VCT metadata: none of that is drift. */
	ck_assert(!wp_blueprint_differs(t, m));
	fx_set_json(t, "spec.podTemplate.metadata", "{\"labels\":{\"other\":\"1\"}}");
	fx_set_str(t, "spec.envVarsInjectionPolicy", "Overrides");
	ck_assert(!wp_blueprint_differs(t, m));
	/* An empty list equals a missing one. */
	fx_set_json(m, "spec.podTemplate.spec.volumes", "[]");
	ck_assert(!wp_blueprint_differs(t, m));
	cJSON_Delete(t);
	cJSON_Delete(m);
}
END_TEST

START_TEST(differs_on_spec_vct_service)
{
	cJSON *t = fx_load("template.json"), *m = fx_load("member.json");
	cJSON *c;

	c = cJSON_Duplicate(t, true);
	fx_set_json(c, "spec.podTemplate.spec.containers", "[{\"name\":\"main\",\"image\":\"python:3.13\"}]");
	ck_assert(wp_blueprint_differs(c, m));
	cJSON_Delete(c);

	/* Custom network policy: no DNS override in the template any more. */
	c = cJSON_Duplicate(t, true);
	fx_set_json(c, "spec.networkPolicy", "{\"egress\":[]}");
	ck_assert(wp_blueprint_differs(c, m));
	cJSON_Delete(c);

	/* VCT: name, spec, length, order. */
	c = cJSON_Duplicate(t, true);
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(c, "spec.volumeClaimTemplates"), 0), "metadata.name", "other");
	ck_assert(wp_blueprint_differs(c, m));
	cJSON_Delete(c);
	c = cJSON_Duplicate(t, true);
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(c, "spec.volumeClaimTemplates"), 0),
	           "spec.resources.requests.storage", "2Gi");
	ck_assert(wp_blueprint_differs(c, m));
	cJSON_Delete(c);
	c = cJSON_Duplicate(t, true);
	fx_del(c, "spec.volumeClaimTemplates");
	ck_assert(wp_blueprint_differs(c, m));
	cJSON_Delete(c);

	/* service: nil, false and true all differ from one another. */
	c = cJSON_Duplicate(t, true);
	fx_set(c, "spec.service", cJSON_CreateFalse());
	ck_assert(wp_blueprint_differs(c, m));
	fx_set(m, "spec.service", cJSON_CreateFalse());
	ck_assert(!wp_blueprint_differs(c, m));
	fx_set(c, "spec.service", cJSON_CreateTrue());
	ck_assert(wp_blueprint_differs(c, m));
	cJSON_Delete(c);
	cJSON_Delete(t);
	cJSON_Delete(m);
}
END_TEST

START_TEST(differs_quantities_by_value)
{
	cJSON *t = fx_load("template.json"), *m = fx_load("member.json");
	cJSON *lim = (cJSON *)k8s_obj_at(cJSON_GetArrayItem(k8s_obj_at(m, "spec.podTemplate.spec.containers"), 0),
	                                 "resources.limits");
	/* Template says memory 1Gi, cpu 500m. */
	fx_set_str(lim, "memory", "1024Mi");
	fx_set_str(lim, "cpu", "0.5");
	ck_assert(!wp_blueprint_differs(t, m));
	fx_set_str(lim, "memory", "1073741824");
	fx_set_str(lim, "cpu", "5e-1");
	ck_assert(!wp_blueprint_differs(t, m));
	fx_set_str(lim, "memory", "1.5Gi");
	ck_assert(wp_blueprint_differs(t, m));
	fx_set_str(lim, "memory", "1G");          /* decimal giga != Gi */
	ck_assert(wp_blueprint_differs(t, m));
	fx_set_str(lim, "memory", "1Gi");
	fx_set_str(lim, "cpu", "501m");
	ck_assert(wp_blueprint_differs(t, m));
	/* A number equals its string form. */
	fx_set_str(lim, "cpu", "500m");
	cJSON_AddItemToObject((cJSON *)k8s_obj_at(cJSON_GetArrayItem(k8s_obj_at(t, "spec.podTemplate.spec.containers"), 0),
	                                          "resources"), "requests", cJSON_Parse("{\"cpu\":2}"));
	cJSON_AddItemToObject((cJSON *)k8s_obj_at(cJSON_GetArrayItem(k8s_obj_at(m, "spec.podTemplate.spec.containers"), 0),
	                                          "resources"), "requests", cJSON_Parse("{\"cpu\":\"2000m\"}"));
	ck_assert(!wp_blueprint_differs(t, m));
	/* Not a quantity: compared as is. */
	fx_set_str(lim, "cpu", "lots");
	ck_assert(wp_blueprint_differs(t, m));
	fx_set_str(lim, "cpu", "500m");
	/* VCT storage by value too. */
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(m, "spec.volumeClaimTemplates"), 0),
	           "spec.resources.requests.storage", "1024Mi");
	ck_assert(!wp_blueprint_differs(t, m));
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(m, "spec.volumeClaimTemplates"), 0),
	           "spec.resources.requests.storage", "1025Mi");
	ck_assert(wp_blueprint_differs(t, m));
	/* Quantities elsewhere are plain strings (an env value "1Gi"). */
	cJSON_Delete(m);
	m = fx_load("member.json");
	fx_set_json(t, "spec.podTemplate.spec.containers",
	            "[{\"name\":\"main\",\"image\":\"python:3.12\",\"env\":[{\"name\":\"X\",\"value\":\"1Gi\"}]}]");
	fx_set_json(m, "spec.podTemplate.spec.containers",
	            "[{\"name\":\"main\",\"image\":\"python:3.12\",\"env\":[{\"name\":\"X\",\"value\":\"1024Mi\"}]}]");
	ck_assert(wp_blueprint_differs(t, m));
	/* Pod overhead. */
	fx_set_json(t, "spec.podTemplate.spec.containers", "[{\"name\":\"main\"}]");
	fx_set_json(m, "spec.podTemplate.spec.containers", "[{\"name\":\"main\"}]");
	fx_set_json(t, "spec.podTemplate.spec.overhead", "{\"memory\":\"1Ki\"}");
	fx_set_json(m, "spec.podTemplate.spec.overhead", "{\"memory\":\"1024\"}");
	ck_assert(!wp_blueprint_differs(t, m));
	/* The template itself is not rewritten. */
	ck_assert_str_eq(k8s_obj_str(t, "spec.podTemplate.spec.overhead.memory"), "1Ki");
	cJSON_Delete(t);
	cJSON_Delete(m);
}
END_TEST

START_TEST(stale_ref_hash)
{
	cJSON *t = fx_load("template.json"), *m = fx_load("member.json");
	ck_assert(!wp_sandbox_is_stale(t, NULL, m, true));
	fx_label(m, "agents.x-k8s.io/sandbox-template-ref-hash", "12345678");
	ck_assert(wp_sandbox_is_stale(t, NULL, m, true));
	ck_assert(wp_sandbox_is_stale(t, NULL, m, false));
	fx_label(m, "agents.x-k8s.io/sandbox-template-ref-hash", NULL);
	ck_assert(wp_sandbox_is_stale(t, NULL, m, true));
	cJSON_Delete(t);
	cJSON_Delete(m);
}
END_TEST

START_TEST(stale_owned_hash_then_semantic)
{
	cJSON *t = fx_load("template.json"), *m = fx_load("member.json");
	char h[SBX_NAME_HASH_SIZE];
	ck_assert_int_eq(wp_blueprint_hash(t, h), 0);

	/* Hash label mismatch but same content (e.g. after an upgrade): fresh. */
	ck_assert(!wp_sandbox_is_stale(t, h, m, true));
	/* Content differs and hash mismatches: stale. */
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(m, "spec.podTemplate.spec.containers"), 0), "image", "old");
	ck_assert(wp_sandbox_is_stale(t, h, m, true));
	/* Hash label matches: fresh without looking at the content. */
	fx_label(m, "agents.x-k8s.io/sandbox-template-hash", h);
	ck_assert(!wp_sandbox_is_stale(t, h, m, true));
	/* No current hash: owned members are fresh. */
	fx_label(m, "agents.x-k8s.io/sandbox-template-hash", "00000000");
	ck_assert(!wp_sandbox_is_stale(t, NULL, m, true));
	/* Orphans are judged by content only, whatever their hash label. */
	ck_assert(wp_sandbox_is_stale(t, h, m, false));
	fx_label(m, "agents.x-k8s.io/sandbox-template-hash", h);
	ck_assert(wp_sandbox_is_stale(t, h, m, false));
	cJSON_Delete(m);
	m = fx_load("member.json");
	ck_assert(!wp_sandbox_is_stale(t, h, m, false));
	cJSON_Delete(t);
	cJSON_Delete(m);
}
END_TEST

/* ---- idle fields (ours, docs/api.md#idle-suspend-and-resume) ---- */

START_TEST(blueprint_idle_fields)
{
	cJSON *t = fx_load("template.json");
	char before[SBX_NAME_HASH_SIZE], h[SBX_NAME_HASH_SIZE], h2[SBX_NAME_HASH_SIZE];
	ck_assert_int_eq(wp_blueprint_hash(t, before), 0);
	fx_set(t, "spec.idleTimeoutSeconds", cJSON_CreateNumber(600));
	fx_set_str(t, "spec.idlePolicy", "Delete");
	cJSON *bp = wp_blueprint_new(t);
	ck_assert_ptr_nonnull(bp);
	/* after upstream's members, copied as they are */
	ck_assert_int_eq(cJSON_GetArraySize(bp), 4);
	ck_assert_str_eq(bp->child->next->next->string, "idleTimeoutSeconds");
	ck_assert_str_eq(bp->child->next->next->next->string, "idlePolicy");
	ck_assert_int_eq(cJSON_GetObjectItem(bp, "idleTimeoutSeconds")->valueint, 600);
	ck_assert_str_eq(cJSON_GetObjectItem(bp, "idlePolicy")->valuestring, "Delete");
	cJSON_Delete(bp);
	/* they are part of the blueprint hash ... */
	ck_assert_int_eq(wp_blueprint_hash(t, h), 0);
	ck_assert_str_ne(h, before);
	fx_set(t, "spec.idleTimeoutSeconds", cJSON_CreateNumber(601));
	ck_assert_int_eq(wp_blueprint_hash(t, h2), 0);
	ck_assert_str_ne(h, h2);
	/* ... not of the pod-template hash, and a template without them
	 * (or with null ones) hashes as before they existed */
	fx_set(t, "spec.idleTimeoutSeconds", cJSON_CreateNull());
	fx_set(t, "spec.idlePolicy", cJSON_CreateNull());
	ck_assert_int_eq(wp_blueprint_hash(t, h2), 0);
	ck_assert_str_eq(h2, before);
	bp = wp_blueprint_new(t);
	ck_assert_int_eq(cJSON_GetArraySize(bp), 2);
	cJSON_Delete(bp);
	cJSON_Delete(t);
}
END_TEST

START_TEST(differs_on_idle_policy)
{
	cJSON *t = fx_load("template.json"), *m = fx_load("member.json");
	char h[SBX_NAME_HASH_SIZE];
	/* the template gains a timeout the member lacks: it differs, and an
	 * owned member with the old hash label is stale */
	fx_set(t, "spec.idleTimeoutSeconds", cJSON_CreateNumber(600));
	ck_assert(wp_blueprint_differs(t, m));
	ck_assert_int_eq(wp_blueprint_hash(t, h), 0);
	ck_assert(wp_sandbox_is_stale(t, h, m, true));
	/* the same pair: fresh; an absent idlePolicy equals Suspend */
	fx_set(m, "spec.idleTimeoutSeconds", cJSON_CreateNumber(600));
	ck_assert(!wp_blueprint_differs(t, m));
	ck_assert(!wp_sandbox_is_stale(t, h, m, true));
	fx_set_str(m, "spec.idlePolicy", "Suspend");
	ck_assert(!wp_blueprint_differs(t, m));
	/* another timeout or policy differs */
	fx_set_str(t, "spec.idlePolicy", "Delete");
	ck_assert(wp_blueprint_differs(t, m));
	fx_set_str(m, "spec.idlePolicy", "Delete");
	ck_assert(!wp_blueprint_differs(t, m));
	fx_set(t, "spec.idleTimeoutSeconds", cJSON_CreateNumber(30));
	ck_assert(wp_blueprint_differs(t, m));
	/* the template drops them: a member still carrying them differs */
	fx_del(t, "spec.idleTimeoutSeconds");
	fx_del(t, "spec.idlePolicy");
	ck_assert(wp_blueprint_differs(t, m));
	/* a policy without a timeout is no policy on either side */
	fx_del(m, "spec.idleTimeoutSeconds");
	ck_assert(!wp_blueprint_differs(t, m));
	cJSON_Delete(t);
	cJSON_Delete(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("blueprint");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, secure_by_default_modes);
	tcase_add_test(tc, secure_defaults_applied);
	tcase_add_test(tc, secure_defaults_keep_explicit);
	tcase_add_test(tc, secure_defaults_invalid);
	tcase_add_test(tc, blueprint_members);
	tcase_add_test(tc, hashes);
	tcase_add_test(tc, blueprint_idle_fields);
	tcase_add_test(tc, differs_on_idle_policy);
	tcase_add_test(tc, differs_not_for_defaults_and_metadata);
	tcase_add_test(tc, differs_on_spec_vct_service);
	tcase_add_test(tc, differs_quantities_by_value);
	tcase_add_test(tc, stale_ref_hash);
	tcase_add_test(tc, stale_owned_hash_then_semantic);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
