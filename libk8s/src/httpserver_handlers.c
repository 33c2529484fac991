/*
 * httpserver_handlers.c - the built-in handlers of the HTTP server: the
 * Prometheus metrics endpoint and health checks in the shape Kubernetes
 * components serve them (k8s.io/apiserver/pkg/server/healthz: "ok", or
 * one "[+]name ok" / "[-]name failed" line per check and HTTP 503).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/httpserver.h"
#include "httpserver_internal.h"
#include "strbuf.h"

/* --- metrics ------------------------------------------------------------------ */

static void serve_metrics(const k8s_http_request *req, k8s_http_response *res, void *ud)
{
	char *text = NULL;
	size_t len = 0;
	if (k8s_metrics_registry_expose(ud, &text, &len) < 0) {
		k8s_http_response_set_status(res, 500);
		k8s_http_response_write(res, "cannot gather metrics\n", 22);
		return;
	}
	k8s_http_response_add_header(res, "Content-Type", K8S_METRICS_CONTENT_TYPE);
	k8s_http_response_write(res, text, len);
	free(text);
}

int k8s_http_server_handle_metrics(k8s_http_server *s, const char *path,
                                   k8s_metrics_registry *registry)
{
	if (!registry)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http metrics handler: registry is required");
	return k8s_http_server_route(s, "GET", path, serve_metrics, registry);
}

/* --- health checks -------------------------------------------------------------- */

typedef struct {
	char *name;
	k8s_health_check_fn fn;
	void *userdata;
} check;

struct k8s_health_checks {
	pthread_mutex_t lock;      /* guards checks; held while they run */
	check *checks;
	size_t n;
};

int k8s_health_checks_new(k8s_health_checks **out)
{
	if (!out)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "health checks: out is required");
	k8s_health_checks *hc = calloc(1, sizeof(*hc));
	if (!hc)
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "health checks: out of memory");
	pthread_mutex_init(&hc->lock, NULL);
	*out = hc;
	return 0;
}

void k8s_health_checks_free(k8s_health_checks *hc)
{
	if (!hc)
		return;
	for (size_t i = 0; i < hc->n; i++)
		free(hc->checks[i].name);
	free(hc->checks);
	pthread_mutex_destroy(&hc->lock);
	free(hc);
}

int k8s_health_checks_add(k8s_health_checks *hc, const char *name,
                          k8s_health_check_fn fn, void *userdata)
{
	if (!hc || !name || !*name || !fn)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "health checks: a name and a function are required");
	pthread_mutex_lock(&hc->lock);
	int rc = 0;
	for (size_t i = 0; i < hc->n; i++)
		if (strcmp(hc->checks[i].name, name) == 0) {
			rc = k8s_error_set(K8S_EINVAL, 0, NULL, "health check %s: already added", name);
			goto out;
		}
	check *c = realloc(hc->checks, (hc->n + 1) * sizeof(*c));
	char *copy = strdup(name);
	if (c)
		hc->checks = c;
	if (!c || !copy) {
		free(copy);
		rc = k8s_error_set(K8S_ENOMEM, 0, NULL, "health checks: out of memory");
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
static int run_one(k8s_health_checks *hc, const char *name)
{
	int rc = -1;
	pthread_mutex_lock(&hc->lock);
	for (size_t i = 0; i < hc->n && rc < 0; i++)
		if (strcmp(hc->checks[i].name, name) == 0)
			rc = hc->checks[i].fn(hc->checks[i].userdata) == 0 ? 0 : 1;
	pthread_mutex_unlock(&hc->lock);
	return rc;
}

int k8s_health_checks_run(k8s_health_checks *hc, char **report)
{
	k8s_strbuf b = K8S_STRBUF_INIT;
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
		k8s_strbuf_addf(&b, "[%c]%s %s\n", ok ? '+' : '-', hc->checks[i].name,
		                ok ? "ok" : "failed");
	}
	pthread_mutex_unlock(&hc->lock);
	if (report) {
		k8s_strbuf_add(&b, "", 0);
		*report = b.failed ? NULL : k8s_strbuf_detach(&b, NULL);
	}
	k8s_strbuf_free(&b);
	return failed;
}

typedef struct {
	k8s_health_checks *hc;
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

static void serve_health(const k8s_http_request *req, k8s_http_response *res, void *ud)
{
	health_route *hr = ud;
	char *report = NULL;
	int failed = k8s_health_checks_run(hr->hc, &report);
	k8s_strbuf b = K8S_STRBUF_INIT;
	if (failed || has_verbose(k8s_http_request_query(req))) {
		if (report)
			k8s_strbuf_adds(&b, report);
		k8s_strbuf_addf(&b, "%s check %s\n", hr->name, failed ? "failed" : "passed");
	} else {
		k8s_strbuf_adds(&b, "ok");
	}
	free(report);
	k8s_http_response_set_status(res, failed ? 503 : 200);
	k8s_http_response_add_header(res, "X-Content-Type-Options", "nosniff");
	if (b.failed)
		k8s_http_response_set_status(res, 500);
	else
		k8s_http_response_write(res, b.data, b.len);
	k8s_strbuf_free(&b);
}

/* GET <path>/<check>: that check alone, as controller-runtime serves it
 * ("ok" or 503 "internal server error: <check> check failed"; 404 for a
 * check that does not exist). */
static void serve_one_check(const k8s_http_request *req, k8s_http_response *res, void *ud)
{
	health_route *hr = ud;
	const char *path = k8s_http_request_path(req);
	const char *name = path + hr->prefix_len;
	int rc = *name ? run_one(hr->hc, name) : -1;
	k8s_http_response_add_header(res, "X-Content-Type-Options", "nosniff");
	k8s_strbuf b = K8S_STRBUF_INIT;
	if (rc < 0) {
		k8s_http_response_set_status(res, 404);
		k8s_strbuf_adds(&b, "404 page not found\n");
	} else if (rc > 0) {
		k8s_http_response_set_status(res, 503);
		k8s_strbuf_addf(&b, "internal server error: %s check failed\n", name);
	} else {
		k8s_http_response_set_status(res, 200);
		k8s_strbuf_adds(&b, "ok");
	}
	if (b.failed)
		k8s_http_response_set_status(res, 500);
	else
		k8s_http_response_write(res, b.data, b.len);
	k8s_strbuf_free(&b);
}

static void health_route_free(void *p)
{
	health_route *hr = p;
	free(hr->name);
	free(hr);
}

int k8s_http_server_handle_health(k8s_http_server *s, const char *path,
                                  k8s_health_checks *hc)
{
	if (!s || !path || !hc)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http health handler: server, path and checks are required");
	health_route *hr = calloc(1, sizeof(*hr));
	const char *base = strrchr(path, '/');
	char *name = strdup(base && base[1] ? base + 1 : path);
	if (!hr || !name) {
		free(hr);
		free(name);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http health handler: out of memory");
	}
	hr->hc = hc;
	hr->name = name;
	int rc = k8s__http_server_route_owned(s, "GET", path, serve_health, hr, health_route_free);
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
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http health handler: out of memory");
	}
	memcpy(prefix, path, n);
	memcpy(prefix + n, "/*", 3);
	one->hc = hc;
	one->name = one_name;
	one->prefix_len = n + 1;
	rc = k8s__http_server_route_owned(s, "GET", prefix, serve_one_check, one, health_route_free);
	free(prefix);
	return rc;
}
