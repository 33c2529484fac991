/* Unit tests of libsandbox/src/namehash.c: NameHash (docs/api.md#name-hash), the
 * system-key test (docs/api.md#system-metadata-keys) and the Sandbox resource constant. */
#include <string.h>
#include "fixture.h"

START_TEST(name_hash_vectors)
{
	/* The nine verified vectors of docs/api.md#name-hash. */
	static const struct { const char *in, *out; } v[] = {
		{ "", "811c9dc5" },
		{ "a", "e40c292c" },
		{ "foobar", "bf9cf968" },
		{ "pool", "91dd7983" },
		{ "tpl", "9d22159f" },
		{ "test-template", "69155462" },
		{ "test-pool", "59733166" },
		{ "sandbox-name", "ab179450" },
		{ "my-sandbox", "374de8f5" },
	};
	char out[SBX_NAME_HASH_SIZE];
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		memset(out, 'Z', sizeof(out));
		ck_assert_ptr_eq(sbx_name_hash(v[i].in, out), out);
		ck_assert_str_eq(out, v[i].out);
		ck_assert_int_eq(strlen(out), 8);
	}
}
END_TEST

START_TEST(name_hash_null_and_padding)
{
	char out[SBX_NAME_HASH_SIZE];
	ck_assert_str_eq(sbx_name_hash(NULL, out), "811c9dc5");
	/* A 253-character name still gives 8 digits. */
	char long_name[254];
	memset(long_name, 'x', 253);
	long_name[253] = '\0';
	ck_assert_int_eq(strlen(sbx_name_hash(long_name, out)), 8);
	for (int i = 0; i < 8; i++)
		ck_assert(strchr("0123456789abcdef", out[i]) != NULL);
}
END_TEST

START_TEST(system_keys)
{
	ck_assert(sbx_is_system_key("agents.x-k8s.io/sandbox-name-hash"));
	ck_assert(sbx_is_system_key("agents.x-k8s.io/"));
	ck_assert(sbx_is_system_key("extensions.agents.x-k8s.io/anything"));
	ck_assert(!sbx_is_system_key("agents.x-k8s.io"));
	ck_assert(!sbx_is_system_key("api.agents.x-k8s.io/v1alpha1-sandbox-state"));
	ck_assert(!sbx_is_system_key("x-agents.x-k8s.io/y"));
	ck_assert(!sbx_is_system_key("app"));
	ck_assert(!sbx_is_system_key("opentelemetry.io/trace-context"));
	ck_assert(!sbx_is_system_key(NULL));

	ck_assert(sbx_is_system_annotation("opentelemetry.io/trace-context"));
	ck_assert(sbx_is_system_annotation("agents.x-k8s.io/pod-name"));
	ck_assert(sbx_is_system_annotation("extensions.agents.x-k8s.io/a"));
	ck_assert(!sbx_is_system_annotation("opentelemetry.io/other"));
	ck_assert(!sbx_is_system_annotation(NULL));
}
END_TEST

START_TEST(sandbox_resource)
{
	ck_assert_str_eq(sbx_resource_sandboxes.group, "agents.x-k8s.io");
	ck_assert_str_eq(sbx_resource_sandboxes.version, "v1beta1");
	ck_assert_str_eq(sbx_resource_sandboxes.resource, "sandboxes");
	ck_assert_str_eq(sbx_resource_sandboxes.kind, "Sandbox");
	ck_assert(sbx_resource_sandboxes.namespaced);
	char path[128];
	ck_assert_int_gt(k8s_resource_path(path, sizeof(path), &sbx_resource_sandboxes,
	                                   "ns", "s", "status"), 0);
	ck_assert_str_eq(path, "/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/s/status");
	ck_assert_str_eq(SBX_API_VERSION, "agents.x-k8s.io/v1beta1");
	ck_assert_str_eq(SBX_FIELD_MANAGER, "sandbox-controller");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("namehash");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, name_hash_vectors);
	tcase_add_test(tc, name_hash_null_and_padding);
	tcase_add_test(tc, system_keys);
	tcase_add_test(tc, sandbox_resource);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
