/*
 * rest_metrics.c - client-go's REST client metrics (see rest_metrics.h):
 * names, help texts, labels and latency buckets as in
 * k8s.io/component-base/metrics/prometheus/restclient.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rest_metrics.h"

struct k8s__rest_metrics {
	char *host;
	asb_metric *requests;
	asb_metric *duration;
};

static const double latency_buckets[] = {
	0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
};

/* "https://host:port/path" -> "host:port" (what Go's url.URL.Host holds). */
static char *url_host(const char *url)
{
	const char *p = strstr(url, "://");
	p = p ? p + 3 : url;
	const char *at = p + strcspn(p, "/?#");
	/* userinfo never appears in a server URL we build; skip it anyway */
	const char *user = memchr(p, '@', (size_t)(at - p));
	if (user)
		p = user + 1;
	return strndup(p, (size_t)(at - p));
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
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_COUNTER;
	o.name = "rest_client_requests_total";
	o.help = "Number of HTTP requests, partitioned by status code, method, and host.";
	o.label_names = result_labels;
	int rc = asb_metrics_register(&m->requests, reg, &o);
	if (rc == 0) {
		o.type = ASB_METRIC_HISTOGRAM;
		o.name = "rest_client_request_duration_seconds";
		o.help = "Request latency in seconds. Broken down by verb, and host.";
		o.label_names = latency_labels;
		o.buckets = latency_buckets;
		o.nbuckets = sizeof(latency_buckets) / sizeof(latency_buckets[0]);
		rc = asb_metrics_register(&m->duration, reg, &o);
	}
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
