/*
 * Integration test of the REST verbs on a custom resource, against a real
 * kube-apiserver ($KUBECONFIG): a throw-away CRD with a status subresource
 * is installed, then a custom object goes through create, get, list with a
 * label selector, update (and a stale update -> conflict), merge patch,
 * status update (the spec is not touched through /status), and delete;
 * the CRD is removed at the end.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/client.h"
#include "k8s/object.h"
#include "live.h"

static k8s_client *client;
static char ns[64];
static const k8s_resource widgets = { "test.libk8s.io", "v1", "widgets", "Widget", true };

static const char *CRD =
	"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
	"\"metadata\":{\"name\":\"widgets.test.libk8s.io\"},"
	"\"spec\":{\"group\":\"test.libk8s.io\",\"scope\":\"Namespaced\","
	"\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},"
	"\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
	"\"subresources\":{\"status\":{}},"
	"\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{"
	"\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\",\"minimum\":0}}},"
	"\"status\":{\"type\":\"object\",\"properties\":{\"phase\":{\"type\":\"string\"}}}}}}}]}}";

#define OK(x) do { int _rc = (x); ck_assert_msg(_rc == 0, "%s: %s", #x, asb_error_last()->message); } while (0)

static bool established(void)
{
	cJSON *crd = NULL;
	if (k8s_client_get(client, &k8s_resource_crds, NULL, "widgets.test.libk8s.io", &crd) < 0)
		return false;
	bool ok = false;
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(crd, "status.conditions"))
		if (strcmp(k8s_obj_str(c, "type") ? k8s_obj_str(c, "type") : "", "Established") == 0 &&
		    strcmp(k8s_obj_str(c, "status") ? k8s_obj_str(c, "status") : "", "True") == 0)
			ok = true;
	cJSON_Delete(crd);
	return ok;
}

START_TEST(custom_resource_crud)
{
	cJSON *w = cJSON_Parse("{\"apiVersion\":\"test.libk8s.io/v1\",\"kind\":\"Widget\","
	                       "\"metadata\":{\"name\":\"w1\",\"labels\":{\"color\":\"blue\"}},"
	                       "\"spec\":{\"size\":3}}");
	cJSON *created = NULL;
	OK(k8s_client_create(client, &widgets, ns, w, NULL, &created));
	ck_assert_str_eq(k8s_obj_str(created, "metadata.namespace"), ns);
	ck_assert_int_eq(k8s_client_create(client, &widgets, ns, w, NULL, NULL), ASB_EALREADYEXISTS);

	/* schema validation comes back as Invalid with the field named */
	cJSON *bad = cJSON_Parse("{\"apiVersion\":\"test.libk8s.io/v1\",\"kind\":\"Widget\","
	                         "\"metadata\":{\"name\":\"w-bad\"},\"spec\":{\"size\":-1}}");
	ck_assert_int_eq(k8s_client_create(client, &widgets, ns, bad, NULL, NULL), ASB_EINVALID);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "spec.size"));
	cJSON_Delete(bad);

	cJSON *got = NULL;
	OK(k8s_client_get(client, &widgets, ns, "w1", &got));
	ck_assert_int_eq((int)k8s_obj_at(got, "spec.size")->valuedouble, 3);

	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.label_selector = "color=blue";
	cJSON *list = NULL;
	OK(k8s_client_list(client, &widgets, ns, &lo, &list));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 1);
	cJSON_Delete(list);
	lo.label_selector = "color=red";
	OK(k8s_client_list(client, &widgets, ns, &lo, &list));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 0);
	cJSON_Delete(list);

	/* update with the current resourceVersion, then again with the stale one */
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(got, "spec"), "size"), 4);
	cJSON *updated = NULL;
	OK(k8s_client_update(client, &widgets, ns, got, NULL, &updated));
	ck_assert_int_eq(k8s_client_update(client, &widgets, ns, got, NULL, NULL), ASB_ECONFLICT);

	cJSON *patch = cJSON_Parse("{\"spec\":{\"size\":5}}");
	cJSON *patched = NULL;
	OK(k8s_client_patch(client, &widgets, ns, "w1", NULL, K8S_PATCH_MERGE, patch, NULL, &patched));
	ck_assert_int_eq((int)k8s_obj_at(patched, "spec.size")->valuedouble, 5);
	cJSON_Delete(patch);

	/* the status subresource changes status only */
	cJSON *st = cJSON_Duplicate(patched, 1);
	cJSON_AddItemToObject(st, "status", cJSON_Parse("{\"phase\":\"Ready\"}"));
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "spec"), "size"), 99);
	cJSON *after = NULL;
	OK(k8s_client_update_status(client, &widgets, ns, st, NULL, &after));
	ck_assert_str_eq(k8s_obj_str(after, "status.phase"), "Ready");
	ck_assert_int_eq((int)k8s_obj_at(after, "spec.size")->valuedouble, 5);

	OK(k8s_client_delete(client, &widgets, ns, "w1", NULL, NULL));
	ck_assert_int_eq(k8s_client_get(client, &widgets, ns, "w1", NULL), ASB_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "w1"));

	cJSON_Delete(w);
	cJSON_Delete(created);
	cJSON_Delete(got);
	cJSON_Delete(updated);
	cJSON_Delete(patched);
	cJSON_Delete(st);
	cJSON_Delete(after);
}
END_TEST

int main(void)
{
	client = live_connect("test_client_custom");
	live_namespace(client, "test_client_custom", "custom", ns, sizeof(ns));
	cJSON *crd = cJSON_Parse(CRD);
	int rc = k8s_client_create(client, &k8s_resource_crds, NULL, crd, NULL, NULL);
	if (rc == ASB_EALREADYEXISTS)
		rc = 0;
	cJSON_Delete(crd);
	if (rc < 0) {
		fprintf(stderr, "test_client_custom: setup: %s\n", asb_error_last()->message);
		return 1;
	}
	for (int i = 0; i < 300 && !established(); i++)
		usleep(100000);

	Suite *s = suite_create("client_custom");
	TCase *tc = tcase_create("live");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, custom_resource_crud);
	suite_add_tcase(s, tc);
	int failed = live_run(s);

	k8s_client_delete(client, &k8s_resource_crds, NULL, "widgets.test.libk8s.io", NULL, NULL);
	live_delete_namespace(client, ns);
	k8s_client_free(client);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
