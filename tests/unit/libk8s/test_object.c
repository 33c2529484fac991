/* Unit tests of libk8s/src/object.c: metadata helpers and RFC 3339 times. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/object.h"

static const char *POD =
	"{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\","
	"\"resourceVersion\":\"42\",\"generation\":3,"
	"\"labels\":{\"agents.x-k8s.io/sandbox-name-hash\":\"abc\"},"
	"\"annotations\":{\"a.b/c\":\"d\"},"
	"\"ownerReferences\":[{\"kind\":\"X\",\"name\":\"x\",\"uid\":\"1\"},"
	"{\"kind\":\"Sandbox\",\"name\":\"s\",\"uid\":\"2\",\"controller\":true}]},"
	"\"status\":{\"podIP\":\"127.0.1.5\"}}";

START_TEST(metadata_getters)
{
	cJSON *o = cJSON_Parse(POD);
	ck_assert_str_eq(k8s_obj_name(o), "p");
	ck_assert_str_eq(k8s_obj_namespace(o), "ns");
	ck_assert_str_eq(k8s_obj_uid(o), "u1");
	ck_assert_str_eq(k8s_obj_resource_version(o), "42");
	ck_assert_int_eq(k8s_obj_generation(o), 3);
	/* beyond int64 (a malformed object; found by fuzz_sandbox_plan): 0, no UB */
	cJSON *big = cJSON_Parse("{\"metadata\":{\"generation\":2.6e111}}");
	ck_assert_int_eq(k8s_obj_generation(big), 0);
	cJSON_Delete(big);
	ck_assert(!k8s_obj_is_deleting(o));
	ck_assert_str_eq(k8s_obj_label(o, "agents.x-k8s.io/sandbox-name-hash"), "abc");
	ck_assert_ptr_null(k8s_obj_label(o, "missing"));
	ck_assert_str_eq(k8s_obj_annotation(o, "a.b/c"), "d");
	ck_assert_str_eq(k8s_obj_str(o, "status.podIP"), "127.0.1.5");
	ck_assert_ptr_null(k8s_obj_str(o, "status.podIP.deeper"));
	const cJSON *ref = k8s_obj_controller_ref(o);
	ck_assert_ptr_nonnull(ref);
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "name")->valuestring, "s");
	char *key = k8s_obj_key(o);
	ck_assert_str_eq(key, "ns/p");
	free(key);
	ck_assert_ptr_null(k8s_obj_name(NULL));
	cJSON_Delete(o);
}
END_TEST

START_TEST(key_split)
{
	char *ns, *name;
	ck_assert_int_eq(k8s_key_split("a/b", &ns, &name), 0);
	ck_assert_str_eq(ns, "a");
	ck_assert_str_eq(name, "b");
	free(ns);
	free(name);
	ck_assert_int_eq(k8s_key_split("cluster-obj", &ns, &name), 0);
	ck_assert_str_eq(ns, "");
	ck_assert_str_eq(name, "cluster-obj");
	free(ns);
	free(name);
	ck_assert_int_eq(k8s_key_split("", &ns, &name), ASB_EINVAL);
}
END_TEST

START_TEST(time_parse_and_format)
{
	int64_t ms;
	ck_assert_int_eq(k8s_time_parse("1970-01-01T00:00:00Z", &ms), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_int_eq(k8s_time_parse("2026-11-29T13:39:52Z", &ms), 0);
	ck_assert_int_eq(ms, 1795959592000LL);
	ck_assert_int_eq(k8s_time_parse("2026-11-29T13:39:52.25Z", &ms), 0);
	ck_assert_int_eq(ms, 1795959592250LL);
	ck_assert_int_eq(k8s_time_parse("2026-11-29T15:39:52+02:00", &ms), 0);
	ck_assert_int_eq(ms, 1795959592000LL);
	ck_assert_int_eq(k8s_time_parse("2026-11-29 13:39:52", &ms), ASB_EINVAL);
	ck_assert_int_eq(k8s_time_parse("garbage", &ms), ASB_EINVAL);
	ck_assert_int_eq(k8s_time_parse("2026-13-01T00:00:00Z", &ms), ASB_EINVAL);
	char buf[32];
	ck_assert_str_eq(k8s_time_format(1795959592250LL, buf, sizeof(buf)), "2026-11-29T13:39:52Z");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("object");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, metadata_getters);
	tcase_add_test(tc, key_split);
	tcase_add_test(tc, time_parse_and_format);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
