/*
 * metrics.c - registration and recording of the router's metrics (metrics.h).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metrics.h"

/* Open addressing over copies of the admitted namespaces (labels are at
 * most 63 bytes); the table is twice the bound, so probes stay short. */
#define NS_SLOTS (2 * RT_METRICS_MAX_NAMESPACES)

struct rt_metrics {
	pthread_mutex_t ns_lock;
	char (*ns)[64];
	size_t nns;
	asb_metric *requests, *duration, *inflight, *upstream_errors, *retries,
	           *invalidations, *authz, *cert_reloads, *build_info, *upstream_conns,
	           *activity_writes, *activity_tracked, *resumes, *resume_hold,
	           *activity_lag;
	asb_metric_series *tracked_s;
	asb_metric_series *inflight_s;
	/* the connection gauge's two series, looked up once: every take and
	 * release of a pooled connection moves them */
	asb_metric_series *conns_active, *conns_idle;
};

static int reg_buckets(asb_metrics_registry *r, asb_metric **out, asb_metric_type type,
                       const char *name, const char *help, const char *const *labels,
                       const double *buckets, size_t nbuckets)
{
	/* overflow tuples: sandbox_namespace "_other", the rest kept */
	static const char *const overflow[3][3] = {
		{ "_other", NULL, NULL }, { NULL, "_other", NULL }, { NULL, NULL, "_other" },
	};
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = type;
	o.name = name;
	o.help = help;
	o.label_names = labels;
	for (size_t i = 0; labels && labels[i] && i < 3; i++)
		if (strcmp(labels[i], "sandbox_namespace") == 0) {
			o.max_series = RT_METRICS_MAX_SERIES;
			o.overflow_values = overflow[i];
		}
	if (type == ASB_METRIC_HISTOGRAM) {
		o.buckets = buckets;
		o.nbuckets = nbuckets;
	}
	return asb_metrics_register(out, r, &o);
}

static int reg(asb_metrics_registry *r, asb_metric **out, asb_metric_type type,
               const char *name, const char *help, const char *const *labels)
{
	static const double buckets[] = { .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 180 };
	return reg_buckets(r, out, type, name, help, labels, buckets,
	                   sizeof(buckets) / sizeof(buckets[0]));
}

int rt_metrics_new(rt_metrics **out, asb_metrics_registry *r, const rt_build_info *bi)
{
	static const char *const req_labels[] = { "method", "code", "sandbox_namespace", NULL };
	static const char *const ns_only[] = { "sandbox_namespace", NULL };
	static const char *const err_labels[] = { "sandbox_namespace", "reason", NULL };
	static const char *const authz_labels[] = { "sandbox_namespace", "decision", NULL };
	static const char *const outcome[] = { "outcome", NULL };
	static const char *const state[] = { "state", NULL };
	static const char *const result[] = { "result", NULL };
	static const double hold_buckets[] = { .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300 };
	rt_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return ASB_ENOMEM;
	m->ns = calloc(NS_SLOTS, sizeof(*m->ns));
	if (!m->ns) {
		free(m);
		return ASB_ENOMEM;
	}
	pthread_mutex_init(&m->ns_lock, NULL);
	int rc;
	if ((rc = reg(r, &m->requests, ASB_METRIC_COUNTER, "sandbox_router_requests_total",
	              "Requests handled by the router, by method, status code and sandbox namespace.",
	              req_labels)) < 0 ||
	    (rc = reg(r, &m->duration, ASB_METRIC_HISTOGRAM, "sandbox_router_request_duration_seconds",
	              "Time from request head to the end of the response (upgrades: the tunnel's life).",
	              req_labels)) < 0 ||
	    (rc = reg(r, &m->inflight, ASB_METRIC_GAUGE, "sandbox_router_inflight_requests",
	              "Requests being handled now.", NULL)) < 0 ||
	    (rc = reg(r, &m->upstream_errors, ASB_METRIC_COUNTER, "sandbox_router_upstream_errors_total",
	              "Failures reaching or reading a sandbox, by reason (timeout, tls, eof, dial, other).",
	              err_labels)) < 0 ||
	    (rc = reg(r, &m->retries, ASB_METRIC_COUNTER, "sandbox_router_upstream_retries_total",
	              "Connects to a sandbox tried again after a connect failure.", ns_only)) < 0 ||
	    (rc = reg(r, &m->invalidations, ASB_METRIC_COUNTER, "sandbox_router_cache_invalidations_total",
	              "Cache entries dropped after a dead-host error (the watch keeps this cache "
	              "current, so this stays at 0).", ns_only)) < 0 ||
	    (rc = reg(r, &m->authz, ASB_METRIC_COUNTER, "sandbox_router_authz_decisions_total",
	              "Authorization verdicts, allow or deny.", authz_labels)) < 0 ||
	    (rc = reg(r, &m->cert_reloads, ASB_METRIC_COUNTER, "sandbox_router_cert_reloads_total",
	              "Serving certificate reloads, by outcome.", outcome)) < 0 ||
	    (rc = reg(r, &m->upstream_conns, ASB_METRIC_GAUGE, "sandbox_router_upstream_connections",
	              "Connections to sandboxes, active (carrying a request) or idle (pooled).",
	              state)) < 0 ||
	    (rc = reg(r, &m->activity_writes, ASB_METRIC_COUNTER, "sandbox_router_activity_writes_total",
	              "Writes of a Sandbox's last-activity annotation, by result (ok, not_found, error).",
	              result)) < 0 ||
	    (rc = reg(r, &m->activity_tracked, ASB_METRIC_GAUGE, "sandbox_router_activity_tracked",
	              "Sandboxes with an idle policy whose activity this router tracks now.", NULL)) < 0 ||
	    (rc = reg(r, &m->resumes, ASB_METRIC_COUNTER, "sandbox_router_resumes_total",
	              "Resume patches of Sandboxes suspended for idleness, by result (ok, not_found, "
	              "error).", result)) < 0 ||
	    (rc = reg_buckets(r, &m->resume_hold, ASB_METRIC_HISTOGRAM,
	                      "sandbox_router_resume_hold_seconds",
	                      "Time a request was held while its Sandbox resumed, by how the hold "
	                      "ended (ready, timeout, gone, other).", result, hold_buckets,
	                      sizeof(hold_buckets) / sizeof(hold_buckets[0]))) < 0 ||
	    (rc = reg_buckets(r, &m->activity_lag, ASB_METRIC_HISTOGRAM,
	                      "sandbox_router_activity_publish_lag_seconds",
	                      "How late a last-activity write was sent relative to when it became "
	                      "due.", NULL, hold_buckets,
	                      sizeof(hold_buckets) / sizeof(hold_buckets[0]))) < 0 ||
	    (rc = asb_metric_series_get(&m->tracked_s, m->activity_tracked, NULL, 0)) < 0)
		goto fail;
	const char *const consts[] = {
		"git_version", bi->version, "git_commit", bi->commit, "build_date", bi->date,
		"go_version", "", "compiler", bi->compiler, "platform", bi->platform, NULL,
	};
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_GAUGE;
	o.name = "sandbox_router_build_info";
	o.help = "A metric with a constant '1' value labeled by the build of sandbox-router.";
	o.const_labels = consts;
	if ((rc = asb_metrics_register(&m->build_info, r, &o)) < 0 ||
	    (rc = asb_metric_set(m->build_info, NULL, 0, 1)) < 0 ||
	    (rc = asb_metric_series_get(&m->inflight_s, m->inflight, NULL, 0)) < 0)
		goto fail;
	/* the inflight and connection gauges show 0 before the first request */
	if ((rc = asb_metric_series_get(&m->conns_active, m->upstream_conns,
	                                (const char *[]){ "active" }, 1)) < 0 ||
	    (rc = asb_metric_series_get(&m->conns_idle, m->upstream_conns,
	                                (const char *[]){ "idle" }, 1)) < 0)
		goto fail;
	*out = m;
	return 0;
fail:
	pthread_mutex_destroy(&m->ns_lock);
	free(m->ns);
	free(m);
	return rc;
}

void rt_metrics_free(rt_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->ns_lock);
	free(m->ns);
	free(m);
}

/* The label value for namespace `ns`: itself when admitted before or while
 * there is room, else "_other" (no namespace starts with '_'). */
static const char *ns_label(rt_metrics *m, const char *ns)
{
	size_t len = strlen(ns);
	if (strcmp(ns, "-") == 0 || len >= sizeof(m->ns[0]))
		return strcmp(ns, "-") == 0 ? ns : "_other";
	uint32_t h = 2166136261u;  /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)ns[i]) * 16777619u;
	const char *out = "_other";
	pthread_mutex_lock(&m->ns_lock);
	for (size_t i = h % NS_SLOTS;; i = (i + 1) % NS_SLOTS) {
		if (!m->ns[i][0]) {
			if (m->nns < RT_METRICS_MAX_NAMESPACES) {
				memcpy(m->ns[i], ns, len + 1);
				m->nns++;
				out = ns;
			}
			break;
		}
		if (strcmp(m->ns[i], ns) == 0) {
			out = ns;
			break;
		}
	}
	pthread_mutex_unlock(&m->ns_lock);
	return out;
}

const char *rt_metrics_method(const char *method)
{
	static const char *const known[] = {
		"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
	};
	for (size_t i = 0; method && i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(method, known[i]) == 0)
			return known[i];
	return "OTHER";
}

const char *rt_metrics_code(int code, char *buf, size_t cap)
{
	/* RFC 9110 §15, 6585 (428, 429, 431, 511), 7725 (451); 499: ours */
	static const short known[] = {
		100, 101, 200, 201, 202, 203, 204, 205, 206, 300, 301, 302, 303, 304, 305, 307, 308,
		400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416,
		417, 421, 422, 426, 428, 429, 431, 451, 499, 500, 501, 502, 503, 504, 505, 511,
	};
	if (code < 100 || code > 599) {
		snprintf(buf, cap, "other");
		return buf;
	}
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i] == code) {
			snprintf(buf, cap, "%d", code);
			return buf;
		}
	snprintf(buf, cap, "%dxx", code / 100);
	return buf;
}

void rt_metrics_request(rt_metrics *m, const char *method, int code, const char *ns,
                        double seconds)
{
	char c[8];
	const char *v[] = { rt_metrics_method(method), rt_metrics_code(code, c, sizeof(c)),
	                    ns_label(m, ns) };
	asb_metric_add(m->requests, v, 3, 1);
	asb_metric_observe(m->duration, v, 3, seconds);
}

void rt_metrics_request_memo(rt_metrics *m, rt_metrics_memo *memo, const char *method, int code,
                             const char *ns, double seconds)
{
	const char *meth = rt_metrics_method(method);
	size_t nl = strlen(ns);
	if (memo->m != m || memo->method != meth || memo->code != code || nl >= sizeof(memo->ns) ||
	    memcmp(memo->ns, ns, nl + 1) != 0) {
		char c[8];
		const char *v[] = { meth, rt_metrics_code(code, c, sizeof(c)), ns_label(m, ns) };
		asb_metric_series *rs, *ds;
		if (asb_metric_series_get(&rs, m->requests, v, 3) < 0 ||
		    asb_metric_series_get(&ds, m->duration, v, 3) < 0) {
			memo->m = NULL;
			return;
		}
		memo->requests = rs;
		memo->duration = ds;
		memo->method = meth;
		memo->code = code;
		if (nl < sizeof(memo->ns)) {
			memcpy(memo->ns, ns, nl + 1);
			memo->m = m;
		} else {
			memo->m = NULL;  /* too long to remember: looked up each time */
		}
	}
	asb_metric_series_add(memo->requests, 1);
	asb_metric_series_observe(memo->duration, seconds);
}

void rt_metrics_authz_memo(rt_metrics *m, rt_metrics_memo *memo, const char *ns, bool allow)
{
	size_t nl = strlen(ns);
	if (memo->authz_m != m || memo->allow != allow || nl >= sizeof(memo->authz_ns) ||
	    memcmp(memo->authz_ns, ns, nl + 1) != 0) {
		asb_metric_series *s;
		if (asb_metric_series_get(&s, m->authz, (const char *[]){ ns_label(m, ns),
		                          allow ? "allow" : "deny" }, 2) < 0) {
			memo->authz_m = NULL;
			return;
		}
		memo->authz = s;
		memo->allow = allow;
		if (nl < sizeof(memo->authz_ns)) {
			memcpy(memo->authz_ns, ns, nl + 1);
			memo->authz_m = m;
		} else {
			memo->authz_m = NULL;
		}
	}
	asb_metric_series_add(memo->authz, 1);
}

void rt_metrics_inflight(rt_metrics *m, int delta)
{
	asb_metric_series_add(m->inflight_s, delta);
}

void rt_metrics_upstream_error(rt_metrics *m, const char *ns, const char *reason)
{
	asb_metric_add(m->upstream_errors, (const char *[]){ ns_label(m, ns), reason }, 2, 1);
}

void rt_metrics_retry(rt_metrics *m, const char *ns)
{
	asb_metric_add(m->retries, (const char *[]){ ns_label(m, ns) }, 1, 1);
}

void rt_metrics_authz(rt_metrics *m, const char *ns, bool allow)
{
	asb_metric_add(m->authz, (const char *[]){ ns_label(m, ns), allow ? "allow" : "deny" }, 2, 1);
}

void rt_metrics_upstream_conn(rt_metrics *m, const char *state, int delta)
{
	if (strcmp(state, "active") == 0)
		asb_metric_series_add(m->conns_active, delta);
	else if (strcmp(state, "idle") == 0)
		asb_metric_series_add(m->conns_idle, delta);
	else
		asb_metric_add(m->upstream_conns, (const char *[]){ state }, 1, delta);
}

const char *rt_metrics_write_result(int rc)
{
	return rc == 0 ? "ok" : rc == ASB_ENOTFOUND ? "not_found" : "error";
}

void rt_metrics_activity_write(rt_metrics *m, int rc)
{
	asb_metric_add(m->activity_writes, (const char *[]){ rt_metrics_write_result(rc) }, 1, 1);
}

void rt_metrics_activity_tracked(rt_metrics *m, size_t n)
{
	asb_metric_series_set(m->tracked_s, (double)n);
}

void rt_metrics_resume(rt_metrics *m, int rc)
{
	asb_metric_add(m->resumes, (const char *[]){ rt_metrics_write_result(rc) }, 1, 1);
}

void rt_metrics_activity_lag(rt_metrics *m, double seconds)
{
	asb_metric_observe(m->activity_lag, NULL, 0, seconds < 0 ? 0 : seconds);
}

void rt_metrics_resume_hold(rt_metrics *m, const char *result, double seconds)
{
	static const char *const known[] = { "ready", "timeout", "gone", "drain" };
	const char *v = "other";
	for (size_t i = 0; result && i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(result, known[i]) == 0)
			v = known[i];
	asb_metric_observe(m->resume_hold, (const char *[]){ v }, 1, seconds);
}
