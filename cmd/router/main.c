/*
 * sandbox-router - reverse proxy to sandbox pods (docs/router.md).
 *
 * Thin by design: read the configuration (flags.c), build the cluster
 * client when the cache or TokenReviews need one, the authorizer, the
 * cache (synced before serving), the metrics, then the listeners: proxy
 * (plain and/or TLS, proxy.c), metrics and probes. Every listener is bound
 * before /readyz turns ready; SIGTERM/SIGINT turn it to "draining" and
 * shut the listeners down together within --shutdown-timeout, requests in
 * flight finishing. Exit codes as the Go router's (docs/upstream.md#router-probes-and-shutdown): 2 for flag and
 * config-file errors, 1 for runtime errors, 0 after a clean shutdown.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "asb/signals.h"

#include "buildinfo.h"
#include "builddate.h"
#include "platform.h"
#include "k8s/client.h"
#include "k8s/config.h"
#include "httpd/server.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "k8s/object.h"
#include "authz.h"
#include "cache.h"
#include "flags.h"
#include "metrics.h"
#include "proxy.h"
#include "reviewq.h"

#define PROG "sandbox-router"
#define CACHE_SYNC_TIMEOUT_MS 60000
#define TOKENREVIEW_TIMEOUT_MS 3000


static atomic_bool ready;

/* ---- probes (docs/upstream.md#router-probes-and-shutdown): any method ---- */

static void probe_healthz(const httpd_request *req, httpd_response *res, void *ud)
{
	static const char ok[] = "{\"status\":\"ok\"}";
	httpd_response_add_header(res, "Content-Type", "application/json");
	httpd_response_write(res, ok, sizeof(ok) - 1);
}

static void probe_readyz(const httpd_request *req, httpd_response *res, void *ud)
{
	bool ok = atomic_load(&ready);
	httpd_response_set_status(res, ok ? 200 : 503);
	httpd_response_write(res, ok ? "ok" : "draining", ok ? 2 : 8);
}

/* ---- cluster access ---- */

/* --kubeconfig (or $KUBECONFIG); else in-cluster, falling back to the
 * default kubeconfig only when not in a cluster (docs/upstream.md#pod-ip-cache). */
static int load_config(const rt_flags *f, asb_logger *log, k8s_config **cfg)
{
	if (*f->kubeconfig)
		return k8s_config_load(cfg, f->kubeconfig, NULL);
	if (getenv("KUBERNETES_SERVICE_HOST")) {
		asb_log(log, ASB_LOG_INFO, "using in-cluster configuration", NULL);
		return k8s_config_incluster(cfg);
	}
	return k8s_config_load(cfg, NULL, NULL);
}

static int new_client(k8s_client **out, const k8s_config *cfg, long timeout_ms, int retries,
                      asb_logger *log, asb_metrics_registry *reg)
{
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.timeout_ms = timeout_ms;
	o.user_agent = PROG "/" AGENT_SANDBOX_VERSION;
	o.logger = log;
	o.max_retries = retries;
	o.metrics = reg;
	return k8s_client_new(out, cfg, &o);
}

/* ---- listeners ---- */

static int new_server(httpd_server **out, const char *name, const char *addr,
                      const rt_flags *f, unsigned loops, bool tls, asb_logger *log)
{
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = addr;
	o.name = name;
	o.logger = log;
	o.max_header_bytes = (size_t)f->max_header_bytes;
	o.idle_timeout_ms = f->idle_timeout_ms;
	o.read_timeout_ms = f->read_header_timeout_ms;
	o.loops = loops;
	if (!strncmp(name, "proxy", 5))
		o.max_connections = (unsigned)f->max_connections;
	if (tls) {
		o.tls_cert_file = f->tls_cert_file;
		o.tls_key_file = f->tls_key_file;
		if (f->mtls_mode != RT_MTLS_OFF)
			o.tls_client_ca_file = f->tls_client_ca_file;
	}
	int rc = httpd_server_new(out, &o);
	if (rc < 0)
		fprintf(stderr, PROG ": %s listener %s: %s\n", name, addr, asb_error_last()->message);
	return rc;
}

typedef struct {
	httpd_server *srv;
	long timeout_ms;
	pthread_t th;
	bool started;
} shutdown_job;

static void *shutdown_one(void *ud)
{
	shutdown_job *j = ud;
	httpd_server_shutdown(j->srv, j->timeout_ms);
	return NULL;
}

/* Shuts every server down at once, sharing one deadline (docs/upstream.md#router-probes-and-shutdown). */
static void shutdown_all(httpd_server **srv, int n, long timeout_ms)
{
	shutdown_job jobs[8] = { 0 };
	for (int i = 0; i < n; i++) {
		if (!srv[i])
			continue;
		jobs[i] = (shutdown_job){ srv[i], timeout_ms, 0, false };
		jobs[i].started = pthread_create(&jobs[i].th, NULL, shutdown_one, &jobs[i]) == 0;
		if (!jobs[i].started)
			httpd_server_shutdown(srv[i], timeout_ms);
	}
	for (int i = 0; i < n; i++)
		if (jobs[i].started)
			pthread_join(jobs[i].th, NULL);
}

static unsigned cpu_loops(const rt_flags *f)
{
	if (f->loops > 0)
		return (unsigned)f->loops;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

int main(int argc, char **argv)
{
	/* signals are taken by sigwait() on this thread (asb/signals.h) */
	sigset_t sigs;
	asb_signals_block_stop(&sigs, 0);
	signal(SIGPIPE, SIG_IGN);

	rt_flags f;
	char err[512];
	if (rt_flags_defaults(&f) < 0)
		return 1;
	int lr = rt_flags_load(&f, argc, argv, stdout, err, sizeof(err));
	if (lr != RT_FLAGS_RUN || rt_flags_validate(&f, err, sizeof(err)) < 0) {
		if (lr != RT_FLAGS_EXIT)
			fprintf(stderr, PROG ": %s\n", err);
		rt_flags_free(&f);
		return lr == RT_FLAGS_EXIT ? 0 : 2;
	}

	int rc = 1;
	asb_logger *log = NULL;
	k8s_config *cfg = NULL;
	k8s_client *client = NULL, *auth_client = NULL;
	asb_metrics_registry *reg = NULL;
	rt_metrics *metrics = NULL;
	rt_authz *authz = NULL;
	rt_reviewq *reviews = NULL;
	rt_cache *cache = NULL;
	rt_proxy *proxy = NULL;
	unsigned char *secret = NULL;
	size_t secret_len = 0;
	char **audiences = NULL;
	bool global = false;
	enum { S_HTTP, S_HTTPS, S_METRICS, S_PROBE, S_COUNT };
	httpd_server *srv[S_COUNT] = { NULL };

	if (asb_logger_new(&log, stderr, f.log_format, (asb_log_level)f.log_level) < 0)
		goto out;
	if (f.enable_tracing || f.enable_otel_metrics)
		asb_log(log, ASB_LOG_WARN, "OpenTelemetry is not supported by this build: tracing and "
		        "OTLP metrics stay off", NULL);
	if (f.mtls_mode == RT_MTLS_OPTIONAL)
		asb_log(log, ASB_LOG_WARN, "--mtls-mode=optional: this build's TLS server asks every "
		        "client for a certificate (as required)", NULL);

	if (asb_metrics_registry_new(&reg) < 0)
		goto out;
	rt_build_info bi = { AGENT_SANDBOX_VERSION, AGENT_SANDBOX_GIT_COMMIT, AGENT_SANDBOX_BUILD_DATE,
	                     COMPILER, "linux/" ARCH };
	if (rt_metrics_new(&metrics, reg, &bi) < 0)
		goto out;

	if (f.authz_mode == RT_AUTHZ_SCOPED_TOKEN &&
	    rt_scoped_secret_load(f.scoped_token_secret_file, &secret, &secret_len, err, sizeof(err)) < 0) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	/* a cluster client only when the cache or TokenReviews need one (docs/upstream.md#router-configuration) */
	if (f.cache_enabled || f.authz_mode == RT_AUTHZ_TOKENREVIEW) {
		if (k8s_global_init() < 0)
			goto out;
		global = true;
		if (load_config(&f, log, &cfg) < 0) {
			fprintf(stderr, PROG ": cannot load cluster configuration: %s\n",
			        asb_error_last()->message);
			goto out;
		}
		if (new_client(&client, cfg, 30000, 4, log, reg) < 0 ||
		    (f.authz_mode == RT_AUTHZ_TOKENREVIEW &&
		     new_client(&auth_client, cfg, TOKENREVIEW_TIMEOUT_MS, 1, log, NULL) < 0)) {
			fprintf(stderr, PROG ": cannot build the Kubernetes client: %s\n",
			        asb_error_last()->message);
			goto out;
		}
	}
	audiences = rt_flags_audiences(&f);
	rt_authz_options ao = {
		.mode = f.authz_mode, .secret = secret, .secret_len = secret_len, .client = auth_client,
		.ttl_ms = f.tokenreview_ttl_ms, .cache_size = f.tokenreview_cache_size,
		.require_token = f.tokenreview_require_token, .audiences = audiences,
		.access_review = f.access_review,
	};
	if (rt_authz_new(&authz, &ao) < 0)
		goto out;
	if (f.authz_mode == RT_AUTHZ_TOKENREVIEW) {
		rt_reviewq_options qo = { .authz = authz, .workers = f.tokenreview_workers,
		                          .max_pending = f.tokenreview_max_pending,
		                          .max_per_client = f.tokenreview_max_pending_per_client };
		if (rt_reviewq_new(&reviews, &qo) < 0) {
			fprintf(stderr, PROG ": %s\n", asb_error_last()->message);
			goto out;
		}
	}

	if (f.cache_enabled) {
		if (rt_cache_new(&cache, client, f.cache_namespace, log) < 0 || rt_cache_start(cache) < 0 ||
		    rt_cache_wait_synced(cache, CACHE_SYNC_TIMEOUT_MS) < 0) {
			fprintf(stderr, PROG ": the Sandbox and Pod caches did not sync within %d s: check "
			        "that the router's ServiceAccount may get, list and watch sandboxes and pods "
			        "(%s)\n", CACHE_SYNC_TIMEOUT_MS / 1000, asb_error_last()->message);
			goto out;
		}
		asb_log(log, ASB_LOG_INFO, "caches synced", "namespace",
		        *f.cache_namespace ? f.cache_namespace : "(all)", NULL);
	}

	rt_proxy_options po = { .flags = &f, .authz = authz, .reviews = reviews, .cache = cache,
	                        .metrics = metrics,
	                        .log = log, .access_log = f.access_log ? stderr : NULL };
	if (rt_proxy_new(&proxy, &po) < 0)
		goto out;
	unsigned loops = cpu_loops(&f);
	if ((*f.http_addr && new_server(&srv[S_HTTP], "proxy", f.http_addr, &f, loops, false, log) < 0) ||
	    (*f.https_addr && new_server(&srv[S_HTTPS], "proxy-tls", f.https_addr, &f, loops, true, log) < 0) ||
	    (*f.metrics_addr && new_server(&srv[S_METRICS], "metrics", f.metrics_addr, &f, 1, false, log) < 0) ||
	    (*f.probe_addr && new_server(&srv[S_PROBE], "health-probe", f.probe_addr, &f, 1, false, log) < 0))
		goto out;
	if ((srv[S_HTTP] && rt_proxy_attach(proxy, srv[S_HTTP]) < 0) ||
	    (srv[S_HTTPS] && rt_proxy_attach(proxy, srv[S_HTTPS]) < 0) ||
	    (srv[S_METRICS] && httpd_server_handle_metrics(srv[S_METRICS], "/metrics", reg) < 0) ||
	    (srv[S_PROBE] && (httpd_server_route(srv[S_PROBE], NULL, "/healthz", probe_healthz, NULL) < 0 ||
	                      httpd_server_route(srv[S_PROBE], NULL, "/readyz", probe_readyz, NULL) < 0)))
		goto out;
	/* bind everything before serving anything ready (docs/upstream.md#router-probes-and-shutdown) */
	for (int i = 0; i < S_COUNT; i++)
		if (srv[i] && httpd_server_start(srv[i]) < 0) {
			fprintf(stderr, PROG ": %s\n", asb_error_last()->message);
			goto out;
		}
	atomic_store(&ready, true);
	char lp[16];
	snprintf(lp, sizeof(lp), "%u", loops);
	asb_log(log, ASB_LOG_INFO, "sandbox-router ready", "http", f.http_addr, "https", f.https_addr,
	        "metrics", f.metrics_addr, "probes", f.probe_addr, "loops", lp, "authz",
	        rt_authz_mode_name(f.authz_mode), "cache", f.cache_enabled ? "true" : "false", NULL);

	int sig = 0;
	sigwait(&sigs, &sig);
	asb_log(log, ASB_LOG_INFO, "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
	rc = 0;
out:
	atomic_store(&ready, false);
	if (proxy)
		rt_proxy_drain(proxy);
	/* the proxy listeners drain first while /readyz answers 503
	 * "draining" (so endpoints drop this replica), then the rest go */
	int64_t t0 = k8s_monotonic_ms();
	shutdown_all(srv, S_METRICS, f.shutdown_timeout_ms);
	long left = f.shutdown_timeout_ms - (long)(k8s_monotonic_ms() - t0);
	shutdown_all(srv + S_METRICS, S_COUNT - S_METRICS, left > 1000 ? left : 1000);
	/* the loops have ended: reviews still running come back to nothing, and
	 * must be done before the servers they would post to are freed */
	rt_reviewq_free(reviews);
	for (int i = 0; i < S_COUNT; i++)
		httpd_server_free(srv[i]);
	rt_proxy_free(proxy);
	rt_cache_free(cache);
	rt_authz_free(authz);
	rt_strv_free(audiences);
	free(secret);
	k8s_client_free(auth_client);
	k8s_client_free(client);
	k8s_config_free(cfg);
	if (global)
		k8s_global_cleanup();
	rt_metrics_free(metrics);
	asb_metrics_registry_free(reg);
	asb_logger_free(log);
	rt_flags_free(&f);
	return rc;
}
