/* Unit tests of the pure half of libwarmpool/src/templatectl.c: the
 * template label patch and the NetworkPolicy decision (docs/api.md#sandboxtemplate-controller). */
#include <check.h>
#include <string.h>
#include "templatectl_plan.h"
#include "warmpool/api.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "fixture.h"

START_TEST(np_name)
{
	char *n = wp_template_np_name("tpl");
	ck_assert_str_eq(n, "tpl-network-policy");
	free(n);
}
END_TEST

START_TEST(label_patch)
{
	cJSON *t = fx_load("template.json");
	bool oom = true;
	cJSON *p = wp_template_label_patch(t, &oom);
	ck_assert(!oom);
	ck_assert_ptr_nonnull(p);
	cJSON *want = cJSON_Parse("{\"metadata\":{\"labels\":{\"agents.x-k8s.io/sandbox-template-ref-hash\":\"9d22159f\"}}}");
	ck_assert(cJSON_Compare(p, want, true));
	cJSON_Delete(p);
	/* Already labelled: no patch. */
	fx_label(t, "agents.x-k8s.io/sandbox-template-ref-hash", "9d22159f");
	ck_assert_ptr_null(wp_template_label_patch(t, &oom));
	ck_assert(!oom);
	/* Wrong value: patched back. */
	fx_label(t, "agents.x-k8s.io/sandbox-template-ref-hash", "bad");
	p = wp_template_label_patch(t, &oom);
	ck_assert(cJSON_Compare(p, want, true));
	cJSON_Delete(p);
	cJSON_Delete(want);
	cJSON_Delete(t);
}
END_TEST

START_TEST(secure_default_spec)
{
	cJSON *t = fx_load("template.json"), *np = fx_load("networkpolicy.json");
	cJSON *spec = wp_template_np_spec(t);
	ck_assert(cJSON_Compare(spec, cJSON_GetObjectItem(np, "spec"), true));
	/* Member order of NetworkPolicySpec. */
	ck_assert_str_eq(spec->child->string, "podSelector");
	ck_assert_str_eq(spec->child->next->next->next->string, "policyTypes");
	cJSON_Delete(spec);
	/* Managed explicitly, and a null policy: same. */
	fx_set_str(t, "spec.networkPolicyManagement", "Managed");
	fx_set(t, "spec.networkPolicy", cJSON_CreateNull());
	spec = wp_template_np_spec(t);
	ck_assert(cJSON_Compare(spec, cJSON_GetObjectItem(np, "spec"), true));
	cJSON_Delete(spec);
	cJSON_Delete(np);
	cJSON_Delete(t);
}
END_TEST

START_TEST(custom_rules_verbatim)
{
	cJSON *t = fx_load("template.json");
	const char *rule = "[{\"ports\":[{\"port\":443,\"protocol\":\"TCP\"}],\"to\":[{\"ipBlock\":{\"cidr\":\"1.2.3.4/32\"}}]}]";
	fx_set_json(t, "spec.networkPolicy", "{}");
	fx_set_json(t, "spec.networkPolicy.egress", rule);
	cJSON *spec = wp_template_np_spec(t);
	cJSON *want = cJSON_Parse("{\"podSelector\":{\"matchLabels\":{\"agents.x-k8s.io/sandbox-template-ref-hash\":\"9d22159f\"}},"
	                          "\"policyTypes\":[\"Ingress\",\"Egress\"]}");
	fx_set_json(want, "egress", rule);
	/* No ingress member: with policyTypes Ingress that denies all ingress. */
	ck_assert(cJSON_Compare(spec, want, false));
	ck_assert_ptr_null(cJSON_GetObjectItem(spec, "ingress"));
	cJSON_Delete(spec);
	/* Empty lists are kept as given (deny). */
	fx_set_json(t, "spec.networkPolicy", "{\"ingress\":[],\"egress\":[]}");
	spec = wp_template_np_spec(t);
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(spec, "ingress")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "ingress")), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "egress")), 0);
	cJSON_Delete(spec);
	cJSON_Delete(want);
	cJSON_Delete(t);
}
END_TEST

START_TEST(decide_create)
{
	cJSON *t = fx_load("template.json");
	wp_np_decision d;
	ck_assert_int_eq(wp_template_np_decide(t, NULL, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_CREATE);
	ck_assert_str_eq(k8s_obj_str(d.body, "apiVersion"), "networking.k8s.io/v1");
	ck_assert_str_eq(k8s_obj_str(d.body, "kind"), "NetworkPolicy");
	ck_assert_str_eq(k8s_obj_name(d.body), "tpl-network-policy");
	ck_assert_str_eq(k8s_obj_namespace(d.body), "ns1");
	const cJSON *ref = k8s_obj_controller_ref(d.body);
	ck_assert_ptr_nonnull(ref);
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "apiVersion")->valuestring, "extensions.agents.x-k8s.io/v1beta1");
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "kind")->valuestring, "SandboxTemplate");
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "name")->valuestring, "tpl");
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "uid")->valuestring, "7a000000-0000-4000-8000-0000000000a1");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(ref, "blockOwnerDeletion")));
	cJSON *spec = wp_template_np_spec(t);
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(d.body, "spec"), spec, true));
	cJSON_Delete(spec);
	wp_np_decision_clear(&d);
	ck_assert_ptr_null(d.body);
	cJSON_Delete(t);
}
END_TEST

START_TEST(decide_equal_update)
{
	cJSON *t = fx_load("template.json"), *np = fx_load("networkpolicy.json");
	wp_np_decision d;
	/* Equal (controlled through an old v1alpha1 ref; UID decides). */
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_NONE);
	ck_assert_ptr_null(d.body);
	/* Semantically equal: an empty list the server dropped. */
	fx_set_json(np, "spec.ingress", "[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"app\":\"sandbox-router\"}},"
	            "\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"agent-sandbox-system\"}},"
	            "\"ipBlock\":null}],\"ports\":[]}]");
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_NONE);
	/* Different: full update keeping the object's metadata. */
	fx_set_json(np, "spec.egress", "[]");
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_UPDATE);
	ck_assert_str_eq(k8s_obj_resource_version(d.body), "300");
	cJSON *spec = wp_template_np_spec(t);
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(d.body, "spec"), spec, true));
	cJSON_Delete(spec);
	wp_np_decision_clear(&d);
	cJSON_Delete(np);
	cJSON_Delete(t);
}
END_TEST

START_TEST(decide_port_protocol_default)
{
	cJSON *t = fx_load("template.json"), *np = fx_load("networkpolicy.json");
	wp_np_decision d;
	fx_set_json(t, "spec.networkPolicy", "{\"egress\":[{\"ports\":[{\"port\":443}]}]}");
	/* As stored: the API server added protocol TCP. Equal. */
	fx_del(np, "spec.ingress");
	fx_set_json(np, "spec.egress", "[{\"ports\":[{\"port\":443,\"protocol\":\"TCP\"}]}]");
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_NONE);
	/* Another protocol: differs, and the body keeps the rule verbatim. */
	fx_set_json(np, "spec.egress", "[{\"ports\":[{\"port\":443,\"protocol\":\"UDP\"}]}]");
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_UPDATE);
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
		k8s_obj_at(d.body, "spec.egress"), 0), "ports"), 0), "protocol"));
	wp_np_decision_clear(&d);
	cJSON_Delete(np);
	cJSON_Delete(t);
}
END_TEST

START_TEST(decide_refuse_foreign)
{
	cJSON *t = fx_load("template.json"), *np = fx_load("networkpolicy.json");
	wp_np_decision d;
	fx_del(np, "metadata.ownerReferences");
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_REFUSE);
	ck_assert_str_eq(d.error, "refusing to update NetworkPolicy \"tpl-network-policy\" as it is not "
	                 "controlled by SandboxTemplate \"tpl\"");
	wp_np_decision_clear(&d);
	/* Another template of the same name (other UID): refused too. */
	cJSON_Delete(np);
	np = fx_load("networkpolicy.json");
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(np, "metadata.ownerReferences"), 0), "uid", "other");
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_REFUSE);
	wp_np_decision_clear(&d);
	cJSON_Delete(np);
	cJSON_Delete(t);
}
END_TEST

START_TEST(decide_unmanaged)
{
	cJSON *t = fx_load("template.json"), *np = fx_load("networkpolicy.json");
	wp_np_decision d;
	fx_set_str(t, "spec.networkPolicyManagement", "Unmanaged");
	ck_assert_int_eq(wp_template_np_decide(t, NULL, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_NONE);
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_DELETE);
	/* Not controlled: left alone. */
	fx_del(np, "metadata.ownerReferences");
	ck_assert_int_eq(wp_template_np_decide(t, np, &d), 0);
	ck_assert_int_eq(d.verb, WP_NP_NONE);
	ck_assert_ptr_null(d.error);
	cJSON_Delete(np);
	cJSON_Delete(t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("template");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, np_name);
	tcase_add_test(tc, label_patch);
	tcase_add_test(tc, secure_default_spec);
	tcase_add_test(tc, custom_rules_verbatim);
	tcase_add_test(tc, decide_create);
	tcase_add_test(tc, decide_equal_update);
	tcase_add_test(tc, decide_port_protocol_default);
	tcase_add_test(tc, decide_refuse_foreign);
	tcase_add_test(tc, decide_unmanaged);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
