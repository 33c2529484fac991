/*
 * test_json.c - asb_json_print(): compact output, the newline, the length,
 * and a NULL tree.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "asb/json.h"

START_TEST(prints_compact_line)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "a", "x y");
	cJSON_AddNumberToObject(o, "n", 3);
	size_t len = 0;
	char *s = asb_json_print(o, true, &len);
	ck_assert_str_eq(s, "{\"a\":\"x y\",\"n\":3}\n");
	ck_assert_uint_eq(len, strlen(s));
	free(s);
}
END_TEST

START_TEST(without_newline)
{
	cJSON *a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateTrue());
	size_t len = 99;
	char *s = asb_json_print(a, false, &len);
	ck_assert_str_eq(s, "[true]");
	ck_assert_uint_eq(len, 6);
	free(s);
	s = asb_json_print(cJSON_CreateNull(), false, NULL);
	ck_assert_str_eq(s, "null");
	free(s);
}
END_TEST

START_TEST(null_tree)
{
	size_t len = 7;
	ck_assert_ptr_null(asb_json_print(NULL, true, &len));
	ck_assert_uint_eq(len, 7);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("print");
	tcase_add_test(tc, prints_compact_line);
	tcase_add_test(tc, without_newline);
	tcase_add_test(tc, null_tree);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
