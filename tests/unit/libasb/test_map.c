/* Unit tests of libasb/src/map.c: the string hash map. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/map.h"

START_TEST(set_get_replace_remove)
{
	asb_map m;
	asb_map_init(&m);
	ck_assert_ptr_null(asb_map_get(&m, "a"));
	void *old = (void *)1;
	ck_assert_int_eq(asb_map_set(&m, "a", "one", &old), 0);
	ck_assert_ptr_null(old);
	ck_assert_str_eq(asb_map_get(&m, "a"), "one");
	ck_assert_int_eq(asb_map_set(&m, "a", "uno", &old), 0);
	ck_assert_str_eq(old, "one");
	ck_assert_uint_eq(asb_map_count(&m), 1);
	ck_assert_int_eq(asb_map_remove(&m, "a", &old), 1);
	ck_assert_str_eq(old, "uno");
	ck_assert_int_eq(asb_map_remove(&m, "a", NULL), 0);
	ck_assert_uint_eq(asb_map_count(&m), 0);
	asb_map_clear(&m, NULL);
}
END_TEST

START_TEST(grows_and_iterates_every_entry_once)
{
	asb_map m;
	asb_map_init(&m);
	char key[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "ns/obj-%d", i);
		ck_assert_int_eq(asb_map_set(&m, key, (void *)(intptr_t)(i + 1), NULL), 0);
	}
	ck_assert_uint_eq(asb_map_count(&m), 5000);
	char *seen = calloc(5000, 1);
	size_t b = 0;
	asb_map_entry *it = NULL;
	int n = 0;
	while (asb_map_next(&m, &b, &it)) {
		int v = (int)(intptr_t)it->value - 1;
		snprintf(key, sizeof(key), "ns/obj-%d", v);
		ck_assert_str_eq(it->key, key);
		ck_assert_int_eq(seen[v], 0);
		seen[v] = 1;
		n++;
	}
	ck_assert_int_eq(n, 5000);
	free(seen);
	for (int i = 0; i < 5000; i += 2) {
		snprintf(key, sizeof(key), "ns/obj-%d", i);
		ck_assert_int_eq(asb_map_remove(&m, key, NULL), 1);
	}
	ck_assert_uint_eq(asb_map_count(&m), 2500);
	ck_assert_ptr_null(asb_map_get(&m, "ns/obj-0"));
	ck_assert_int_eq((int)(intptr_t)asb_map_get(&m, "ns/obj-1"), 2);
	asb_map_clear(&m, NULL);
}
END_TEST

static int freed;
static void count_free(void *v) { (void)v; freed++; }

START_TEST(clear_frees_values)
{
	asb_map m;
	asb_map_init(&m);
	asb_map_set(&m, "x", "1", NULL);
	asb_map_set(&m, "y", "2", NULL);
	freed = 0;
	asb_map_clear(&m, count_free);
	ck_assert_int_eq(freed, 2);
	ck_assert_uint_eq(asb_map_count(&m), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("map");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, set_get_replace_remove);
	tcase_add_test(tc, grows_and_iterates_every_entry_once);
	tcase_add_test(tc, clear_frees_values);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
