/*
 * Unit tests of libk8s/src/rest_metrics.c: client-go's REST client metrics,
 * recorded directly and through a k8s_client whose server does not answer
 * (a closed loopback port: no server, fake or real, is involved).
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "k8s/client.h"
#include "k8s/config.h"
#include "asb/metrics.h"
#include "k8s/resource.h"
#include "rest_metrics.h"

static char *scrape(asb_metrics_registry *reg)
{
	char *text = NULL;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &text, NULL), 0);
	return text;
}

START_TEST(requests_are_counted_by_code_method_host_and_timed_by_verb)
{
	asb_metrics_registry *reg;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	k8s__rest_metrics *m;
	ck_assert_int_eq(k8s__rest_metrics_new(&m, reg, "https://10.0.0.1:6443/some/prefix"), 0);
	ck_assert_ptr_nonnull(m);
	k8s__rest_metrics_observe(m, "GET", 200, 0.01, false);
	k8s__rest_metrics_observe(m, "GET", 200, 0.2, false);
	k8s__rest_metrics_observe(m, "POST", 409, 0.03, false);
	k8s__rest_metrics_observe(m, "GET", 0, 1.5, false);     /* no answer */
	k8s__rest_metrics_observe(m, "GET", 200, 300, true);    /* a watch: counted only */
	char *text = scrape(reg);
	ck_assert_ptr_nonnull(strstr(text,
		"# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.\n"
		"# TYPE rest_client_requests_total counter\n"
		"rest_client_requests_total{code=\"200\",host=\"10.0.0.1:6443\",method=\"GET\"} 3\n"
		"rest_client_requests_total{code=\"409\",host=\"10.0.0.1:6443\",method=\"POST\"} 1\n"
		"rest_client_requests_total{code=\"<error>\",host=\"10.0.0.1:6443\",method=\"GET\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text,
		"# TYPE rest_client_request_duration_seconds histogram\n"
		"rest_client_request_duration_seconds_bucket{host=\"10.0.0.1:6443\",verb=\"GET\",le=\"0.005\"} 0\n"
		"rest_client_request_duration_seconds_bucket{host=\"10.0.0.1:6443\",verb=\"GET\",le=\"0.025\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text,
		"rest_client_request_duration_seconds_bucket{host=\"10.0.0.1:6443\",verb=\"GET\",le=\"2\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(text,
		"rest_client_request_duration_seconds_bucket{host=\"10.0.0.1:6443\",verb=\"GET\",le=\"60\"} 3\n"
		"rest_client_request_duration_seconds_bucket{host=\"10.0.0.1:6443\",verb=\"GET\",le=\"+Inf\"} 3\n"
		"rest_client_request_duration_seconds_sum{host=\"10.0.0.1:6443\",verb=\"GET\"} 1.71\n"
		"rest_client_request_duration_seconds_count{host=\"10.0.0.1:6443\",verb=\"GET\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(text,
		"rest_client_request_duration_seconds_count{host=\"10.0.0.1:6443\",verb=\"POST\"} 1\n"));
	free(text);
	k8s__rest_metrics_free(m);
	asb_metrics_registry_free(reg);
}
END_TEST

START_TEST(host_is_the_url_authority)
{
	asb_metrics_registry *reg;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	k8s__rest_metrics *a, *b;
	ck_assert_int_eq(k8s__rest_metrics_new(&a, reg, "https://[::1]:6443"), 0);
	ck_assert_int_eq(k8s__rest_metrics_new(&b, reg, "http://api.example"), 0);
	k8s__rest_metrics_observe(a, "GET", 200, 0, false);
	k8s__rest_metrics_observe(b, "GET", 200, 0, false);
	char *text = scrape(reg);
	ck_assert_ptr_nonnull(strstr(text, "{code=\"200\",host=\"[::1]:6443\",method=\"GET\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "{code=\"200\",host=\"api.example\",method=\"GET\"} 1\n"));
	free(text);
	k8s__rest_metrics_free(a);
	k8s__rest_metrics_free(b);
	asb_metrics_registry_free(reg);
}
END_TEST

/* The host label is Go's url.URL.Host: the authority without userinfo,
 * the port only when the URL has one. */
START_TEST(host_label_edge_cases)
{
	static const struct { const char *url, *host; } cases[] = {
		{ "https://[fd00::1]:6443/prefix/", "[fd00::1]:6443" },
		{ "https://[::1]", "[::1]" },
		{ "https://10.0.0.1:6443/a/b?x=1#f", "10.0.0.1:6443" },
		{ "https://user:pw@h.example:8443/p", "h.example:8443" },
		{ "h.example:6443/p", "h.example:6443" },          /* no scheme */
		{ "h.example", "h.example" },
		{ "http://h.example:80", "h.example:80" },          /* given: kept */
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		asb_metrics_registry *reg;
		ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
		k8s__rest_metrics *m;
		ck_assert_int_eq(k8s__rest_metrics_new(&m, reg, cases[i].url), 0);
		k8s__rest_metrics_observe(m, "GET", 200, 0, false);
		char *text = scrape(reg), want[256];
		snprintf(want, sizeof(want), "{code=\"200\",host=\"%s\",method=\"GET\"} 1\n",
		         cases[i].host);
		ck_assert_msg(strstr(text, want), "case %zu: %s lacks %s", i, text, want);
		free(text);
		k8s__rest_metrics_free(m);
		asb_metrics_registry_free(reg);
	}
}
END_TEST

START_TEST(no_registry_means_no_metrics)
{
	k8s__rest_metrics *m = (k8s__rest_metrics *)1;
	ck_assert_int_eq(k8s__rest_metrics_new(&m, NULL, "https://h:1"), 0);
	ck_assert_ptr_null(m);
	k8s__rest_metrics_observe(NULL, "GET", 200, 1, false);  /* no-op */
	k8s__rest_metrics_free(NULL);
}
END_TEST

/* A loopback port nothing listens on (the kernel's pick, released). */
static int closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

START_TEST(client_records_a_try_without_answer)
{
	int port = closed_port();
	char yaml[1024];
	snprintf(yaml, sizeof(yaml),
	         "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
	         "clusters:\n- name: k\n  cluster:\n    server: http://127.0.0.1:%d\n"
	         "users:\n- name: u\n  user:\n    token: t\n"
	         "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n", port);
	k8s_config *cfg;
	ck_assert_int_eq(k8s_config_load_yaml(&cfg, yaml, strlen(yaml), NULL, "test"), 0);
	asb_metrics_registry *reg;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.metrics = reg;
	o.max_retries = 0;
	o.timeout_ms = 5000;
	k8s_client *c;
	ck_assert_int_eq(k8s_client_new(&c, cfg, &o), 0);
	cJSON *obj = NULL;
	ck_assert_int_eq(k8s_client_get(c, &k8s_resource_pods, "default", "x", &obj),
	                 ASB_ETRANSPORT);
	k8s_client_free(c);

	char *text = scrape(reg);
	char want[256];
	snprintf(want, sizeof(want),
	         "rest_client_requests_total{code=\"<error>\",host=\"127.0.0.1:%d\",method=\"GET\"} 1\n", port);
	ck_assert_msg(strstr(text, want) != NULL, "missing %s in:\n%s", want, text);
	snprintf(want, sizeof(want),
	         "rest_client_request_duration_seconds_count{host=\"127.0.0.1:%d\",verb=\"GET\"} 1\n", port);
	ck_assert_ptr_nonnull(strstr(text, want));
	free(text);
	asb_metrics_registry_free(reg);

	/* a caller built against options version 2 has no `metrics` field:
	 * whatever lies past its struct is not read */
	k8s_client_options v2;
	memset(&v2, 0xAB, sizeof(v2));
	ck_assert_int_eq(k8s_client_options_init(&v2, 2), 0);
	ck_assert(v2.metrics == (void *)(uintptr_t)0xABABABABABABABABULL);
	v2.max_retries = 0;
	ck_assert_int_eq(k8s_client_new(&c, cfg, &v2), 0);
	ck_assert_int_eq(k8s_client_get(c, &k8s_resource_pods, "default", "x", &obj), ASB_ETRANSPORT);
	k8s_client_free(c);
	k8s_config_free(cfg);
}
END_TEST

int main(void)
{
	k8s_global_init();
	Suite *s = suite_create("rest_metrics");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, requests_are_counted_by_code_method_host_and_timed_by_verb);
	tcase_add_test(tc, host_is_the_url_authority);
	tcase_add_test(tc, host_label_edge_cases);
	tcase_add_test(tc, no_registry_means_no_metrics);
	tcase_add_test(tc, client_records_a_try_without_answer);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
