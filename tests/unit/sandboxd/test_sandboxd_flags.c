/*
 * test_sandboxd_flags.c - unit tests of cmd/sandboxd/flags.c: upstream's
 * names and defaults (docs/upstream.md#sandboxd-daemon), $SANDBOX_BASE_DIR, sizes,
 * durations, and refused values.
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
	ck_assert_int_eq(f.log_format, ASB_LOG_JSON);
	ck_assert_int_eq(f.log_level, ASB_LOG_DEBUG);
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
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
