/*
 * test_router_flags.c - unit tests of cmd/router/flags.c and flags_file.c:
 * the Go router's names and defaults (docs/upstream.md#router-listeners, #router-configuration), the
 * flag spellings, the precedence command line > config file > environment
 * > defaults, the config file's rules and the validation messages.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "flags.h"
#include "../argv.h"

static char err[512];

static void clear_env(void)
{
	unsetenv("CLUSTER_DOMAIN");
	unsetenv("PROXY_TIMEOUT_SECONDS");
	unsetenv("KUBECONFIG");
	unsetenv("SANDBOX_ROUTER_CONFIG");
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
}

/* Loads the NULL-terminated flags into `f` (defaults first). */
static int load(rt_flags *f, ...)
{
	char **argv;
	va_list ap;
	va_start(ap, f);
	int argc = test_argv(&argv, "sandbox-router", ap);
	va_end(ap);
	ck_assert_int_eq(rt_flags_defaults(f), 0);
	FILE *null = fopen("/dev/null", "w");
	err[0] = '\0';
	int rc = rt_flags_load(f, argc, argv, null, err, sizeof(err));
	fclose(null);
	return rc;
}

/* Writes `text` to a temporary file; returns its path (static buffer). */
static const char *tmpfile_with(const char *text)
{
	static char path[64];
	strcpy(path, "/tmp/rt-flags-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

START_TEST(defaults_are_upstream)
{
	clear_env();
	rt_flags f;
	ck_assert_int_eq(load(&f, NULL), RT_FLAGS_RUN);
	ck_assert_str_eq(f.http_addr, ":8080");
	ck_assert_str_eq(f.https_addr, "");
	ck_assert_str_eq(f.metrics_addr, ":9090");
	ck_assert_str_eq(f.probe_addr, ":8081");
	ck_assert_str_eq(f.cluster_domain, "cluster.local");
	ck_assert_int_eq(f.proxy_timeout_ms, 180000);
	ck_assert_int_eq(f.response_header_timeout_ms, 30000);
	ck_assert_int_eq(f.shutdown_timeout_ms, 30000);
	ck_assert_int_eq(f.max_request_body_bytes, 0);
	ck_assert(!f.allow_loopback_pod_ip);
	ck_assert_int_eq(f.upstream_max_retries, 3);
	ck_assert_int_eq(f.retry_initial_delay_ms, 200);
	ck_assert_int_eq(f.retry_max_delay_ms, 800);
	ck_assert_int_eq(f.authz_mode, RT_AUTHZ_ALLOW_ALL);
	ck_assert_int_eq(f.tokenreview_ttl_ms, 30000);
	ck_assert_int_eq(f.tokenreview_workers, 4);
	ck_assert_int_eq(f.tokenreview_max_pending, 1024);
	ck_assert_int_eq(f.tokenreview_max_pending_per_client, 64);
	ck_assert_int_eq(f.tokenreview_cache_size, 2048);
	ck_assert(!f.tokenreview_require_token);
	ck_assert(!f.cache_enabled);
	ck_assert(f.access_log);
	ck_assert_int_eq(f.mtls_mode, RT_MTLS_OFF);
	ck_assert(!f.enable_tracing);
	ck_assert_int_eq(f.resume_timeout_ms, 120000);
	ck_assert_int_eq(f.resume_max_held, 4096);
	ck_assert_int_eq(rt_flags_validate(&f, err, sizeof(err)), 0);
	rt_flags_free(&f);
}
END_TEST

/* --resume-timeout (ours): a Go duration, > 0; from the config file too. */
START_TEST(resume_timeout)
{
	clear_env();
	rt_flags f;
	ck_assert_int_eq(load(&f, "--resume-timeout=1m30s", NULL), RT_FLAGS_RUN);
	ck_assert_int_eq(f.resume_timeout_ms, 90000);
	ck_assert_int_eq(rt_flags_validate(&f, err, sizeof(err)), 0);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "-resume-timeout", "250ms", NULL), RT_FLAGS_RUN);
	ck_assert_int_eq(f.resume_timeout_ms, 250);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--resume-timeout=120", NULL), RT_FLAGS_ERROR);  /* no unit */
	ck_assert_ptr_nonnull(strstr(err, "--resume-timeout"));
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--resume-timeout=soon", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "--resume-timeout"));
	rt_flags_free(&f);
	static const char *const bad[] = { "--resume-timeout=0s", "--resume-timeout=-1s" };
	for (size_t i = 0; i < 2; i++) {
		ck_assert_int_eq(load(&f, bad[i], NULL), RT_FLAGS_RUN);
		ck_assert_int_eq(rt_flags_validate(&f, err, sizeof(err)), -1);
		ck_assert_str_eq(err, "invalid value for flag --resume-timeout: must be positive");
		rt_flags_free(&f);
	}
	const char *cfg = tmpfile_with("resume-timeout: 45s\n");
	ck_assert_int_eq(load(&f, "--config", cfg, NULL), RT_FLAGS_RUN);
	ck_assert_int_eq(f.resume_timeout_ms, 45000);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--config", cfg, "--resume-timeout=5s", NULL), RT_FLAGS_RUN);
	ck_assert_int_eq(f.resume_timeout_ms, 5000);
	rt_flags_free(&f);
	unlink(cfg);
}
END_TEST

/* --resume-max-held (ours): requests held at once, > 0. */
START_TEST(resume_max_held)
{
	clear_env();
	rt_flags f;
	ck_assert_int_eq(load(&f, "--resume-max-held=10", NULL), RT_FLAGS_RUN);
	ck_assert_int_eq(f.resume_max_held, 10);
	ck_assert_int_eq(rt_flags_validate(&f, err, sizeof(err)), 0);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--resume-max-held=0", NULL), RT_FLAGS_RUN);
	ck_assert_int_eq(rt_flags_validate(&f, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "invalid value for flag --resume-max-held: must be positive");
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--resume-max-held=lots", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "--resume-max-held"));
	rt_flags_free(&f);
}
END_TEST

START_TEST(spellings)
{
	clear_env();
	rt_flags f;
	ck_assert_int_eq(load(&f, "--http-bind-address=127.0.0.1:1", "-metrics-bind-address", "",
	                      "--allow-loopback-pod-ip", "-cache-enabled=true", "--proxy-timeout",
	                      "1m30s", "--max-request-body-bytes=1048576", "--upstream-max-retries=+2",
	                      "--authz-mode", "scoped-token", "--access-log=false", NULL),
	                 RT_FLAGS_RUN);
	ck_assert_str_eq(f.http_addr, "127.0.0.1:1");
	ck_assert_str_eq(f.metrics_addr, "");
	ck_assert(f.allow_loopback_pod_ip);
	ck_assert(f.cache_enabled);
	ck_assert_int_eq(f.proxy_timeout_ms, 90000);
	ck_assert_int_eq(f.max_request_body_bytes, 1048576);
	ck_assert_int_eq(f.upstream_max_retries, 2);
	ck_assert_int_eq(f.authz_mode, RT_AUTHZ_SCOPED_TOKEN);
	ck_assert(!f.access_log);
	rt_flags_free(&f);
	/* a boolean takes no separate argument: "false" is then a stray argument */
	ck_assert_int_eq(load(&f, "--cache-enabled", "false", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "unexpected argument \"false\""));
	rt_flags_free(&f);
}
END_TEST

START_TEST(errors_name_the_flag)
{
	clear_env();
	rt_flags f;
	ck_assert_int_eq(load(&f, "--proxy-timeout=soon", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "--proxy-timeout"));
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--authz-mode=open", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "--authz-mode"));
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--mtls-mode=sometimes", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "--mtls-mode"));
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--upstream-max-retries=three", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "--upstream-max-retries"));
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--no-such-flag", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "no-such-flag"));
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--kubeconfig", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "needs an argument: --kubeconfig"));
	rt_flags_free(&f);
}
END_TEST

START_TEST(help_and_version_exit)
{
	clear_env();
	rt_flags f;
	ck_assert_int_eq(load(&f, "--version", NULL), RT_FLAGS_EXIT);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "-h", NULL), RT_FLAGS_EXIT);
	rt_flags_free(&f);
	/* a boolean, as upstream's -version: true prints, false asks nothing */
	ck_assert_int_eq(load(&f, "-version=true", NULL), RT_FLAGS_EXIT);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "-proxy-timeout=7s", "-version=false", "--version=0",
	                      "-upstream-max-retries", "4", NULL), RT_FLAGS_RUN);
	ck_assert_int_eq(f.proxy_timeout_ms, 7000);
	ck_assert_int_eq(f.upstream_max_retries, 4);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "-version=maybe", NULL), RT_FLAGS_ERROR);
	ck_assert_str_eq(err, "invalid value \"maybe\" for flag --version: must be true or false");
	rt_flags_free(&f);
	/* after "--" nothing is a flag: the word stays, and is refused */
	ck_assert_int_eq(load(&f, "--", "-version=false", NULL), RT_FLAGS_ERROR);
	rt_flags_free(&f);
}
END_TEST

/* docs/upstream.md#router-configuration validation, each failure naming the flag. */
START_TEST(validation)
{
	clear_env();
	static const struct {
		const char *args[4];
		const char *want;
	} cases[] = {
		{ { "--http-bind-address=", NULL }, "no proxy listener" },
		{ { "--https-bind-address=:8443", NULL }, "--tls-cert-file" },
		{ { "--mtls-mode=required", NULL }, "--mtls-mode needs --https-bind-address" },
		{ { "--proxy-timeout=0s", NULL }, "--proxy-timeout" },
		{ { "--response-header-timeout=-1s", NULL }, "--response-header-timeout" },
		{ { "--shutdown-timeout=-1s", NULL }, "--shutdown-timeout" },
		{ { "--max-request-body-bytes=-1", NULL }, "--max-request-body-bytes" },
		{ { "--upstream-max-retries=-1", NULL }, "--upstream-max-retries" },
		{ { "--upstream-retry-initial-delay=-5ms", NULL }, "--upstream-retry-initial-delay" },
		{ { "--cluster-domain=", NULL }, "--cluster-domain" },
		{ { "--authz-tokenreview-ttl=0s", NULL }, "--authz-tokenreview-ttl" },
		{ { "--authz-tokenreview-cache-size=0", NULL }, "--authz-tokenreview-cache-size" },
		{ { "--authz-tokenreview-workers=0", NULL }, "--authz-tokenreview-workers" },
		{ { "--authz-tokenreview-workers=257", NULL }, "--authz-tokenreview-workers" },
		{ { "--authz-tokenreview-max-pending=0", NULL }, "--authz-tokenreview-max-pending" },
		{ { "--authz-tokenreview-max-pending-per-client=-1", NULL },
		  "--authz-tokenreview-max-pending-per-client" },
		{ { "--authz-mode=scoped-token", NULL }, "--authz-scoped-token-secret-file" },
		{ { "--max-header-bytes=100", NULL }, "--max-header-bytes" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rt_flags f;
		ck_assert_int_eq(load(&f, cases[i].args[0], cases[i].args[1], NULL), RT_FLAGS_RUN);
		ck_assert_msg(rt_flags_validate(&f, err, sizeof(err)) == -1, "case %zu accepted", i);
		ck_assert_msg(strstr(err, cases[i].want), "case %zu: \"%s\" lacks \"%s\"", i, err,
		              cases[i].want);
		rt_flags_free(&f);
	}
	rt_flags f;
	ck_assert_int_eq(load(&f, "--https-bind-address=:8443", "--tls-cert-file=c", "--tls-key-file=k",
	                      "--mtls-mode=optional", NULL), RT_FLAGS_RUN);
	ck_assert_int_eq(rt_flags_validate(&f, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "--tls-client-ca-file"));
	rt_flags_free(&f);
}
END_TEST

START_TEST(environment)
{
	clear_env();
	setenv("CLUSTER_DOMAIN", "corp.example", 1);
	setenv("PROXY_TIMEOUT_SECONDS", "2.5", 1);
	setenv("KUBECONFIG", "/tmp/kc", 1);
	rt_flags f;
	ck_assert_int_eq(load(&f, NULL), RT_FLAGS_RUN);
	ck_assert_str_eq(f.cluster_domain, "corp.example");
	ck_assert_int_eq(f.proxy_timeout_ms, 2500);
	ck_assert_str_eq(f.kubeconfig, "/tmp/kc");
	rt_flags_free(&f);
	/* the command line wins; bad PROXY_TIMEOUT_SECONDS values are ignored */
	setenv("PROXY_TIMEOUT_SECONDS", "-3", 1);
	ck_assert_int_eq(load(&f, "--cluster-domain=flag.example", NULL), RT_FLAGS_RUN);
	ck_assert_str_eq(f.cluster_domain, "flag.example");
	ck_assert_int_eq(f.proxy_timeout_ms, 180000);
	rt_flags_free(&f);
	/* OTLP endpoints switch tracing on unless the flag was given */
	setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4317", 1);
	ck_assert_int_eq(load(&f, NULL), RT_FLAGS_RUN);
	ck_assert(f.enable_tracing);
	ck_assert(!f.enable_otel_metrics);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, "--enable-tracing=false", NULL), RT_FLAGS_RUN);
	ck_assert(!f.enable_tracing);
	rt_flags_free(&f);
	clear_env();
}
END_TEST

START_TEST(config_file_precedence)
{
	clear_env();
	setenv("CLUSTER_DOMAIN", "env.example", 1);
	const char *path = tmpfile_with("cluster-domain: file.example\n"
	                                "upstream-max-retries: 5.0\n"
	                                "proxy-timeout: 10s\n"
	                                "cache-enabled: true\n"
	                                "enable-tracing: false\n");
	char cfg[128];
	snprintf(cfg, sizeof(cfg), "--config=%s", path);
	rt_flags f;
	ck_assert_int_eq(load(&f, cfg, "--proxy-timeout=20s", NULL), RT_FLAGS_RUN);
	ck_assert_str_eq(f.cluster_domain, "file.example");  /* file > env */
	ck_assert_int_eq(f.upstream_max_retries, 5);          /* 5.0 read as 5 */
	ck_assert_int_eq(f.proxy_timeout_ms, 20000);          /* flag > file */
	ck_assert(f.cache_enabled);
	rt_flags_free(&f);
	/* SANDBOX_ROUTER_CONFIG names the file when --config does not; a key
	 * in the file counts as explicit for the OTLP auto-enable rule */
	setenv("SANDBOX_ROUTER_CONFIG", path, 1);
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317", 1);
	ck_assert_int_eq(load(&f, NULL), RT_FLAGS_RUN);
	ck_assert_str_eq(f.cluster_domain, "file.example");
	ck_assert(!f.enable_tracing);
	ck_assert(f.enable_otel_metrics);
	rt_flags_free(&f);
	unlink(path);
	clear_env();
}
END_TEST

START_TEST(config_file_errors)
{
	clear_env();
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "no-such-key: 1\n", "unknown key \"no-such-key\"" },
		{ "cache-namespace:\n  nested: x\n", "nested values" },
		{ "cache-namespace: [a, b]\n", "nested values" },
		{ "upstream-max-retries: many\n", "--upstream-max-retries in config file" },
		{ "cluster-domain:\n", "has no value" },
		{ "- a\n- b\n", "want a map" },
		{ "a: [\n", "config file" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = tmpfile_with(cases[i].text);
		rt_flags f;
		ck_assert_int_eq(rt_flags_defaults(&f), 0);
		ck_assert_int_eq(rt_flags_apply_file(&f, path, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, cases[i].want), "case %zu: \"%s\" lacks \"%s\"", i, err,
		              cases[i].want);
		rt_flags_free(&f);
		unlink(path);
	}
	rt_flags f;
	ck_assert_int_eq(load(&f, "--config", "/nonexistent/router.yaml", NULL), RT_FLAGS_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/router.yaml"));
	rt_flags_free(&f);
	/* a file larger than a flag map could be is refused, not read whole:
	 * --config /dev/zero took the memory of the machine */
	char *big = malloc(2 << 20);
	ck_assert_ptr_nonnull(big);
	for (size_t i = 0; i < (2 << 20) - 1; i++)
		big[i] = i % 64 == 63 ? '\n' : '#';
	big[(2 << 20) - 1] = '\0';
	const char *bigpath = tmpfile_with(big);
	free(big);
	ck_assert_int_eq(rt_flags_defaults(&f), 0);
	ck_assert_int_eq(rt_flags_apply_file(&f, bigpath, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, bigpath) && strstr(err, "larger than 1 MiB"), "%s", err);
	rt_flags_free(&f);
	unlink(bigpath);
	ck_assert_int_eq(rt_flags_defaults(&f), 0);
	ck_assert_int_eq(rt_flags_apply_file(&f, "/dev/zero", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "/dev/zero: larger than 1 MiB"), "%s", err);
	rt_flags_free(&f);
	/* an empty file sets nothing */
	const char *path = tmpfile_with("");
	ck_assert_int_eq(rt_flags_defaults(&f), 0);
	ck_assert_int_eq(rt_flags_apply_file(&f, path, err, sizeof(err)), 0);
	rt_flags_free(&f);
	unlink(path);
}
END_TEST

START_TEST(audiences_csv)
{
	clear_env();
	rt_flags f;
	ck_assert_int_eq(load(&f, "--authz-tokenreview-audiences= a , ,b,", NULL), RT_FLAGS_RUN);
	char **v = rt_flags_audiences(&f);
	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v[0], "a");
	ck_assert_str_eq(v[1], "b");
	ck_assert_ptr_null(v[2]);
	rt_strv_free(v);
	rt_flags_free(&f);
	ck_assert_int_eq(load(&f, NULL), RT_FLAGS_RUN);
	ck_assert_ptr_null(rt_flags_audiences(&f));
	rt_flags_free(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("router_flags");
	TCase *tc = tcase_create("flags");
	tcase_add_test(tc, defaults_are_upstream);
	tcase_add_test(tc, resume_timeout);
	tcase_add_test(tc, resume_max_held);
	tcase_add_test(tc, spellings);
	tcase_add_test(tc, errors_name_the_flag);
	tcase_add_test(tc, help_and_version_exit);
	tcase_add_test(tc, validation);
	tcase_add_test(tc, environment);
	tcase_add_test(tc, config_file_precedence);
	tcase_add_test(tc, config_file_errors);
	tcase_add_test(tc, audiences_csv);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
