/*
 * handlers.c - the built-in handlers of the HTTP server: the
 * Prometheus metrics endpoint and health checks in the shape Kubernetes
 * components serve them (k8s.io/apiserver/pkg/server/healthz: "ok", or
 * one "[+]name ok" / "[-]name failed" line per check and HTTP 503).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "httpd/server.h"
#include "server_internal.h"
#include "asb/strbuf.h"

/* --- metrics ------------------------------------------------------------------ */

static void serve_metrics(const httpd_request *req, httpd_response *res, void *ud)
{
	char *text = NULL;
	size_t len = 0;
	if (asb_metrics_registry_expose(ud, &text, &len) < 0) {
		httpd_response_set_status(res, 500);
		httpd_response_write(res, "cannot gather metrics\n", 22);
		return;
	}
	httpd_response_add_header(res, "Content-Type", ASB_METRICS_CONTENT_TYPE);
	httpd_response_write(res, text, len);
	free(text);
}

int httpd_server_handle_metrics(httpd_server *s, const char *path,
                                   asb_metrics_registry *registry)
{
	if (!registry)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http metrics handler: registry is required");
	return httpd_server_route(s, "GET", path, serve_metrics, registry);
}

/* --- health checks -------------------------------------------------------------- */

typedef struct {
	char *name;
	httpd_health_check_fn fn;
	void *userdata;
} check;

struct httpd_health_checks {
	pthread_mutex_t lock;      /* guards checks; held while they run */
	check *checks;
	size_t n;
};

int httpd_health_checks_new(httpd_health_checks **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "health checks: out is required");
	httpd_health_checks *hc = calloc(1, sizeof(*hc));
	if (!hc)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "health checks: out of memory");
	pthread_mutex_init(&hc->lock, NULL);
	*out = hc;
	return 0;
}

void httpd_health_checks_free(httpd_health_checks *hc)
{
	if (!hc)
		return;
	for (size_t i = 0; i < hc->n; i++)
		free(hc->checks[i].name);
	free(hc->checks);
	pthread_mutex_destroy(&hc->lock);
	free(hc);
}

int httpd_health_checks_add(httpd_health_checks *hc, const char *name,
                          httpd_health_check_fn fn, void *userdata)
{
	if (!hc || !name || !*name || !fn)
		return asb_error_set(ASB_EINVAL, 0, NULL, "health checks: a name and a function are required");
	pthread_mutex_lock(&hc->lock);
	int rc = 0;
	for (size_t i = 0; i < hc->n; i++)
		if (strcmp(hc->checks[i].name, name) == 0) {
			rc = asb_error_set(ASB_EINVAL, 0, NULL, "health check %s: already added", name);
			goto out;
		}
	check *c = realloc(hc->checks, (hc->n + 1) * sizeof(*c));
	char *copy = strdup(name);
	if (c)
		hc->checks = c;
	if (!c || !copy) {
		free(copy);
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "health checks: out of memory");
		goto out;
	}
	hc->checks[hc->n].name = copy;
	hc->checks[hc->n].fn = fn;
	hc->checks[hc->n].userdata = userdata;
	hc->n++;
out:
	pthread_mutex_unlock(&hc->lock);
	return rc;
}

/* Runs the check called `name`: 0 passed, 1 failed, -1 no such check. */
static int run_one(httpd_health_checks *hc, const char *name)
{
	int rc = -1;
	pthread_mutex_lock(&hc->lock);
	for (size_t i = 0; i < hc->n && rc < 0; i++)
		if (strcmp(hc->checks[i].name, name) == 0)
			rc = hc->checks[i].fn(hc->checks[i].userdata) == 0 ? 0 : 1;
	pthread_mutex_unlock(&hc->lock);
	return rc;
}

int httpd_health_checks_run(httpd_health_checks *hc, char **report)
{
	asb_strbuf b = ASB_STRBUF_INIT;
	int failed = 0;
	if (report)
		*report = NULL;
	if (!hc)
		return 0;
	pthread_mutex_lock(&hc->lock);
	for (size_t i = 0; i < hc->n; i++) {
		bool ok = hc->checks[i].fn(hc->checks[i].userdata) == 0;
		if (!ok)
			failed++;
		asb_strbuf_addf(&b, "[%c]%s %s\n", ok ? '+' : '-', hc->checks[i].name,
		                ok ? "ok" : "failed");
	}
	pthread_mutex_unlock(&hc->lock);
	if (report) {
		asb_strbuf_add(&b, "", 0);
		*report = b.failed ? NULL : asb_strbuf_detach(&b, NULL);
	}
	asb_strbuf_free(&b);
	return failed;
}

typedef struct {
	httpd_health_checks *hc;
	char *name;                /* the path without '/', for the last line */
	size_t prefix_len;         /* strlen("<path>/"), for <path>/<check> */
} health_route;

/* True when the query has the parameter `verbose` (with or without a value). */
static bool has_verbose(const char *query)
{
	for (const char *p = query; p && *p;) {
		size_t n = strcspn(p, "&");
		if ((n >= 7 && strncmp(p, "verbose", 7) == 0) && (n == 7 || p[7] == '='))
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

static void serve_health(const httpd_request *req, httpd_response *res, void *ud)
{
	health_route *hr = ud;
	char *report = NULL;
	int failed = httpd_health_checks_run(hr->hc, &report);
	asb_strbuf b = ASB_STRBUF_INIT;
	if (failed || has_verbose(httpd_request_query(req))) {
		if (report)
			asb_strbuf_adds(&b, report);
		asb_strbuf_addf(&b, "%s check %s\n", hr->name, failed ? "failed" : "passed");
	} else {
		asb_strbuf_adds(&b, "ok");
	}
	free(report);
	httpd_response_set_status(res, failed ? 503 : 200);
	httpd_response_add_header(res, "X-Content-Type-Options", "nosniff");
	if (b.failed)
		httpd_response_set_status(res, 500);
	else
		httpd_response_write(res, b.data, b.len);
	asb_strbuf_free(&b);
}

/* GET <path>/<check>: that check alone, as controller-runtime serves it
 * ("ok" or 503 "internal server error: <check> check failed"; 404 for a
 * check that does not exist). */
static void serve_one_check(const httpd_request *req, httpd_response *res, void *ud)
{
	health_route *hr = ud;
	const char *path = httpd_request_path(req);
	const char *name = path + hr->prefix_len;
	int rc = *name ? run_one(hr->hc, name) : -1;
	httpd_response_add_header(res, "X-Content-Type-Options", "nosniff");
	asb_strbuf b = ASB_STRBUF_INIT;
	if (rc < 0) {
		httpd_response_set_status(res, 404);
		asb_strbuf_adds(&b, "404 page not found\n");
	} else if (rc > 0) {
		httpd_response_set_status(res, 503);
		asb_strbuf_addf(&b, "internal server error: %s check failed\n", name);
	} else {
		httpd_response_set_status(res, 200);
		asb_strbuf_adds(&b, "ok");
	}
	if (b.failed)
		httpd_response_set_status(res, 500);
	else
		httpd_response_write(res, b.data, b.len);
	asb_strbuf_free(&b);
}

static void health_route_free(void *p)
{
	health_route *hr = p;
	free(hr->name);
	free(hr);
}

int httpd_server_handle_health(httpd_server *s, const char *path,
                                  httpd_health_checks *hc)
{
	if (!s || !path || !hc)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http health handler: server, path and checks are required");
	health_route *hr = calloc(1, sizeof(*hr));
	const char *base = strrchr(path, '/');
	char *name = strdup(base && base[1] ? base + 1 : path);
	if (!hr || !name) {
		free(hr);
		free(name);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http health handler: out of memory");
	}
	hr->hc = hc;
	hr->name = name;
	int rc = httpd__server_route_owned(s, "GET", path, serve_health, hr, health_route_free);
	if (rc)
		return rc;
	/* <path>/<check> for one check, on a route of its own */
	health_route *one = calloc(1, sizeof(*one));
	size_t n = strlen(path);
	char *prefix = malloc(n + 3);
	char *one_name = strdup(name);
	if (!one || !prefix || !one_name) {
		free(one);
		free(prefix);
		free(one_name);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http health handler: out of memory");
	}
	memcpy(prefix, path, n);
	memcpy(prefix + n, "/*", 3);
	one->hc = hc;
	one->name = one_name;
	one->prefix_len = n + 1;
	rc = httpd__server_route_owned(s, "GET", prefix, serve_one_check, one, health_route_free);
	free(prefix);
	return rc;
}
