/*
 * test_resource.c - well-known resources and REST paths
 * (libk8s/src/resource.c).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/resource.h"

static const k8s_resource sandboxes =
	{ "agents.x-k8s.io", "v1alpha1", "sandboxes", "Sandbox", true };
static const k8s_resource clusterroles =
	{ "rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false };
static const k8s_resource nodes = { "", "v1", "nodes", "Node", false };

static const char *path(const k8s_resource *r, const char *ns, const char *name,
                        const char *sub)
{
	static char buf[512];
	int n = k8s_resource_path(buf, sizeof(buf), r, ns, name, sub);
	ck_assert_msg(n >= 0, "path failed: %s", asb_error_last()->message);
	ck_assert_uint_eq((size_t)n, strlen(buf));
	return buf;
}

static void assert_invalid(const k8s_resource *r, const char *ns,
                           const char *name, const char *sub)
{
	char buf[256];
	ck_assert_int_eq(k8s_resource_path(buf, sizeof(buf), r, ns, name, sub), -1);
	ck_assert_int_eq(asb_error_last()->code, ASB_EINVAL);
	ck_assert_str_eq(buf, "");
}

START_TEST(test_constants)
{
	ck_assert_str_eq(k8s_resource_pods.group, "");
	ck_assert_str_eq(k8s_resource_pods.version, "v1");
	ck_assert_str_eq(k8s_resource_pods.resource, "pods");
	ck_assert_str_eq(k8s_resource_pods.kind, "Pod");
	ck_assert(k8s_resource_pods.namespaced);
	ck_assert_str_eq(k8s_resource_services.resource, "services");
	ck_assert_str_eq(k8s_resource_pvcs.resource, "persistentvolumeclaims");
	ck_assert_str_eq(k8s_resource_pvcs.kind, "PersistentVolumeClaim");
	ck_assert(!k8s_resource_namespaces.namespaced);
	ck_assert_str_eq(k8s_resource_events.kind, "Event");
	ck_assert_str_eq(k8s_resource_leases.group, "coordination.k8s.io");
	ck_assert(k8s_resource_leases.namespaced);
	ck_assert_str_eq(k8s_resource_crds.group, "apiextensions.k8s.io");
	ck_assert_str_eq(k8s_resource_crds.resource, "customresourcedefinitions");
	ck_assert(!k8s_resource_crds.namespaced);
}
END_TEST

START_TEST(test_core_paths)
{
	ck_assert_str_eq(path(&k8s_resource_pods, "default", NULL, NULL),
	                 "/api/v1/namespaces/default/pods");
	ck_assert_str_eq(path(&k8s_resource_pods, "default", "web-0", NULL),
	                 "/api/v1/namespaces/default/pods/web-0");
	/* All namespaces: NULL or "". */
	ck_assert_str_eq(path(&k8s_resource_pods, NULL, NULL, NULL), "/api/v1/pods");
	ck_assert_str_eq(path(&k8s_resource_pods, "", NULL, NULL), "/api/v1/pods");
	/* Cluster-scoped: the namespace is ignored. */
	ck_assert_str_eq(path(&nodes, "default", "n1", NULL), "/api/v1/nodes/n1");
	ck_assert_str_eq(path(&k8s_resource_namespaces, NULL, "kube-system", NULL),
	                 "/api/v1/namespaces/kube-system");
	ck_assert_str_eq(path(&k8s_resource_namespaces, NULL, NULL, NULL),
	                 "/api/v1/namespaces");
}
END_TEST

START_TEST(test_group_paths)
{
	ck_assert_str_eq(path(&sandboxes, "team", NULL, NULL),
	                 "/apis/agents.x-k8s.io/v1alpha1/namespaces/team/sandboxes");
	ck_assert_str_eq(path(&sandboxes, "team", "sb1", NULL),
	                 "/apis/agents.x-k8s.io/v1alpha1/namespaces/team/sandboxes/sb1");
	ck_assert_str_eq(path(&sandboxes, NULL, NULL, NULL),
	                 "/apis/agents.x-k8s.io/v1alpha1/sandboxes");
	ck_assert_str_eq(path(&k8s_resource_crds, "ignored", "sandboxes.agents.x-k8s.io", NULL),
	                 "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
	                 "sandboxes.agents.x-k8s.io");
	ck_assert_str_eq(path(&k8s_resource_leases, "kube-system", "ctrl", NULL),
	                 "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ctrl");
}
END_TEST

START_TEST(test_subresources)
{
	ck_assert_str_eq(path(&k8s_resource_pods, "default", "p", "status"),
	                 "/api/v1/namespaces/default/pods/p/status");
	ck_assert_str_eq(path(&k8s_resource_pods, "default", "p", "log"),
	                 "/api/v1/namespaces/default/pods/p/log");
	ck_assert_str_eq(path(&sandboxes, "t", "s", "scale"),
	                 "/apis/agents.x-k8s.io/v1alpha1/namespaces/t/sandboxes/s/scale");
	ck_assert_str_eq(path(&k8s_resource_namespaces, NULL, "ns1", "finalize"),
	                 "/api/v1/namespaces/ns1/finalize");
}
END_TEST

START_TEST(test_escaping)
{
	/* Names can never add a segment, a query or a fragment. */
	ck_assert_str_eq(path(&clusterroles, NULL, "system:controller:job", NULL),
	                 "/apis/rbac.authorization.k8s.io/v1/clusterroles/"
	                 "system%3Acontroller%3Ajob");
	ck_assert_str_eq(path(&k8s_resource_pods, "a/b", "x?y=1#f", NULL),
	                 "/api/v1/namespaces/a%2Fb/pods/x%3Fy%3D1%23f");
	ck_assert_str_eq(path(&k8s_resource_pods, "ns", "sp ace%", NULL),
	                 "/api/v1/namespaces/ns/pods/sp%20ace%25");
	ck_assert_str_eq(path(&k8s_resource_pods, "ns", "caf\xc3\xa9", NULL),
	                 "/api/v1/namespaces/ns/pods/caf%C3%A9");
	/* Unreserved characters pass as they are. */
	ck_assert_str_eq(path(&k8s_resource_pods, "ns", "a-b.c_d~e", NULL),
	                 "/api/v1/namespaces/ns/pods/a-b.c_d~e");
	/* Dots inside a name are fine; a name that is only dots is not. */
	ck_assert_str_eq(path(&k8s_resource_pods, "ns", "...", NULL),
	                 "/api/v1/namespaces/ns/pods/...");
}
END_TEST

START_TEST(test_invalid)
{
	assert_invalid(&k8s_resource_pods, "ns", "", NULL);
	assert_invalid(&k8s_resource_pods, "ns", ".", NULL);
	assert_invalid(&k8s_resource_pods, "ns", "..", NULL);
	assert_invalid(&k8s_resource_pods, "..", "x", NULL);
	assert_invalid(&k8s_resource_pods, "ns", "x", "");
	assert_invalid(&k8s_resource_pods, "ns", "x", "..");
	/* A subresource needs an object. */
	assert_invalid(&k8s_resource_pods, "ns", NULL, "status");
	/* A namespaced object needs its namespace. */
	assert_invalid(&k8s_resource_pods, NULL, "x", NULL);
	assert_invalid(&k8s_resource_pods, "", "x", NULL);
	assert_invalid(NULL, "ns", "x", NULL);
	static const k8s_resource broken = { "", "", "pods", "Pod", true };
	assert_invalid(&broken, "ns", NULL, NULL);
	static const k8s_resource no_group = { NULL, "v1", "pods", "Pod", true };
	assert_invalid(&no_group, "ns", NULL, NULL);

	char buf[8];
	ck_assert_int_eq(k8s_resource_path(NULL, 10, &k8s_resource_pods, "a", NULL, NULL), -1);
	ck_assert_int_eq(k8s_resource_path(buf, 0, &k8s_resource_pods, "a", NULL, NULL), -1);
}
END_TEST

START_TEST(test_buffer_sizes)
{
	const char *want = "/api/v1/namespaces/default/pods/web-0";
	size_t len = strlen(want);
	char buf[64];
	/* Exactly enough room (length + NUL) works; one byte less does not. */
	ck_assert_int_eq(k8s_resource_path(buf, len + 1, &k8s_resource_pods,
	                                   "default", "web-0", NULL), (int)len);
	ck_assert_str_eq(buf, want);
	memset(buf, 'Z', sizeof(buf));
	ck_assert_int_eq(k8s_resource_path(buf, len, &k8s_resource_pods,
	                                   "default", "web-0", NULL), -1);
	ck_assert_int_eq(asb_error_last()->code, ASB_EINVAL);
	ck_assert_str_eq(buf, "");
	/* Nothing was written past the capacity. */
	ck_assert_int_eq(buf[len], 'Z');
}
END_TEST

static Suite *resource_suite(void)
{
	Suite *s = suite_create("resource");
	TCase *tc = tcase_create("paths");
	tcase_add_test(tc, test_constants);
	tcase_add_test(tc, test_core_paths);
	tcase_add_test(tc, test_group_paths);
	tcase_add_test(tc, test_subresources);
	tcase_add_test(tc, test_escaping);
	tcase_add_test(tc, test_invalid);
	tcase_add_test(tc, test_buffer_sizes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(resource_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
