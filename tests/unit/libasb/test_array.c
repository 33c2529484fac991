/* Unit tests of libasb/src/array.c: doubling growth of plain arrays. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include "asb/array.h"

START_TEST(grows_from_first_then_doubles_and_keeps_elements)
{
	int *v = NULL;
	size_t cap = 0;
	ck_assert_int_eq(ASB_ARRAY_GROW(v, cap, 1, 8), 0);
	ck_assert_uint_eq(cap, 8);
	for (int i = 0; i < 8; i++)
		v[i] = i;
	/* room already: nothing changes */
	int *same = v;
	ck_assert_int_eq(ASB_ARRAY_GROW(v, cap, 8, 8), 0);
	ck_assert_ptr_eq(v, same);
	ck_assert_uint_eq(cap, 8);
	ck_assert_int_eq(ASB_ARRAY_GROW(v, cap, 9, 8), 0);
	ck_assert_uint_eq(cap, 16);
	ck_assert_int_eq(ASB_ARRAY_GROW(v, cap, 100, 8), 0);
	ck_assert_uint_eq(cap, 128);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(v[i], i);
	free(v);
}
END_TEST

START_TEST(overflow_is_refused_and_leaves_the_array)
{
	char *v = NULL;
	size_t cap = 0;
	ck_assert_int_eq(ASB_ARRAY_GROW(v, cap, 4, 4), 0);
	char *before = v;
	ck_assert_int_eq(asb_array_grow(&v, &cap, SIZE_MAX, 16, 4), ASB_ENOMEM);
	ck_assert_ptr_eq(v, before);
	ck_assert_uint_eq(cap, 4);
	free(v);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("array");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, grows_from_first_then_doubles_and_keeps_elements);
	tcase_add_test(tc, overflow_is_refused_and_leaves_the_array);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
