/*
 * test_sandboxd_flags.c - unit tests of cmd/sandboxd/flags.c: upstream's
 * names and defaults (docs/upstream.md#sandboxd-daemon), Go's spellings,
 * $SANDBOX_BASE_DIR, sizes, durations, the logging flags, and refused
 * values with messages naming the flag.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "../argv.h"

static int parse(sandboxd_flags *f, ...)
{
	char **argv;
	va_list ap;
	va_start(ap, f);
	int argc = test_argv(&argv, "sandboxd", ap);
	va_end(ap);
	sandboxd_flags_defaults(f);
	return sandboxd_flags_parse(argc, argv, f);
}

START_TEST(defaults)
{
	unsetenv("SANDBOX_BASE_DIR");
	sandboxd_flags f;
	ck_assert_int_eq(parse(&f, NULL), 0);
	ck_assert_str_eq(f.listen_host, "127.0.0.1");
	ck_assert_int_eq(f.rest_port, 8080);
	ck_assert_int_eq(f.runtime_port, 8888);
	ck_assert_str_eq(f.root_dir, "/workspace");
	ck_assert_str_eq(f.metadata_env_prefix, "SANDBOX_");
	ck_assert_int_eq(f.shutdown_timeout_ms, 10000);
	ck_assert_int_eq(f.http_idle_timeout_ms, 60000);
	ck_assert_int_eq(f.stall_timeout_ms, 60000);
	ck_assert_uint_eq(f.stream_chunk_size, 4096);
	ck_assert_int_eq(f.max_processes, 64);
	ck_assert_uint_eq(f.max_output_bytes, 8u << 20);
	ck_assert_int_eq(f.log.format, ASB_LOG_JSON);  /* as upstream's sandboxd (zap production) */
	ck_assert_int_eq(f.log.level, ASB_LOG_INFO);
}
END_TEST

START_TEST(values_and_environment)
{
	sandboxd_flags f;
	setenv("SANDBOX_BASE_DIR", "/from-env", 1);
	ck_assert_int_eq(parse(&f, NULL), 0);
	ck_assert_str_eq(f.root_dir, "/from-env");
	ck_assert_int_eq(parse(&f, "--root-dir=/flag", NULL), 0);
	ck_assert_str_eq(f.root_dir, "/flag");  /* the flag wins */
	setenv("SANDBOX_BASE_DIR", "", 1);
	ck_assert_int_eq(parse(&f, NULL), 0);
	ck_assert_str_eq(f.root_dir, "/workspace");
	unsetenv("SANDBOX_BASE_DIR");
	ck_assert_int_eq(parse(&f, "--listen-host", "0.0.0.0", "--rest-port=9000", "--runtime-port=0",
	                       "--shutdown-timeout=1m30s", "--stream-chunk-size=-5",
	                       "--max-output-bytes=512Ki", "--max-tasks=100", "--kill-grace=500ms",
	                       "--max-upload-bytes=2Gi", "--metadata-env-prefix=", "--log-format=json",
	                       "-log-level=debug", NULL), 0);
	ck_assert_str_eq(f.listen_host, "0.0.0.0");
	ck_assert_int_eq(f.rest_port, 9000);
	ck_assert_int_eq(f.runtime_port, 0);
	ck_assert_int_eq(f.shutdown_timeout_ms, 90000);
	ck_assert_uint_eq(f.stream_chunk_size, 4096);
	ck_assert_uint_eq(f.max_output_bytes, 512u << 10);
	ck_assert_int_eq(f.max_tasks, 100);
	ck_assert_int_eq(f.kill_grace_ms, 500);
	ck_assert_uint_eq(f.max_upload_bytes, 2ull << 30);
	ck_assert_str_eq(f.metadata_env_prefix, "SANDBOX_");
	ck_assert_int_eq(f.log.format, ASB_LOG_JSON);
	ck_assert_int_eq(f.log.level, ASB_LOG_DEBUG);
	ck_assert_int_eq(parse(&f, "--grpc-port=9090", NULL), 0);
	ck_assert(f.grpc_port_set);
	ck_assert_int_eq(parse(&f, "--stall-timeout=250ms", NULL), 0);
	ck_assert_int_eq(f.stall_timeout_ms, 250);
	ck_assert_int_eq(parse(&f, "--stall-timeout", "0", NULL), 0);
	ck_assert_int_eq(f.stall_timeout_ms, 0);  /* off */
}
END_TEST

START_TEST(refused)
{
	sandboxd_flags f;
	ck_assert_int_eq(parse(&f, "--rest-port=0", NULL), -1);
	ck_assert_int_eq(parse(&f, "--rest-port=65536", NULL), -1);
	ck_assert_int_eq(parse(&f, "--rest-port=x", NULL), -1);
	/* Go's strconv refuses spaces around a number */
	ck_assert_int_eq(parse(&f, "--rest-port= 9000", NULL), -1);
	ck_assert_int_eq(parse(&f, "--max-processes=\t5", NULL), -1);
	ck_assert_int_eq(parse(&f, "--runtime-port=8080", NULL), -1);
	ck_assert_int_eq(parse(&f, "--grpc-port=8080", NULL), -1);
	ck_assert_int_eq(parse(&f, "--root-dir=", NULL), -1);
	ck_assert_int_eq(parse(&f, "--shutdown-timeout=10", NULL), -1);
	ck_assert_int_eq(parse(&f, "--stall-timeout=10", NULL), -1);   /* no unit */
	ck_assert_int_eq(parse(&f, "--stall-timeout=-1s", NULL), -1);
	ck_assert_int_eq(parse(&f, "--max-output-bytes=0", NULL), -1);
	ck_assert_int_eq(parse(&f, "--max-output-bytes=1X", NULL), -1);
	ck_assert_int_eq(parse(&f, "--max-processes=0", NULL), -1);
	ck_assert_int_eq(parse(&f, "--no-such-flag", NULL), -1);
	ck_assert_int_eq(parse(&f, "--rest-port", NULL), -1);
	ck_assert_int_eq(parse(&f, "stray", NULL), -1);
	ck_assert_int_eq(parse(&f, "--log-format=xml", NULL), -1);
}
END_TEST

/* Go's flag package spellings, as upstream's sandboxd reads them. */
START_TEST(go_style_spellings)
{
	sandboxd_flags f;
	unsetenv("SANDBOX_BASE_DIR");
	ck_assert_int_eq(parse(&f, "-rest-port", "9001", "-runtime-port=9002", "--grpc-port", "9003",
	                       "--root-dir=/r", "-shutdown-timeout", "5s", "-log-format", "text",
	                       NULL), 0);
	ck_assert_int_eq(f.rest_port, 9001);
	ck_assert_int_eq(f.runtime_port, 9002);
	ck_assert_int_eq(f.grpc_port, 9003);
	ck_assert_str_eq(f.root_dir, "/r");
	ck_assert_int_eq(f.shutdown_timeout_ms, 5000);
	ck_assert_int_eq(f.log.format, ASB_LOG_TEXT);
	ck_assert_int_eq(parse(&f, "-version", NULL), 1);
	ck_assert_int_eq(parse(&f, "-h", NULL), 1);
	ck_assert_int_eq(parse(&f, "-help", NULL), 1);
	ck_assert_int_eq(parse(&f, "-version=false", NULL), 0);
	/* no abbreviations (getopt's), as Go */
	ck_assert_int_eq(parse(&f, "--rest=9000", NULL), -1);
}
END_TEST

/* controller-runtime's zap flags, which upstream's sandboxd binds (their
 * values: asb/log_flags.h, tested with the controller's) */
START_TEST(zap_flags)
{
	sandboxd_flags f;
	ck_assert_int_eq(parse(&f, "-zap-encoder=console", "-zap-log-level", "error", NULL), 0);
	ck_assert(f.log.format == ASB_LOG_TEXT && f.log.level == ASB_LOG_ERROR);
	ck_assert_int_eq(parse(&f, "-zap-devel", "-zap-time-encoding=epoch", NULL), 0);
	ck_assert(f.log.level == ASB_LOG_DEBUG && f.log.time == ASB_LOG_TIME_EPOCH);
	ck_assert_int_eq(parse(&f, "-zap-stacktrace-level=warn", NULL), -1);
}
END_TEST

/* A parse into fresh defaults, for test_stderr_of(). */
static int parse_fresh(int argc, char **argv)
{
	sandboxd_flags f;
	sandboxd_flags_defaults(&f);
	return sandboxd_flags_parse(argc, argv, &f);
}

/* What the parse of `args` printed (to free), run as an installed binary
 * would be, so that a message naming the program's path would show. */
static char *err_of(int *rc, const char *const *args)
{
	return test_stderr_of(parse_fresh, rc, "/usr/local/bin/sandboxd", args);
}

/* The message names the flag as given, never the program's path. */
START_TEST(errors_name_the_flag)
{
	int rc;
	char *e = err_of(&rc, TEST_ARGS("-zzz"));
	ck_assert_int_eq(rc, -1);
	ck_assert_str_eq(e, "sandboxd: flag provided but not defined: -zzz\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-rest-port=8081", "--nope=1"));
	ck_assert_str_eq(e, "sandboxd: flag provided but not defined: --nope\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-rest-port"));
	ck_assert_str_eq(e, "sandboxd: flag needs an argument: --rest-port\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-rest-port=x"));
	ck_assert_str_eq(e, "sandboxd: invalid value \"x\" for flag --rest-port: must be an integer "
	                    "in [1, 65535]\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-log-format", "xml"));
	ck_assert_str_eq(e, "sandboxd: invalid value \"xml\" for flag --log-format: use json or text\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-max-processes=5", "stray"));
	ck_assert_str_eq(e, "sandboxd: unexpected argument \"stray\"\n");
	ck_assert_int_eq(rc, -1);
	free(e);
}
END_TEST

START_TEST(byte_sizes)
{
	uint64_t v;
	ck_assert_int_eq(sandboxd_parse_bytes("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(sandboxd_parse_bytes("8M", &v), 0);
	ck_assert_uint_eq(v, 8u << 20);
	ck_assert_int_eq(sandboxd_parse_bytes("1Gi", &v), 0);
	ck_assert_uint_eq(v, 1u << 30);
	ck_assert_int_eq(sandboxd_parse_bytes("-1", &v), -1);
	ck_assert_int_eq(sandboxd_parse_bytes("1Ki5", &v), -1);
	ck_assert_int_eq(sandboxd_parse_bytes("99999999999999999999", &v), -1);
	ck_assert_int_eq(sandboxd_parse_bytes("20000000000T", &v), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sandboxd_flags");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, values_and_environment);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, byte_sizes);
	tcase_add_test(tc, go_style_spellings);
	tcase_add_test(tc, zap_flags);
	tcase_add_test(tc, errors_name_the_flag);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
