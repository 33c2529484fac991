/*
 * test_router_metrics.c - unit tests of cmd/router/metrics.c and
 * accesslog.c: the metric names, labels and histogram buckets of
 * docs/upstream.md#router-observability as exposed, and the access log line's fields.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "accesslog.h"
#include "metrics.h"

/* A registry with the router's metrics in it. */
static rt_metrics *new_metrics(asb_metrics_registry **reg)
{
	rt_metrics *m;
	rt_build_info bi = { "0.1.0", "abc", "2026-01-01", "gcc", "linux/amd64" };
	ck_assert_int_eq(asb_metrics_registry_new(reg), 0);
	ck_assert_int_eq(rt_metrics_new(&m, *reg, &bi), 0);
	return m;
}

START_TEST(exposition)
{
	asb_metrics_registry *reg;
	rt_metrics *m = new_metrics(&reg);
	rt_metrics_request(m, "GET", 200, "team", 0.003);
	rt_metrics_request(m, "POST", 502, "-", 1.5);
	rt_metrics_inflight(m, 1);
	rt_metrics_upstream_error(m, "team", "dial");
	rt_metrics_retry(m, "team");
	rt_metrics_authz(m, "team", false);
	rt_metrics_upstream_conn(m, "idle", 1);
	char *out;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &out, NULL), 0);
	static const char *const want[] = {
		"sandbox_router_requests_total{code=\"200\",method=\"GET\",sandbox_namespace=\"team\"} 1\n",
		"sandbox_router_requests_total{code=\"502\",method=\"POST\",sandbox_namespace=\"-\"} 1\n",
		"sandbox_router_request_duration_seconds_bucket{code=\"200\",method=\"GET\",sandbox_namespace=\"team\",le=\"0.005\"} 1\n",
		"sandbox_router_request_duration_seconds_bucket{code=\"502\",method=\"POST\",sandbox_namespace=\"-\",le=\"180\"} 1\n",
		"sandbox_router_inflight_requests 1\n",
		"sandbox_router_upstream_errors_total{reason=\"dial\",sandbox_namespace=\"team\"} 1\n",
		"sandbox_router_upstream_retries_total{sandbox_namespace=\"team\"} 1\n",
		"sandbox_router_authz_decisions_total{decision=\"deny\",sandbox_namespace=\"team\"} 1\n",
		"sandbox_router_upstream_connections{state=\"idle\"} 1\n",
		"sandbox_router_upstream_connections{state=\"active\"} 0\n",
		"sandbox_router_build_info{build_date=\"2026-01-01\",compiler=\"gcc\",git_commit=\"abc\","
		"git_version=\"0.1.0\",go_version=\"\",platform=\"linux/amd64\"} 1\n",
		"# TYPE sandbox_router_request_duration_seconds histogram\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!strstr(out, want[i]))
			fprintf(stderr, "--- got:\n%s\n", out);
		ck_assert_msg(strstr(out, want[i]), "missing: %s", want[i]);
	}
	free(out);
	rt_metrics_free(m);
	asb_metrics_registry_free(reg);
}
END_TEST

/* The per-loop memo counts exactly what the plain calls count: labels
 * that change between calls, a namespace too long to remember, and a memo
 * filled by another handle (not reused for this one). */
START_TEST(memo_counts_as_the_plain_calls)
{
	asb_metrics_registry *reg, *reg2;
	rt_metrics *m = new_metrics(&reg), *m2 = new_metrics(&reg2);
	rt_metrics_memo memo = { 0 };
	char longns[100];
	memset(longns, 'n', sizeof(longns) - 1);
	longns[sizeof(longns) - 1] = '\0';
	rt_metrics_request_memo(m2, &memo, "GET", 200, "team", 0.001);  /* fills it for m2 */
	for (int i = 0; i < 3; i++) {
		rt_metrics_request_memo(m, &memo, "GET", 200, "team", 0.001);
		rt_metrics_request_memo(m, &memo, "GET", 200, "team", 0.001);
		rt_metrics_request_memo(m, &memo, "POST", 200, "team", 0.001);
		rt_metrics_request_memo(m, &memo, "GET", 404, "team", 0.001);
		rt_metrics_request_memo(m, &memo, "GET", 200, "other", 0.001);
		rt_metrics_request_memo(m, &memo, "GET", 200, longns, 0.001);
		rt_metrics_authz_memo(m, &memo, "team", true);
		rt_metrics_authz_memo(m, &memo, "team", false);
		rt_metrics_authz_memo(m, &memo, "team", true);
	}
	char *out;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &out, NULL), 0);
	static const char *const want[] = {
		"sandbox_router_requests_total{code=\"200\",method=\"GET\",sandbox_namespace=\"team\"} 6\n",
		"sandbox_router_requests_total{code=\"200\",method=\"POST\",sandbox_namespace=\"team\"} 3\n",
		"sandbox_router_requests_total{code=\"404\",method=\"GET\",sandbox_namespace=\"team\"} 3\n",
		"sandbox_router_requests_total{code=\"200\",method=\"GET\",sandbox_namespace=\"other\"} 3\n",
		"sandbox_router_request_duration_seconds_count{code=\"200\",method=\"GET\",sandbox_namespace=\"team\"} 6\n",
		"sandbox_router_authz_decisions_total{decision=\"allow\",sandbox_namespace=\"team\"} 6\n",
		"sandbox_router_authz_decisions_total{decision=\"deny\",sandbox_namespace=\"team\"} 3\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!strstr(out, want[i]))
			fprintf(stderr, "--- got:\n%s\n", out);
		ck_assert_msg(strstr(out, want[i]), "missing: %s", want[i]);
	}
	/* the long namespace: counted 3 times under the label it maps to */
	ck_assert_ptr_nonnull(strstr(out, "} 3\n"));
	free(out);
	ck_assert_int_eq(asb_metrics_registry_expose(reg2, &out, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "sandbox_router_requests_total{code=\"200\",method=\"GET\","
	                                  "sandbox_namespace=\"team\"} 1\n"));
	free(out);
	rt_metrics_free(m);
	rt_metrics_free(m2);
	asb_metrics_registry_free(reg);
	asb_metrics_registry_free(reg2);
}
END_TEST

/* The namespace label comes from a client header: any valid DNS label,
 * before authorization. Unbounded, each new value made ~30 series (1 KiB
 * of memory, 2.8 KiB of every scrape): 2,000 requests naming random
 * namespaces grew a scrape to 5.6 MB. Past RT_METRICS_MAX_NAMESPACES
 * distinct values, new ones are counted as "_other". */
START_TEST(namespace_cardinality_bounded)
{
	asb_metrics_registry *reg;
	rt_metrics *m = new_metrics(&reg);
	char ns[32];
	for (int i = 0; i < RT_METRICS_MAX_NAMESPACES + 50; i++) {
		snprintf(ns, sizeof(ns), "ns-%d", i);
		rt_metrics_request(m, "GET", 401, ns, 0.001);
		rt_metrics_authz(m, ns, false);
		rt_metrics_upstream_error(m, ns, "dial");
		rt_metrics_retry(m, ns);
	}
	/* a namespace seen before the bound keeps its own series */
	rt_metrics_request(m, "GET", 200, "ns-0", 0.001);
	rt_metrics_request(m, "GET", 200, "-", 0.001);
	char *out;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &out, NULL), 0);
	size_t n = 0;
	for (const char *p = out; (p = strstr(p, "sandbox_router_requests_total{code=\"401\"")); p++)
		n++;
	ck_assert_int_eq(n, RT_METRICS_MAX_NAMESPACES + 1);
	snprintf(ns, sizeof(ns), "ns-%d", RT_METRICS_MAX_NAMESPACES);
	ck_assert_ptr_null(strstr(out, ns));
	ck_assert_ptr_nonnull(strstr(out, "sandbox_router_requests_total{code=\"401\",method=\"GET\","
	                                  "sandbox_namespace=\"_other\"} 50\n"));
	ck_assert_ptr_nonnull(strstr(out, "sandbox_router_authz_decisions_total{decision=\"deny\","
	                                  "sandbox_namespace=\"_other\"} 50\n"));
	ck_assert_ptr_nonnull(strstr(out, "sandbox_router_upstream_retries_total{sandbox_namespace=\"_other\"} 50\n"));
	ck_assert_ptr_nonnull(strstr(out, "sandbox_router_requests_total{code=\"200\",method=\"GET\","
	                                  "sandbox_namespace=\"ns-0\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(out, "sandbox_namespace=\"-\"} 1\n"));
	free(out);
	rt_metrics_free(m);
	asb_metrics_registry_free(reg);
}
END_TEST

static size_t count_lines(const char *text, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		n += strncmp(p, prefix, len) == 0;
	return n;
}

/* Method (the client's) x code (the sandbox's, 100-599) x namespace (a
 * client header) reached 231 k series and a 387 MB scrape. Hostile values
 * of all three at once: every label stays within its set, and each family
 * within RT_METRICS_MAX_SERIES plus its "_other" overflow combinations. */
START_TEST(hostile_labels_bounded)
{
	asb_metrics_registry *reg;
	rt_metrics *m = new_metrics(&reg);
	/* methods http-parser accepts, codes a sandbox may answer */
	static const char *const methods[] = {
		"GET", "POST", "PROPFIND", "MKCOL", "M-SEARCH", "PURGE", "SOURCE", "LINK", "DELETE",
		"MKCALENDAR", "UNSUBSCRIBE", "PATCH",
	};
	char ns[32];
	unsigned seed = 1;
	for (int i = 0; i < RT_METRICS_MAX_NAMESPACES; i++) {
		snprintf(ns, sizeof(ns), "tenant-%d", i);
		for (int j = 0; j < 12; j++) {
			seed = seed * 1103515245u + 12345u;
			const char *meth = methods[(seed >> 8) % 12];
			int code = 100 + (int)((seed >> 16) % 500);
			rt_metrics_request(m, meth, code, ns, 0.01);
			rt_metrics_upstream_error(m, ns, "dial");
		}
	}
	char *out;
	size_t len;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &out, &len), 0);
	/* 10 methods x 56 codes ("other" and five classes included) of "_other" */
	size_t nreq = count_lines(out, "sandbox_router_requests_total{");
	ck_assert_uint_gt(nreq, RT_METRICS_MAX_SERIES);
	ck_assert_uint_le(nreq, RT_METRICS_MAX_SERIES + 10 * 56);
	size_t ncount = count_lines(out, "sandbox_router_request_duration_seconds_count{");
	ck_assert_uint_eq(ncount, nreq);
	ck_assert_uint_le(count_lines(out, "sandbox_router_upstream_errors_total{"), RT_METRICS_MAX_NAMESPACES);
	ck_assert_ptr_nonnull(strstr(out, "sandbox_namespace=\"_other\""));
	/* methods outside RFC 9110 and PATCH are OTHER; odd codes their class */
	ck_assert_ptr_null(strstr(out, "PROPFIND"));
	ck_assert_ptr_null(strstr(out, "M-SEARCH"));
	ck_assert_ptr_nonnull(strstr(out, "method=\"OTHER\""));
	ck_assert_ptr_nonnull(strstr(out, "method=\"PATCH\""));
	ck_assert_ptr_nonnull(strstr(out, "code=\"2xx\""));
	ck_assert_ptr_nonnull(strstr(out, "code=\"5xx\""));
	ck_assert_ptr_null(strstr(out, "code=\"299\""));
	ck_assert_ptr_null(strstr(out, "code=\"599\""));
	/* so the scrape stays in the megabytes, not the hundreds */
	ck_assert_uint_lt(len, 8u << 20);
	free(out);
	rt_metrics_free(m);
	asb_metrics_registry_free(reg);
	char b[8];
	ck_assert_str_eq(rt_metrics_code(404, b, sizeof(b)), "404");
	ck_assert_str_eq(rt_metrics_code(299, b, sizeof(b)), "2xx");
	ck_assert_str_eq(rt_metrics_code(499, b, sizeof(b)), "499");
	ck_assert_str_eq(rt_metrics_code(600, b, sizeof(b)), "other");
	ck_assert_str_eq(rt_metrics_code(0, b, sizeof(b)), "other");
	ck_assert_str_eq(rt_metrics_method("get"), "OTHER");
	ck_assert_str_eq(rt_metrics_method(NULL), "OTHER");
	ck_assert_str_eq(rt_metrics_method("OPTIONS"), "OPTIONS");
}
END_TEST

START_TEST(access_line)
{
	rt_access_entry e = { "GET", "/files/a\"b", "10.0.0.9", "sb", "team", "curl/8", 200, 1.2345, 42 };
	char *line = rt_access_line(&e, "2026-01-01T00:00:00.000Z");
	ck_assert_ptr_nonnull(line);
	ck_assert_int_eq(line[strlen(line) - 1], '\n');
	cJSON *o = cJSON_Parse(line);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "logger")->valuestring, "sandbox-router.access");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "msg")->valuestring, "request");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "path")->valuestring, "/files/a\"b");
	ck_assert_int_eq(cJSON_GetObjectItem(o, "status")->valueint, 200);
	ck_assert(cJSON_GetObjectItem(o, "duration_ms")->valuedouble > 1.23);
	ck_assert_int_eq(cJSON_GetObjectItem(o, "bytes_out")->valueint, 42);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "client_ip")->valuestring, "10.0.0.9");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "sandbox_id")->valuestring, "sb");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "sandbox_namespace")->valuestring, "team");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "user_agent")->valuestring, "curl/8");
	cJSON_Delete(o);
	free(line);
	/* the whole line, byte for byte: key order (zap's), numbers as the log always
	 * printed them (milliseconds to three decimals, no trailing zeros) */
	rt_access_entry f = { "POST", "/x", "::1", "", NULL, "a\\b\n", 499, 12.5, 3000000000u };
	line = rt_access_line(&f, "2026-01-01T00:00:00.000Z");
	ck_assert_ptr_nonnull(line);
	ck_assert_str_eq(line,
	                 "{\"level\":\"info\",\"ts\":\"2026-01-01T00:00:00.000Z\","
	                 "\"logger\":\"sandbox-router.access\",\"msg\":\"request\","
	                 "\"method\":\"POST\",\"path\":\"/x\",\"status\":499,\"duration_ms\":12.5,"
	                 "\"client_ip\":\"::1\",\"sandbox_id\":\"\",\"sandbox_namespace\":\"\","
	                 "\"bytes_out\":3000000000,\"user_agent\":\"a\\\\b\\n\"}\n");
	free(line);
	f.duration_ms = 0.0004;
	f.status = 200;
	line = rt_access_line(&f, "t");
	ck_assert_ptr_nonnull(strstr(line, "\"status\":200,\"duration_ms\":0,"));
	free(line);
	/* a request's bytes are any bytes (a User-Agent in Latin-1, a raw 0xff in
	 * the path): the line stays UTF-8, each stray byte U+FFFD, as zap writes */
	rt_access_entry g = { "GET", "/a\xff", "::1", "sb\xc3", "t\xed\xa0\x80", "caf\xe9 \xc3\xa9", 200, 1, 1 };
	line = rt_access_line(&g, "t");
	ck_assert_ptr_nonnull(line);
	o = cJSON_Parse(line);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "path")->valuestring, "/a\xef\xbf\xbd");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "sandbox_id")->valuestring, "sb\xef\xbf\xbd");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "sandbox_namespace")->valuestring,
	                 "t\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "user_agent")->valuestring,
	                 "caf\xef\xbf\xbd \xc3\xa9");
	cJSON_Delete(o);
	free(line);
	/* a path longer than the stack buffer of rt_access_log still logs whole */
	char *long_path = malloc(10000);
	memset(long_path, 'p', 9999);
	long_path[9999] = '\0';
	f.path = long_path;
	line = rt_access_line(&f, "t");
	ck_assert_ptr_nonnull(line);
	o = cJSON_Parse(line);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "path")->valuestring, long_path);
	cJSON_Delete(o);
	free(line);
	free(long_path);
	ck_assert(rt_access_skip("/healthz"));
	ck_assert(rt_access_skip("/metrics"));
	ck_assert(!rt_access_skip("/healthz/x"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("router_metrics");
	TCase *tc = tcase_create("metrics");
	tcase_add_test(tc, exposition);
	tcase_add_test(tc, memo_counts_as_the_plain_calls);
	tcase_add_test(tc, access_line);
	tcase_add_test(tc, namespace_cardinality_bounded);
	tcase_add_test(tc, hostile_labels_bounded);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
