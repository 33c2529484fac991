/*
 * Unit tests of libsandbox/src/podcache.c: the compact Pod of the informer
 * cache. The contract is that the reconciler cannot tell: for every Pod,
 * encode(decode(diet(pod))) equals diet(pod) (and prints identically when
 * the members come in the API server's order, as a real Pod does).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "fixture.h"
#include "sandbox/podcache.h"
#include "sandbox/reconciler.h"

/* Diet, decode, encode; asserts the round trip and returns the struct. */
/* `canonical`: 1 the struct holds it all, 0 the JSON fallback, -1 either. */
static sbx_pod *round_trip(cJSON *pod, bool same_text, int canonical)
{
	cJSON *diet = sbx_pod_transform(pod, NULL);
	sbx_pod *p = NULL;
	ck_assert_int_eq(sbx_pod_decode(diet, &p), 0);
	ck_assert_ptr_nonnull(p);
	cJSON *back = sbx_pod_encode(p);
	ck_assert_ptr_nonnull(back);
	char *want = cJSON_PrintUnformatted(diet), *got = cJSON_PrintUnformatted(back);
	ck_assert_msg(cJSON_Compare(diet, back, true), "round trip differs:\n%s\n%s", want, got);
	if (same_text)
		ck_assert_str_eq(got, want);
	ck_assert_msg(canonical < 0 || canonical == (p->json == NULL), "json fallback %s for %s",
	              p->json ? "used" : "not used", want);
	free(want);
	free(got);
	cJSON_Delete(back);
	cJSON_Delete(diet);
	return p;
}

START_TEST(fixture_pods_round_trip)
{
	/* every fixture, Pods or not: the codec must never lose anything */
	static const char *const files[] = {
		"pod-running.json", "pod-kwok-raw.json", "expected-pod.json",
		"expected-pod-vct.json", "sandbox.json", "service-owned.json",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		sbx_pod *p = round_trip(fx_load(files[i]), i == 1, i < 2 ? 1 : -1);
		sbx_pod_free(p);
	}
}
END_TEST

START_TEST(real_pod_fields)
{
	/* as kube-apiserver 1.34 served a kwok Pod (GET, raw member order) */
	sbx_pod *p = round_trip(fx_load("pod-kwok-raw.json"), true, 1);
	ck_assert_str_eq(p->kind, "Pod");
	ck_assert_str_eq(p->api_version, "v1");
	ck_assert_str_eq(p->name, "codec-fixture");
	ck_assert_str_eq(p->namespace_, "default");
	ck_assert_ptr_nonnull(p->uid);
	ck_assert_ptr_nonnull(p->resource_version);
	ck_assert(p->present & SBX_POD_HAS_GENERATION);
	ck_assert_int_eq(p->generation, 1);
	ck_assert_str_eq(sbx_pod_label(p, "agents.x-k8s.io/sandbox-name-hash"), "374de8f5");
	ck_assert_ptr_null(sbx_pod_label(p, "nope"));
	ck_assert_str_eq(p->phase, "Running");
	ck_assert_int_eq(strncmp(p->node_name, "kwok-node-", 10), 0);
	ck_assert_uint_eq(p->npod_ips, 1);
	ck_assert_str_eq(p->pod_ips[0], p->pod_ip);
	ck_assert_str_eq(sbx_pod_condition_get(p, "Ready")->status, "True");
	ck_assert_ptr_null(sbx_pod_condition_get(p, "Nope"));
	ck_assert_uint_eq(p->nconditions, 4);
	/* much smaller than the diet's cJSON tree (about 40 nodes of 64 bytes + strings) */
	ck_assert_uint_lt(p->size, 1024);
	sbx_pod_free(p);
}
END_TEST

START_TEST(owner_refs_and_deleting_pod)
{
	cJSON *pod = fx_load("pod-running.json");
	fx_set(pod, "metadata.generateName", cJSON_CreateString("my-"));
	fx_set(pod, "metadata.creationTimestamp", cJSON_CreateString("2026-01-02T03:00:00Z"));
	fx_set(pod, "metadata.deletionTimestamp", cJSON_CreateString("2026-01-02T03:04:00Z"));
	fx_set(pod, "metadata.deletionGracePeriodSeconds", cJSON_CreateNumber(30));
	fx_set(pod, "metadata.finalizers", cJSON_Parse("[\"example.com/x\"]"));
	fx_set(pod, "status.conditions", cJSON_Parse(
		"[{\"type\":\"PodScheduled\",\"status\":\"False\",\"lastProbeTime\":null,"
		"\"reason\":\"Unschedulable\",\"message\":\"0/2 nodes are available\"}]"));
	sbx_pod *p = round_trip(pod, false, 1);
	ck_assert_uint_eq(p->nowner_refs, 1);
	ck_assert_str_eq(p->owner_refs[0].kind, "Sandbox");
	ck_assert_str_eq(p->owner_refs[0].uid, FX_UID);
	ck_assert_int_eq(p->owner_refs[0].controller, 1);
	ck_assert_int_eq(p->owner_refs[0].block_owner_deletion, 1);
	ck_assert_str_eq(p->deletion_timestamp, "2026-01-02T03:04:00Z");
	ck_assert_int_eq(p->deletion_grace_period_seconds, 30);
	ck_assert_str_eq(sbx_pod_condition_get(p, "PodScheduled")->reason, "Unschedulable");
	ck_assert_str_eq(sbx_pod_condition_get(p, "PodScheduled")->message, "0/2 nodes are available");
	sbx_pod_free(p);
}
END_TEST

START_TEST(hand_made_pods)
{
	static const char *const pods[] = {
		/* a list item: no kind/apiVersion; empty maps and arrays stay */
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"labels\":{},\"annotations\":{},"
		"\"ownerReferences\":[]},\"spec\":{},\"status\":{\"conditions\":[],\"podIPs\":[]}}",
		/* nothing at all but a name; a pending Pod without status members */
		"{\"metadata\":{\"name\":\"b\"}}",
		"{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\"},\"spec\":{},\"status\":{\"phase\":\"Pending\"}}",
		/* owner refs with absent and false booleans, dual-stack IPs */
		"{\"metadata\":{\"name\":\"d\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
		"\"name\":\"rs\",\"uid\":\"u\"},{\"kind\":\"X\",\"controller\":false,\"blockOwnerDeletion\":false}]},"
		"\"status\":{\"podIP\":\"10.0.0.1\",\"podIPs\":[{\"ip\":\"10.0.0.1\"},{\"ip\":\"fd00::1\"},{}]}}",
		/* unicode, escapes, an empty label value, a large generation */
		"{\"metadata\":{\"name\":\"e\",\"generation\":9007199254740992,\"labels\":{\"k\":\"\",\"\\u00e9t\\u00e9\":\"\\\"q\\\"\\n\"}}}",
	};
	for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
		cJSON *pod = cJSON_Parse(pods[i]);
		ck_assert_ptr_nonnull(pod);
		sbx_pod_free(round_trip(pod, true, 1));
	}
}
END_TEST

START_TEST(what_the_struct_cannot_hold_is_kept_as_json)
{
	static const char *const pods[] = {
		"{\"metadata\":{\"name\":\"a\",\"selfLink\":\"/x\"}}",               /* unknown member */
		"{\"metadata\":{\"name\":7}}",                                      /* wrong type */
		"{\"metadata\":{\"name\":\"a\",\"generation\":1.5}}",               /* not whole */
		"{\"metadata\":{\"name\":\"a\",\"generation\":1e300}}",             /* beyond 2^53 */
		"{\"metadata\":{\"name\":\"a\",\"name\":\"b\"}}",                   /* duplicate key */
		"{\"metadata\":{\"labels\":{\"a\":1}}}",                            /* label not a string */
		"{\"metadata\":{\"labels\":{\"a\":\"1\",\"a\":\"2\"}}}",              /* repeated label */
		"{\"metadata\":{\"ownerReferences\":[{\"controller\":\"yes\"}]}}",
		"{\"metadata\":[],\"spec\":{}}",                                    /* metadata not an object */
		"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"extra\":true}]}}",
		"{\"status\":{\"podIPs\":[\"10.0.0.1\"]}}",
		"{\"status\":{\"conditions\":{}}}",
		"{\"other\":null}",
		"[1,2,3]",
		"\"a string\"",
	};
	for (size_t i = 0; i < sizeof(pods) / sizeof(pods[0]); i++) {
		cJSON *pod = cJSON_Parse(pods[i]);
		ck_assert_ptr_nonnull(pod);
		sbx_pod *p = NULL;
		ck_assert_int_eq(sbx_pod_decode(pod, &p), 0);
		ck_assert_msg(p->json != NULL, "no fallback for %s", pods[i]);
		/* compared as text: cJSON_Compare never equates duplicate keys */
		cJSON *back = sbx_pod_encode(p);
		char *want = cJSON_PrintUnformatted(pod), *got = cJSON_PrintUnformatted(back);
		ck_assert_str_eq(got, want);
		free(want);
		free(got);
		cJSON_Delete(back);
		cJSON_Delete(pod);
		sbx_pod_free(p);
	}
	/* the typed fields still say what they could read */
	cJSON *pod = cJSON_Parse("{\"metadata\":{\"name\":\"a\",\"selfLink\":\"/x\"}}");
	sbx_pod *p = NULL;
	ck_assert_int_eq(sbx_pod_decode(pod, &p), 0);
	ck_assert_str_eq(p->name, "a");
	sbx_pod_free(p);
	cJSON_Delete(pod);
	ck_assert_int_eq(sbx_pod_decode(NULL, &p), ASB_EINVAL);
	ck_assert_ptr_null(sbx_pod_encode(NULL));
	sbx_pod_free(NULL);
}
END_TEST

START_TEST(codec_for_the_informer)
{
	const k8s_object_codec *c = sbx_pod_codec();
	ck_assert_ptr_eq(c, sbx_pod_codec());
	ck_assert_ptr_nonnull(c->decode);
	ck_assert_ptr_nonnull(c->encode);
	ck_assert_ptr_nonnull(c->free);
	cJSON *pod = sbx_pod_transform(fx_load("pod-running.json"), NULL);
	void *v = NULL;
	ck_assert_int_eq(c->decode(pod, &v, c->userdata), 0);
	ck_assert_str_eq(c->resource_version(v, c->userdata), "2002");
	cJSON *back = c->encode(v, c->userdata);
	ck_assert(cJSON_Compare(pod, back, true));
	cJSON_Delete(back);
	c->free(v, c->userdata);
	cJSON_Delete(pod);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("podcache");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, fixture_pods_round_trip);
	tcase_add_test(tc, real_pod_fields);
	tcase_add_test(tc, owner_refs_and_deleting_pod);
	tcase_add_test(tc, hand_made_pods);
	tcase_add_test(tc, what_the_struct_cannot_hold_is_kept_as_json);
	tcase_add_test(tc, codec_for_the_informer);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
