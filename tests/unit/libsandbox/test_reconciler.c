/*
 * Unit tests of libsandbox/src/reconciler.c that need no API server: the
 * informer helpers (name-hash index, owner key, Pod transform of
 * docs/upstream.md#cache-scoping) and argument checking. The reconcile itself runs against
 * a real API server in the integration tests.
 */
#include <stdlib.h>
#include <string.h>
#include "fixture.h"
#include "sandbox/reconciler.h"

START_TEST(index_by_name_hash)
{
	cJSON *pod = fx_load("pod-running.json");
	const char *keys[2] = { NULL, NULL };
	ck_assert_int_eq(sbx_pod_index_name_hash(pod, keys, 2, NULL), 1);
	ck_assert_str_eq(keys[0], FX_HASH);
	ck_assert_int_eq(sbx_pod_index_name_hash(pod, keys, 0, NULL), 0);
	fx_label(pod, SBX_LABEL_NAME_HASH, NULL);
	ck_assert_int_eq(sbx_pod_index_name_hash(pod, keys, 2, NULL), 0);
	cJSON_Delete(pod);
}
END_TEST

START_TEST(owner_sandbox_key)
{
	cJSON *pod = fx_load("pod-running.json");
	char *key = sbx_owner_sandbox_key(pod);
	ck_assert_str_eq(key, "team-a/my-sandbox");
	free(key);

	/* Any version of the group counts. */
	fx_set(pod, "metadata.ownerReferences", cJSON_Parse(
		"[{\"apiVersion\":\"agents.x-k8s.io/v1alpha1\",\"kind\":\"Sandbox\","
		"\"name\":\"old\",\"uid\":\"u\",\"controller\":true}]"));
	key = sbx_owner_sandbox_key(pod);
	ck_assert_str_eq(key, "team-a/old");
	free(key);

	static const char *const refs[] = {
		/* not the controller */
		"[{\"apiVersion\":\"agents.x-k8s.io/v1beta1\",\"kind\":\"Sandbox\","
		"\"name\":\"s\",\"uid\":\"u\"}]",
		/* other group */
		"[{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\",\"kind\":\"Sandbox\","
		"\"name\":\"s\",\"uid\":\"u\",\"controller\":true}]",
		/* other kind */
		"[{\"apiVersion\":\"agents.x-k8s.io/v1beta1\",\"kind\":\"SandboxClaim\","
		"\"name\":\"s\",\"uid\":\"u\",\"controller\":true}]",
		/* core group */
		"[{\"apiVersion\":\"v1\",\"kind\":\"Sandbox\",\"name\":\"s\",\"uid\":\"u\","
		"\"controller\":true}]",
		"[]",
	};
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		fx_set(pod, "metadata.ownerReferences", cJSON_Parse(refs[i]));
		ck_assert_ptr_null(sbx_owner_sandbox_key(pod));
	}
	ck_assert_ptr_null(sbx_owner_sandbox_key(NULL));
	cJSON_Delete(pod);
}
END_TEST

START_TEST(pod_transform_diet)
{
	cJSON *pod = fx_load("pod-running.json");
	fx_set(pod, "metadata.managedFields", cJSON_Parse(
		"[{\"manager\":\"kubelet\",\"operation\":\"Update\",\"fieldsV1\":{}}]"));
	fx_set(pod, "metadata.finalizers", cJSON_Parse("[\"example.com/x\"]"));
	fx_set(pod, "spec", cJSON_Parse(
		"{\"containers\":[{\"name\":\"main\",\"image\":\"x\"}],"
		"\"nodeName\":\"kwok-node-0\",\"restartPolicy\":\"Never\"}"));
	cJSON *want_md = cJSON_Duplicate(cJSON_GetObjectItem(pod, "metadata"), true);
	cJSON_DeleteItemFromObject(want_md, "managedFields");
	cJSON_DeleteItemFromObject(want_md, "finalizers");
	fx_set(pod, "status", cJSON_Parse(
		"{\"phase\":\"Running\",\"podIP\":\"127.0.1.4\",\"podIPs\":[{\"ip\":\"127.0.1.4\"}],"
		"\"hostIP\":\"127.0.0.1\",\"qosClass\":\"BestEffort\",\"startTime\":\"2026-01-01T00:00:00Z\","
		"\"containerStatuses\":[{\"name\":\"main\",\"ready\":true}],"
		"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":null,"
		"\"lastTransitionTime\":\"2026-01-01T00:00:01Z\"},{\"type\":\"PodScheduled\",\"status\":\"False\","
		"\"reason\":\"Unschedulable\",\"message\":\"0/2 nodes\"}]}"));
	/* the status keeps phase, IPs and what conditions say, not container detail or times */
	cJSON *want_status = cJSON_Parse(
		"{\"phase\":\"Running\",\"podIP\":\"127.0.1.4\",\"podIPs\":[{\"ip\":\"127.0.1.4\"}],"
		"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"PodScheduled\","
		"\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/2 nodes\"}]}");

	ck_assert_ptr_eq(sbx_pod_transform(pod, NULL), pod);
	fx_assert_json_str(cJSON_GetObjectItem(pod, "spec"), "{\"nodeName\":\"kwok-node-0\"}");
	fx_assert_json(cJSON_GetObjectItem(pod, "metadata"), want_md);
	fx_assert_json(cJSON_GetObjectItem(pod, "status"), want_status);

	/* Unscheduled: the spec becomes empty. */
	fx_set(pod, "spec", cJSON_Parse("{\"containers\":[]}"));
	sbx_pod_transform(pod, NULL);
	fx_assert_json_str(cJSON_GetObjectItem(pod, "spec"), "{}");
	ck_assert_ptr_null(sbx_pod_transform(NULL, NULL));
	cJSON_Delete(want_md);
	cJSON_Delete(want_status);
	cJSON_Delete(pod);
}
END_TEST

START_TEST(reconciler_arguments)
{
	sbx_reconciler_options opts;
	ck_assert_int_eq(sbx_reconciler_options_init(&opts, 99), ASB_EINVAL);
	ck_assert_int_eq(sbx_reconciler_options_init(&opts, SBX_RECONCILER_OPTIONS_VERSION), 0);
	ck_assert_uint_eq(opts.version, SBX_RECONCILER_OPTIONS_VERSION);
	ck_assert_ptr_null(opts.client);
	ck_assert_ptr_null(opts.cluster_domain);

	sbx_reconciler *r = NULL;
	ck_assert_int_eq(sbx_reconciler_new(&r, &opts), ASB_EINVAL);
	ck_assert_ptr_null(r);
	ck_assert_int_eq(sbx_reconciler_new(&r, NULL), ASB_EINVAL);
	k8s_reconcile_result res = { 5, true };
	ck_assert_int_eq(sbx_reconciler_reconcile(NULL, "a/b", &res), ASB_EINVAL);
	ck_assert_int_eq(res.requeue_after_ms, 0);
	ck_assert(!res.requeue);
	sbx_reconciler_free(NULL);

	/* The write-behind window defaults to 0 and must not be negative. The
	 * handles are only stored by _new, so stand-ins do. */
	ck_assert_int_eq(opts.write_behind_window_ms, 0);
	int stand_in;
	opts.client = (k8s_client *)&stand_in;
	opts.sandboxes = opts.pods = opts.services = (k8s_informer *)&stand_in;
	opts.write_behind_window_ms = -1;
	ck_assert_int_eq(sbx_reconciler_new(&r, &opts), ASB_EINVAL);
	ck_assert_ptr_null(r);
	opts.write_behind_window_ms = 250;
	ck_assert_int_eq(sbx_reconciler_new(&r, &opts), 0);
	ck_assert_ptr_nonnull(r);
	sbx_reconciler_free(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reconciler");
	TCase *tc = tcase_create("helpers");
	tcase_add_test(tc, index_by_name_hash);
	tcase_add_test(tc, owner_sandbox_key);
	tcase_add_test(tc, pod_transform_diet);
	tcase_add_test(tc, reconciler_arguments);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
