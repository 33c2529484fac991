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
#include "idlesync.h"
#include "metrics.h"
#include "proxy.h"
#include "reviewq.h"

#define PROG "sandbox-router"
#define CACHE_SYNC_TIMEOUT_MS 60000
#define TOKENREVIEW_TIMEOUT_MS 3000
/* Activity and resume patches: a stuck API call holds up the publisher's
 * tick (or a resume thread), so it is bounded well below a publish
 * interval. */
#define IDLE_WRITE_TIMEOUT_MS 5000


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

/* Everything main() builds, so that each step below fills its part and
 * shut_down() frees whatever exists. */
enum { S_HTTP, S_HTTPS, S_METRICS, S_PROBE, S_COUNT };
/* The parts' loggers, named as upstream's router names them (sandbox-router.cache...);
 * idle is ours. */
enum { L_CACHE, L_PROXY, L_SERVER, L_IDLE, L_COUNT };
typedef struct {
	rt_flags f;
	asb_logger *log;            /* "sandbox-router" */
	asb_logger *part[L_COUNT];  /* "sandbox-router.<part>" */
	k8s_config *cfg;
	k8s_client *client, *auth_client, *write_client;
	asb_metrics_registry *reg;
	rt_metrics *metrics;
	rt_authz *authz;
	rt_reviewq *reviews;
	rt_cache *cache;
	rt_idlesync *idle;
	rt_proxy *proxy;
	unsigned char *secret;
	size_t secret_len;
	char **audiences;
	bool global;
	unsigned loops;
	httpd_server *srv[S_COUNT];
} router_app;

/* The logger, the feature warnings and the metrics registry. */
static int setup_logging(router_app *a)
{
	const rt_flags *f = &a->f;
	static const char *const parts[L_COUNT] = { "cache", "proxy", "server", "idle" };
	asb_logger *root;
	if (asb_log_flags_logger(&root, &f->log, stderr) < 0)
		return -1;
	int rc = asb_logger_named(&a->log, root, "sandbox-router");
	asb_logger_free(root);  /* the named ones keep the stream */
	for (int i = 0; i < L_COUNT && rc == 0; i++)
		rc = asb_logger_named(&a->part[i], a->log, parts[i]);
	if (rc < 0)
		return -1;
	if (f->enable_tracing || f->enable_otel_metrics)
		asb_log(a->log, ASB_LOG_WARN, "OpenTelemetry is not supported by this build: tracing and "
		        "OTLP metrics stay off", NULL);
	if (f->mtls_mode == RT_MTLS_OPTIONAL)
		asb_log(a->log, ASB_LOG_WARN, "--mtls-mode=optional: this build's TLS server asks every "
		        "client for a certificate (as required)", NULL);
	if (asb_metrics_registry_new(&a->reg) < 0 || asb_metrics_register_process(a->reg) < 0)
		return -1;
	rt_build_info bi = { AGENT_SANDBOX_VERSION, AGENT_SANDBOX_GIT_COMMIT, AGENT_SANDBOX_BUILD_DATE,
	                     COMPILER, "linux/" ARCH };
	return rt_metrics_new(&a->metrics, a->reg, &bi);
}

/* The scoped-token secret, and a cluster client only when the cache or
 * TokenReviews need one (docs/upstream.md#router-configuration). */
static int setup_clients(router_app *a)
{
	const rt_flags *f = &a->f;
	char err[512];
	if (f->authz_mode == RT_AUTHZ_SCOPED_TOKEN &&
	    rt_scoped_secret_load(f->scoped_token_secret_file, &a->secret, &a->secret_len, err,
	                          sizeof(err)) < 0) {
		fprintf(stderr, PROG ": %s\n", err);
		return -1;
	}
	if (!f->cache_enabled && f->authz_mode != RT_AUTHZ_TOKENREVIEW)
		return 0;
	if (k8s_global_init() < 0)
		return -1;
	a->global = true;
	if (load_config(f, a->log, &a->cfg) < 0) {
		fprintf(stderr, PROG ": cannot load cluster configuration: %s\n",
		        asb_error_last()->message);
		return -1;
	}
	if (new_client(&a->client, a->cfg, 30000, 4, a->log, a->reg) < 0 ||
	    (f->authz_mode == RT_AUTHZ_TOKENREVIEW &&
	     new_client(&a->auth_client, a->cfg, TOKENREVIEW_TIMEOUT_MS, 1, a->log, NULL) < 0) ||
	    (f->cache_enabled &&
	     new_client(&a->write_client, a->cfg, IDLE_WRITE_TIMEOUT_MS, 1, a->log, NULL) < 0)) {
		fprintf(stderr, PROG ": cannot build the Kubernetes client: %s\n",
		        asb_error_last()->message);
		return -1;
	}
	return 0;
}

/* Authorization, the TokenReview queue and the Sandbox/Pod caches. */
static int setup_authz_and_cache(router_app *a)
{
	const rt_flags *f = &a->f;
	a->audiences = rt_flags_audiences(&a->f);
	rt_authz_options ao = {
		.mode = f->authz_mode, .secret = a->secret, .secret_len = a->secret_len,
		.client = a->auth_client, .ttl_ms = f->tokenreview_ttl_ms,
		.cache_size = f->tokenreview_cache_size, .require_token = f->tokenreview_require_token,
		.audiences = a->audiences, .access_review = f->access_review,
	};
	if (rt_authz_new(&a->authz, &ao) < 0)
		return -1;
	if (f->authz_mode == RT_AUTHZ_TOKENREVIEW) {
		rt_reviewq_options qo = { .authz = a->authz, .workers = f->tokenreview_workers,
		                          .max_pending = f->tokenreview_max_pending,
		                          .max_per_client = f->tokenreview_max_pending_per_client };
		if (rt_reviewq_new(&a->reviews, &qo) < 0) {
			fprintf(stderr, PROG ": %s\n", asb_error_last()->message);
			return -1;
		}
	}
	if (!f->cache_enabled)
		return 0;
	if (rt_cache_new(&a->cache, a->client, f->cache_namespace, a->part[L_CACHE]) < 0 ||
	    rt_cache_start(a->cache) < 0 ||
	    rt_cache_wait_synced(a->cache, CACHE_SYNC_TIMEOUT_MS) < 0) {
		fprintf(stderr, PROG ": the Sandbox and Pod caches did not sync within %d s: check "
		        "that the router's ServiceAccount may get, list and watch sandboxes and pods "
		        "(%s)\n", CACHE_SYNC_TIMEOUT_MS / 1000, asb_error_last()->message);
		return -1;
	}
	asb_log(a->log, ASB_LOG_INFO, "caches synced", "namespace",
	        *f->cache_namespace ? f->cache_namespace : "(all)", NULL);
	/* idle Sandboxes: activity published, suspended ones resumed on request */
	rt_idlesync_options io = { .client = a->write_client, .cache = a->cache,
	                           .metrics = a->metrics, .log = a->part[L_IDLE] };
	if (rt_idlesync_new(&a->idle, &io) < 0) {
		fprintf(stderr, PROG ": %s\n", asb_error_last()->message);
		return -1;
	}
	return 0;
}

/* The proxy and the four listeners, bound before anything is served ready
 * (docs/upstream.md#router-probes-and-shutdown). */
static int setup_servers(router_app *a)
{
	rt_flags *f = &a->f;
	httpd_server **srv = a->srv;
	asb_logger *log = a->part[L_SERVER];
	rt_proxy_options po = { .flags = f, .authz = a->authz, .reviews = a->reviews,
	                        .cache = a->cache, .idle = a->idle, .metrics = a->metrics,
	                        .log = a->part[L_PROXY], .access_log = f->access_log ? stderr : NULL };
	if (rt_proxy_new(&a->proxy, &po) < 0)
		return -1;
	unsigned loops = a->loops = cpu_loops(f);
	if ((*f->http_addr && new_server(&srv[S_HTTP], "proxy", f->http_addr, f, loops, false, log) < 0) ||
	    (*f->https_addr && new_server(&srv[S_HTTPS], "proxy-tls", f->https_addr, f, loops, true, log) < 0) ||
	    (*f->metrics_addr && new_server(&srv[S_METRICS], "metrics", f->metrics_addr, f, 1, false, log) < 0) ||
	    (*f->probe_addr && new_server(&srv[S_PROBE], "health-probe", f->probe_addr, f, 1, false, log) < 0))
		return -1;
	if ((srv[S_HTTP] && rt_proxy_attach(a->proxy, srv[S_HTTP]) < 0) ||
	    (srv[S_HTTPS] && rt_proxy_attach(a->proxy, srv[S_HTTPS]) < 0) ||
	    (srv[S_METRICS] && httpd_server_handle_metrics(srv[S_METRICS], "/metrics", a->reg) < 0) ||
	    (srv[S_PROBE] && (httpd_server_route(srv[S_PROBE], NULL, "/healthz", probe_healthz, NULL) < 0 ||
	                      httpd_server_route(srv[S_PROBE], NULL, "/readyz", probe_readyz, NULL) < 0)))
		return -1;
	for (int i = 0; i < S_COUNT; i++)
		if (srv[i] && httpd_server_start(srv[i]) < 0) {
			fprintf(stderr, PROG ": %s\n", asb_error_last()->message);
			return -1;
		}
	return 0;
}

/* Drains and frees everything that exists, in the order that keeps each
 * part's users alive until it goes. */
static void shut_down(router_app *a)
{
	atomic_store(&ready, false);
	if (a->proxy)
		rt_proxy_drain(a->proxy);
	/* the proxy listeners drain first while /readyz answers 503
	 * "draining" (so endpoints drop this replica), then the rest go */
	int64_t t0 = k8s_monotonic_ms();
	shutdown_all(a->srv, S_METRICS, a->f.shutdown_timeout_ms);
	long left = a->f.shutdown_timeout_ms - (long)(k8s_monotonic_ms() - t0);
	shutdown_all(a->srv + S_METRICS, S_COUNT - S_METRICS, left > 1000 ? left : 1000);
	/* the loops have ended: reviews still running come back to nothing, and
	 * must be done before the servers they would post to are freed */
	rt_reviewq_free(a->reviews);
	rt_idlesync_free(a->idle);   /* no loop uses its table or queue any more */
	for (int i = 0; i < S_COUNT; i++)
		httpd_server_free(a->srv[i]);
	rt_proxy_free(a->proxy);
	rt_cache_free(a->cache);
	rt_authz_free(a->authz);
	rt_strv_free(a->audiences);
	free(a->secret);
	k8s_client_free(a->auth_client);
	k8s_client_free(a->write_client);
	k8s_client_free(a->client);
	k8s_config_free(a->cfg);
	if (a->global)
		k8s_global_cleanup();
	rt_metrics_free(a->metrics);
	asb_metrics_registry_free(a->reg);
	for (int i = 0; i < L_COUNT; i++)
		asb_logger_free(a->part[i]);
	asb_logger_free(a->log);
	rt_flags_free(&a->f);
}

int main(int argc, char **argv)
{
	/* signals are taken by sigwait() on this thread (asb/signals.h) */
	sigset_t sigs;
	asb_signals_block_stop(&sigs, 0);
	signal(SIGPIPE, SIG_IGN);

	router_app app = { 0 };
	rt_flags *f = &app.f;
	char err[512];
	if (rt_flags_defaults(f) < 0)
		return 1;
	int lr = rt_flags_load(f, argc, argv, stdout, err, sizeof(err));
	if (lr != RT_FLAGS_RUN || rt_flags_validate(f, err, sizeof(err)) < 0) {
		if (lr != RT_FLAGS_EXIT)
			fprintf(stderr, PROG ": %s\n", err);
		rt_flags_free(f);
		return lr == RT_FLAGS_EXIT ? 0 : 2;
	}

	int rc = 1;
	if (setup_logging(&app) < 0 || setup_clients(&app) < 0 || setup_authz_and_cache(&app) < 0 ||
	    setup_servers(&app) < 0)
		goto out;
	atomic_store(&ready, true);
	asb_log_typed(app.log, ASB_LOG_INFO, "sandbox-router ready", ASB_LOG_STR("http", f->http_addr),
	              ASB_LOG_STR("https", f->https_addr), ASB_LOG_STR("metrics", f->metrics_addr),
	              ASB_LOG_STR("probes", f->probe_addr), ASB_LOG_INT("loops", app.loops),
	              ASB_LOG_STR("authz", rt_authz_mode_name(f->authz_mode)),
	              ASB_LOG_BOOL("cache", f->cache_enabled));

	int sig = 0;
	sigwait(&sigs, &sig);
	asb_log(app.log, ASB_LOG_INFO, "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM",
	        NULL);
	rc = 0;
out:
	shut_down(&app);
	return rc;
}
