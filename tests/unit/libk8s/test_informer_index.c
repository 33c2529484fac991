/* Unit tests of the ready-made index functions of libk8s/src/informer.c. */
#include <check.h>
#include <stdlib.h>
#include "k8s/informer.h"

static cJSON *obj(const char *json)
{
	cJSON *o = cJSON_Parse(json);
	ck_assert_ptr_nonnull(o);
	return o;
}

START_TEST(by_namespace)
{
	const char *k[4];
	cJSON *o = obj("{\"metadata\":{\"name\":\"a\",\"namespace\":\"team-1\"}}");
	ck_assert_int_eq(k8s_index_by_namespace(o, k, 4, NULL), 1);
	ck_assert_str_eq(k[0], "team-1");
	ck_assert_int_eq(k8s_index_by_namespace(o, k, 0, NULL), 0);
	cJSON_Delete(o);
	o = obj("{\"metadata\":{\"name\":\"node-1\"}}");
	ck_assert_int_eq(k8s_index_by_namespace(o, k, 4, NULL), 0);
	cJSON_Delete(o);
}
END_TEST

START_TEST(by_owner_uid_lists_every_owner_within_cap)
{
	const char *k[4];
	cJSON *o = obj("{\"metadata\":{\"name\":\"p\",\"ownerReferences\":["
	               "{\"kind\":\"Sandbox\",\"name\":\"s\",\"uid\":\"u-1\",\"controller\":true},"
	               "{\"kind\":\"X\",\"name\":\"x\",\"uid\":\"u-2\"},"
	               "{\"kind\":\"Y\",\"name\":\"y\",\"uid\":\"\"}]}}");
	ck_assert_int_eq(k8s_index_by_owner_uid(o, k, 4, NULL), 2);
	ck_assert_str_eq(k[0], "u-1");
	ck_assert_str_eq(k[1], "u-2");
	ck_assert_int_eq(k8s_index_by_owner_uid(o, k, 1, NULL), 1);
	cJSON_Delete(o);
	o = obj("{\"metadata\":{\"name\":\"orphan\"}}");
	ck_assert_int_eq(k8s_index_by_owner_uid(o, k, 4, NULL), 0);
	cJSON_Delete(o);
}
END_TEST

START_TEST(by_label_uses_the_key_in_userdata)
{
	const char *k[4];
	cJSON *o = obj("{\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"web\",\"tier\":\"1\"}}}");
	ck_assert_int_eq(k8s_index_by_label(o, k, 4, (void *)"app"), 1);
	ck_assert_str_eq(k[0], "web");
	ck_assert_int_eq(k8s_index_by_label(o, k, 4, (void *)"missing"), 0);
	ck_assert_int_eq(k8s_index_by_label(o, k, 4, NULL), 0);
	cJSON_Delete(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("informer_index");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, by_namespace);
	tcase_add_test(tc, by_owner_uid_lists_every_owner_within_cap);
	tcase_add_test(tc, by_label_uses_the_key_in_userdata);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
