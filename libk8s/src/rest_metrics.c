/*
 * rest_metrics.c - client-go's REST client metrics (see rest_metrics.h):
 * names, help texts, labels and latency buckets as in
 * k8s.io/component-base/metrics/prometheus/restclient.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include "metric_family.h"
#include "rest_metrics.h"

struct k8s__rest_metrics {
	char *host;
	asb_metric *requests;
	asb_metric *duration;
};

static const double latency_buckets[] = {
	0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
};

/*
 * "https://host:port/path" -> "host:port" (what Go's url.URL.Host holds:
 * the port only when the URL has one, an IPv6 host bracketed), read with
 * curl's URL API as the client reads the URL. Something curl can not read
 * is kept whole. NULL only when out of memory.
 */
static char *url_host(const char *url)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *out = NULL;
	if (!u)
		return NULL;
	if (curl_url_set(u, CURLUPART_URL, url,
	                 CURLU_DEFAULT_SCHEME | CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		curl_url_get(u, CURLUPART_PORT, &port, 0);  /* CURLUE_NO_PORT: none */
		if (asprintf(&out, "%s%s%s", host, port ? ":" : "", port ? port : "") < 0)
			out = NULL;
	} else {
		out = strdup(url);
	}
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return out;
}

int k8s__rest_metrics_new(k8s__rest_metrics **out, asb_metrics_registry *reg,
                          const char *server_url)
{
	*out = NULL;
	if (!reg)
		return 0;
	k8s__rest_metrics *m = calloc(1, sizeof(*m));
	if (!m || !(m->host = url_host(server_url ? server_url : ""))) {
		free(m);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "rest client metrics: out of memory");
	}
	static const char *const result_labels[] = { "code", "method", "host", NULL };
	static const char *const latency_labels[] = { "verb", "host", NULL };
	int rc = k8s__metric_family(&m->requests, reg, ASB_METRIC_COUNTER,
	                            "rest_client_requests_total",
	                            "Number of HTTP requests, partitioned by status code, method, and host.",
	                            result_labels, NULL, 0);
	if (rc == 0)
		rc = k8s__metric_family(&m->duration, reg, ASB_METRIC_HISTOGRAM,
		                        "rest_client_request_duration_seconds",
		                        "Request latency in seconds. Broken down by verb, and host.",
		                        latency_labels, latency_buckets,
		                        sizeof(latency_buckets) / sizeof(latency_buckets[0]));
	if (rc < 0) {
		k8s__rest_metrics_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void k8s__rest_metrics_free(k8s__rest_metrics *m)
{
	if (!m)
		return;
	free(m->host);
	free(m);
}

void k8s__rest_metrics_observe(k8s__rest_metrics *m, const char *method,
                               long status, double seconds, bool watch)
{
	if (!m)
		return;
	char code[24];
	if (status > 0)
		snprintf(code, sizeof(code), "%ld", status);
	else
		snprintf(code, sizeof(code), "<error>");
	const char *result[] = { code, method, m->host };
	asb_metric_add(m->requests, result, 3, 1);
	if (!watch) {
		const char *latency[] = { method, m->host };
		asb_metric_observe(m->duration, latency, 2, seconds);
	}
}
