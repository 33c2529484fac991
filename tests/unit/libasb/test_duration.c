/* Unit tests of libasb/src/duration.c: the millisecond form of Go durations
 * and Go's boolean spellings (asb_duration_parse itself is covered with the
 * controller's flags, tests/unit/controller/test_flags.c). */
#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include "asb/duration.h"

START_TEST(duration_ms_rounds_positive_fractions_up)
{
	long ms = -7;
	ck_assert_int_eq(asb_duration_parse_ms("1m30s", &ms), 0);
	ck_assert_int_eq(ms, 90000);
	ck_assert_int_eq(asb_duration_parse_ms("1us", &ms), 0);
	ck_assert_int_eq(ms, 1);             /* never silently 0 */
	ck_assert_int_eq(asb_duration_parse_ms("1.5ms", &ms), 0);
	ck_assert_int_eq(ms, 2);
	ck_assert_int_eq(asb_duration_parse_ms("0", &ms), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_int_eq(asb_duration_parse_ms("-1.5ms", &ms), 0);
	ck_assert_int_eq(ms, -1);            /* towards zero */
	ms = 42;
	ck_assert_int_eq(asb_duration_parse_ms("10", &ms), -1);
	ck_assert_int_eq(asb_duration_parse_ms("ms", &ms), -1);
	ck_assert_int_eq(ms, 42);            /* untouched on error */
}
END_TEST

START_TEST(bool_takes_go_spellings_only)
{
	static const char *const yes[] = { "1", "t", "T", "true", "TRUE", "True" };
	static const char *const no[] = { "0", "f", "F", "false", "FALSE", "False" };
	bool b;
	for (size_t i = 0; i < 6; i++) {
		b = false;
		ck_assert_int_eq(k8s_parse_bool(yes[i], &b), 0);
		ck_assert(b);
		b = true;
		ck_assert_int_eq(k8s_parse_bool(no[i], &b), 0);
		ck_assert(!b);
	}
	static const char *const bad[] = { "", "yes", "on", "tRuE", "2", " true", "true " };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(k8s_parse_bool(bad[i], &b), -1);
	ck_assert_int_eq(k8s_parse_bool(NULL, &b), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("duration");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, duration_ms_rounds_positive_fractions_up);
	tcase_add_test(tc, bool_takes_go_spellings_only);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
