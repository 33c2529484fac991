/*
 * agent-sandbox-controller - runs the Sandbox reconciler against a cluster.
 *
 * Thin by design: parse flags (flags.c), build the client, the informers
 * (Sandboxes, Pods, Services; with --extensions also SandboxTemplates,
 * SandboxWarmPools, SandboxClaims and NetworkPolicies), the event recorders
 * and the controllers (libsandbox's, and libwarmpool's three); with
 * --leader-elect the workers start only once this process holds the Lease
 * (the caches fill meanwhile, so a new leader starts warm); wait for
 * SIGTERM/SIGINT (or a lost Lease), shut down in reverse order. All behaviour lives in libsandbox and libk8s.
 * Flags keep the upstream controller's names and defaults (docs/controller.md).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildinfo.h"
#include "builddate.h"
#include "platform.h"
#include "k8s/client.h"
#include "k8s/config.h"
#include "k8s/controller.h"
#include "k8s/events.h"
#include "httpd/server.h"
#include "k8s/informer.h"
#include "k8s/leaderelection.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "k8s/object.h"
#include "sandbox/api.h"
#include "sandbox/metrics.h"
#include "sandbox/podcache.h"
#include "sandbox/reconciler.h"
#include "warmpool/api.h"
#include "warmpool/claimctl.h"
#include "warmpool/poolctl.h"
#include "warmpool/templatectl.h"

#include "flags.h"
#include "webhook.h"

/* Upstream's leader election ID, so that our controller and the Go one
 * never run side by side during an upgrade. */
#define LEASE_NAME "a3317529.agent-sandbox.x-k8s.io"
/* Event reporting controller (docs/api.md#quick-reference). */
#define REPORTING_CONTROLLER "sandbox-controller"

/* The config search order of controller-runtime: flag, $KUBECONFIG, in-cluster, ~/.kube/config. */
static int load_config(const controller_flags *f, asb_logger *log, k8s_config **cfg)
{
	if (f->kubeconfig)
		return k8s_config_load(cfg, f->kubeconfig, f->context);
	const char *env = getenv("KUBECONFIG");
	if (env && *env)
		return k8s_config_load(cfg, NULL, f->context);
	if (getenv("KUBERNETES_SERVICE_HOST")) {
		asb_log(log, ASB_LOG_INFO, "using in-cluster configuration", NULL);
		return k8s_config_incluster(cfg);
	}
	return k8s_config_load(cfg, NULL, f->context);
}

/* ---- event handlers: map objects to the Sandbox key to reconcile ---- */

static void enqueue_self(const cJSON *obj, void *ud)
{
	char *key = k8s_obj_key(obj);
	if (key)
		k8s_controller_enqueue(ud, key);
	free(key);
}

static void enqueue_self_update(const cJSON *old_obj, const cJSON *new_obj, void *ud)
{
	(void)old_obj;
	enqueue_self(new_obj, ud);
}

static void enqueue_owner(const cJSON *obj, void *ud)
{
	char *key = sbx_owner_sandbox_key(obj);
	if (key)
		k8s_controller_enqueue(ud, key);
	free(key);
}

static void enqueue_owner_update(const cJSON *old_obj, const cJSON *new_obj, void *ud)
{
	/* an ownership change must wake both the old and the new owner */
	enqueue_owner(old_obj, ud);
	enqueue_owner(new_obj, ud);
}

/* `ud` points at the reconciler, which is built after the controller (it needs the informers). */
static int reconcile(const char *key, k8s_reconcile_result *res, void *ud)
{
	return sbx_reconciler_reconcile(*(sbx_reconciler **)ud, key, res);
}

/* Informers, created in this order and stopped in reverse; the extension
 * ones (from INF_TEMPLATES on) only with --extensions. */
enum { INF_SANDBOXES, INF_PODS, INF_SERVICES, INF_CORE_COUNT,
       INF_TEMPLATES = INF_CORE_COUNT, INF_POOLS, INF_CLAIMS, INF_NETPOLS, INF_COUNT };

/* ---- metrics and probe endpoints ---- */


/* agent_sandbox_build_info (docs/api.md#metrics): 1, with the build as const labels. */
static int register_build_info(asb_metrics_registry *reg)
{
	static const char *const labels[] = {
		"git_version", AGENT_SANDBOX_VERSION, "git_commit", AGENT_SANDBOX_GIT_COMMIT,
		"build_date", AGENT_SANDBOX_BUILD_DATE, "go_version", "", "compiler", COMPILER,
		"platform", "linux/" ARCH, NULL,
	};
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_GAUGE;
	o.name = "agent_sandbox_build_info";
	o.help = "A metric with a constant '1' value labeled by the version, commit, build date, "
	         "compiler and platform agent-sandbox was built with.";
	o.const_labels = labels;
	asb_metric *m;
	int rc = asb_metrics_register(&m, reg, &o);
	return rc < 0 ? rc : asb_metric_set(m, NULL, 0, 1);
}

/* agent_sandboxes (docs/api.md#metrics), counted from the Sandbox cache at each scrape. */
static int register_sandboxes_gauge(asb_metrics_registry *reg, asb_metric **out)
{
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_GAUGE;
	o.name = SBX_METRIC_SANDBOXES;
	o.help = SBX_METRIC_SANDBOXES_HELP;
	o.label_names = sbx_sandboxes_metric_labels;
	return asb_metrics_register(out, reg, &o);
}

static void log_flag_warning(const char *flag, const char *msg, void *ud)
{
	char name[96];
	snprintf(name, sizeof(name), "--%s", flag);
	asb_log(ud, ASB_LOG_WARN, msg, "flag", name, NULL);
}

static int ping(void *ud)
{
	return 0;
}

typedef struct {
	k8s_informer *inf[INF_COUNT];
	int n;  /* INF_CORE_COUNT, or INF_COUNT with --extensions */
} informer_set;

/* Readiness: every informer has listed once (`ud` is the informer_set). */
static int informers_synced(void *ud)
{
	informer_set *set = ud;
	for (int i = 0; i < set->n; i++)
		if (!set->inf[i] || !k8s_informer_has_synced(set->inf[i]))
			return 1;
	return 0;
}

/* A server for a bind-address flag; "0" gives a disabled server. */
static int new_server(httpd_server **out, const char *name, const char *addr,
                      const char *flag, asb_logger *log)
{
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = addr;
	o.name = name;
	o.logger = log;  /* "serving HTTP" at start; per-connection events at debug */
	if (httpd_server_new(out, &o) == 0)
		return 0;
	fprintf(stderr, "agent-sandbox-controller: invalid value \"%s\" for %s: want host:port, :port or 0\n",
	        addr, flag);
	return -1;
}

/* ---- leader election ---- */

/* The controllers whose workers run only while leading. */
typedef struct {
	k8s_controller *ctrl;
	wp_template_controller *templates;  /* NULL without --extensions */
	wp_pool_controller *pools;
	wp_claim_controller *claims;
	asb_logger *log;
} leading_state;

static int start_workers(leading_state *st)
{
	if (k8s_controller_start(st->ctrl) < 0)
		return -1;
	if (st->templates && wp_template_controller_start(st->templates) < 0)
		return -1;
	if (st->pools && wp_pool_controller_start(st->pools) < 0)
		return -1;
	if (st->claims && wp_claim_controller_start(st->claims) < 0)
		return -1;
	return 0;
}

static void started_leading(void *ud)
{
	leading_state *st = ud;
	asb_log(st->log, ASB_LOG_INFO, "became leader; starting workers", NULL);
	if (start_workers(st) < 0) {
		asb_log(st->log, ASB_LOG_ERROR, "cannot start workers", "error", asb_error_last()->message, NULL);
		kill(getpid(), SIGUSR1);
	}
}

static void stopped_leading(void *ud)
{
	/* also called after a clean release on shutdown: only a loss matters,
	 * and the main thread ignores SIGUSR1 once it is shutting down */
	kill(getpid(), SIGUSR1);
}

static void new_leader(const char *id, void *ud)
{
	leading_state *st = ud;
	asb_log(st->log, ASB_LOG_INFO, "leader observed", "identity", id ? id : "", NULL);
}

/* controller-runtime's identity: hostname + "_" + a random suffix. */
static void identity(char *buf, size_t cap)
{
	char host[64] = "unknown";
	gethostname(host, sizeof(host) - 1);
	unsigned char r[8] = { 0 };
	FILE *u = fopen("/dev/urandom", "r");
	if (u) {
		if (fread(r, 1, sizeof(r), u) != sizeof(r))
			memset(r, 0, sizeof(r));
		fclose(u);
	}
	snprintf(buf, cap, "%s_%02x%02x%02x%02x%02x%02x%02x%02x", host,
	         r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
}

/*
 * --extensions: one event recorder per controller (each reports under its
 * upstream name) and the three libwarmpool controllers, which register
 * their handlers on the informers now, before these start.
 */
static int start_extensions(const controller_flags *f, k8s_client *client, k8s_informer **inf,
                            asb_metrics_registry *metrics, asb_logger *log, const char *instance,
                            k8s_event_recorder *events[3], leading_state *lead)
{
	static const char *const names[3] = {
		WP_EVENT_CONTROLLER_TEMPLATE, WP_EVENT_CONTROLLER_POOL, WP_EVENT_CONTROLLER_CLAIM,
	};
	for (int i = 0; i < 3; i++) {
		k8s_event_recorder_options eo = K8S_EVENT_RECORDER_OPTIONS_INIT;
		eo.reporting_controller = names[i];
		eo.reporting_instance = instance;
		eo.logger = log;
		if (k8s_event_recorder_new(&events[i], client, &eo) < 0)
			return -1;
	}
	wp_template_controller_options to = WP_TEMPLATE_CONTROLLER_OPTIONS_INIT;
	to.client = client;
	to.templates = inf[INF_TEMPLATES];
	to.networkpolicies = inf[INF_NETPOLS];
	to.workers = f->sandbox_template_workers > 0 ? f->sandbox_template_workers : 1;
	to.logger = log;
	to.metrics = metrics;
	to.events = events[0];
	if (wp_template_controller_new(&lead->templates, &to) < 0)
		return -1;

	wp_pool_controller_options po = WP_POOL_CONTROLLER_OPTIONS_INIT;
	po.client = client;
	po.pools = inf[INF_POOLS];
	po.sandboxes = inf[INF_SANDBOXES];
	po.templates = inf[INF_TEMPLATES];
	po.pods = inf[INF_PODS];
	po.workers = f->sandbox_warm_pool_workers;
	po.max_batch_size = f->warm_pool_max_batch_size;
	po.replenish_delay_ms = f->warm_pool_replenish_delay_ms;
	po.max_refill_rate = f->warm_pool_max_refill_rate;
	po.readiness_grace_ms = f->warm_pool_readiness_grace_period_ms;
	po.unschedulable_recheck_ms = f->warm_pool_unschedulable_recheck_ms;
	po.enable_eviction = f->enable_warm_pool_eviction;
	po.logger = log;
	po.metrics = metrics;
	po.events = events[1];
	if (wp_pool_controller_new(&lead->pools, &po) < 0)
		return -1;

	wp_claim_controller_options co = WP_CLAIM_CONTROLLER_OPTIONS_INIT;
	co.client = client;
	co.claims = inf[INF_CLAIMS];
	co.sandboxes = inf[INF_SANDBOXES];
	co.pools = inf[INF_POOLS];
	co.templates = inf[INF_TEMPLATES];
	co.workers = f->sandbox_claim_workers;
	co.disable_events = f->disable_claim_events;
	co.disable_observability_annotations = f->disable_claim_observability_annotations;
	co.logger = log;
	co.metrics = metrics;
	co.events = events[2];
	return wp_claim_controller_new(&lead->claims, &co);
}

int main(int argc, char **argv)
{
	/* Signals are taken synchronously by the main thread with sigwait():
	 * block them first thing (a SIGTERM in the first milliseconds must
	 * still mean a clean exit) and before any thread starts, so that every
	 * thread inherits the mask. A shell starting us in the background sets
	 * SIGINT to "ignore", and an ignored signal is discarded even while
	 * blocked: restore the default dispositions. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);  /* raised by ourselves when the Lease is lost */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);

	controller_flags f;
	controller_flags_defaults(&f);
	int pr = controller_flags_parse(argc, argv, &f);
	if (pr != 0)
		return pr > 0 ? 0 : 1;

	asb_logger *log = NULL;
	if (asb_logger_new(&log, stderr, f.log_format, (asb_log_level)f.log_level) < 0)
		return 1;
	char invalid[256];
	if (controller_flags_validate(&f, invalid, sizeof(invalid)) < 0) {
		fprintf(stderr, "agent-sandbox-controller: %s\n", invalid);
		asb_logger_free(log);
		return 1;
	}
	controller_flags_warnings(&f, log_flag_warning, log);
	int rc = 1;
	k8s_config *cfg = NULL;
	k8s_client *client = NULL, *lease_client = NULL;
	k8s_controller *ctrl = NULL;
	sbx_reconciler *rec = NULL;
	informer_set infs = { { NULL }, f.extensions ? INF_COUNT : INF_CORE_COUNT };
	k8s_informer **inf = infs.inf;
	k8s_event_recorder *wp_events[3] = { NULL };  /* template, pool, claim */
	asb_metrics_registry *metrics = NULL;
	asb_metric *sandboxes_gauge = NULL;
	httpd_health_checks *live = NULL, *ready = NULL;
	httpd_server *metrics_srv = NULL, *probe_srv = NULL;
	k8s_event_recorder *events = NULL;
	k8s_leader *leader = NULL;
	leading_state lead = { 0 };
	webhook *wh = NULL;

	if (new_server(&metrics_srv, "metrics", f.metrics_addr, "--metrics-bind-address", log) < 0 ||
	    new_server(&probe_srv, "health-probe", f.probe_addr, "--health-probe-bind-address", log) < 0)
		goto out;
	if (asb_metrics_registry_new(&metrics) < 0 || register_build_info(metrics) < 0 ||
	    register_sandboxes_gauge(metrics, &sandboxes_gauge) < 0 ||
	    httpd_health_checks_new(&live) < 0 || httpd_health_checks_new(&ready) < 0 ||
	    httpd_health_checks_add(live, "ping", ping, NULL) < 0 ||
	    httpd_health_checks_add(ready, "ping", ping, NULL) < 0 ||
	    httpd_health_checks_add(ready, "informers-synced", informers_synced, &infs) < 0 ||
	    httpd_server_handle_metrics(metrics_srv, "/metrics", metrics) < 0 ||
	    httpd_server_handle_health(probe_srv, "/healthz", live) < 0 ||
	    httpd_server_handle_health(probe_srv, "/readyz", ready) < 0) {
		asb_log(log, ASB_LOG_ERROR, "cannot set up metrics and probes",
		        "error", asb_error_last()->message, NULL);
		goto out;
	}

	if (k8s_global_init() < 0) {
		asb_log(log, ASB_LOG_ERROR, "cannot initialise libcurl", NULL);
		goto out;
	}
	if (load_config(&f, log, &cfg) < 0) {
		asb_log(log, ASB_LOG_ERROR, "cannot load cluster configuration",
		        "error", asb_error_last()->message, NULL);
		goto out;
	}
	k8s_client_options co = K8S_CLIENT_OPTIONS_INIT;
	co.logger = log;
	co.metrics = metrics;
	co.user_agent = "agent-sandbox-controller/" AGENT_SANDBOX_VERSION;
	co.qps = f.kube_api_qps;
	co.burst = f.kube_api_burst;
	co.api_connections = f.api_connections;
	co.separate_watch_connection = f.separate_watch_connection;
	if (k8s_client_new(&client, cfg, &co) < 0) {
		asb_log(log, ASB_LOG_ERROR, "cannot create API client",
		        "error", asb_error_last()->message, NULL);
		goto out;
	}
	/* Conversion is served from startup on every replica, leader or not:
	 * the caches themselves may need it to sync. */
	if (webhook_start(&wh, &f.webhook, f.cluster_domain, client, log) < 0) {
		asb_log(log, ASB_LOG_ERROR, "cannot start the conversion webhook",
		        "error", asb_error_last()->message, NULL);
		goto out;
	}

	k8s_controller_options ko = K8S_CONTROLLER_OPTIONS_INIT;
	ko.name = "sandbox";
	ko.workers = f.sandbox_workers;
	ko.reconcile = reconcile;
	ko.userdata = &rec;
	ko.logger = log;
	ko.metrics = metrics;
	if (k8s_controller_new(&ctrl, &ko) < 0)
		goto fail;

	const k8s_resource *resources[INF_COUNT] = {
		&sbx_resource_sandboxes, &k8s_resource_pods, &k8s_resource_services,
		&wp_resource_templates, &wp_resource_pools, &wp_resource_claims,
		&wp_resource_networkpolicies,
	};
	for (int i = 0; i < infs.n; i++) {
		k8s_informer_options io = K8S_INFORMER_OPTIONS_INIT;
		io.resource = resources[i];
		io.userdata = ctrl;
		io.logger = log;
		if (i == INF_SANDBOXES) {
			io.on_add = enqueue_self;
			io.on_update = enqueue_self_update;
			io.on_delete = enqueue_self;
		} else if (i >= INF_CORE_COUNT) {
			/* the extension controllers add their own handlers */
			io.userdata = NULL;
		} else {
			io.on_add = enqueue_owner;
			io.on_update = enqueue_owner_update;
			io.on_delete = enqueue_owner;
		}
		if (i == INF_PODS) {
			/* diet, then cached as compact structs (podcache.h) */
			io.transform = sbx_pod_transform;
			io.codec = sbx_pod_codec();
		}
		/* --cache-label-selectors (docs/upstream.md#cache-scoping): only children carrying the tracking label */
		if ((i == INF_PODS || i == INF_SERVICES) && f.cache_label_selectors)
			io.label_selector = SBX_LABEL_NAME_HASH;
		if (k8s_informer_new(&inf[i], client, &io) < 0)
			goto fail;
	}
	if (k8s_informer_add_index(inf[INF_PODS], "sandbox-name-hash", sbx_pod_index_name_hash, NULL) < 0)
		goto fail;
	if (asb_metric_add_collector(sandboxes_gauge, sbx_sandboxes_collect, inf[INF_SANDBOXES]) < 0)
		goto fail;

	sbx_reconciler_options ro = SBX_RECONCILER_OPTIONS_INIT;
	ro.client = client;
	ro.sandboxes = inf[INF_SANDBOXES];
	ro.pods = inf[INF_PODS];
	ro.services = inf[INF_SERVICES];
	ro.cluster_domain = f.cluster_domain;
	ro.cache_label_selectors = f.cache_label_selectors;
	ro.write_behind_window_ms = f.sandbox_write_behind_window_ms;
	ro.logger = log;
	char instance[128];
	identity(instance, sizeof(instance));
	k8s_event_recorder_options eo = K8S_EVENT_RECORDER_OPTIONS_INIT;
	eo.reporting_controller = REPORTING_CONTROLLER;
	eo.reporting_instance = instance;
	eo.logger = log;
	if (k8s_event_recorder_new(&events, client, &eo) < 0)
		goto fail;
	ro.events = events;
	if (sbx_reconciler_new(&rec, &ro) < 0) {
		asb_log(log, ASB_LOG_ERROR, "cannot create the Sandbox reconciler",
		        "error", asb_error_last()->message, NULL);
		goto out;
	}
	lead.ctrl = ctrl;
	lead.log = log;
	if (f.extensions && start_extensions(&f, client, inf, metrics, log, instance, wp_events, &lead) < 0) {
		asb_log(log, ASB_LOG_ERROR, "cannot create the extension controllers",
		        "error", asb_error_last()->message, NULL);
		goto out;
	}

	char workers[16];
	snprintf(workers, sizeof(workers), "%d", f.sandbox_workers);
	asb_log(log, ASB_LOG_INFO, "starting", "version", AGENT_SANDBOX_VERSION,
	        "server", k8s_config_server(cfg), "workers", workers,
	        "clusterDomain", f.cluster_domain, NULL);
	/* Probes answer while the caches fill: alive, not ready yet. */
	if (httpd_server_start(metrics_srv) < 0 || httpd_server_start(probe_srv) < 0)
		goto fail;
	for (int i = 0; i < infs.n; i++)
		if (k8s_informer_start(inf[i]) < 0)
			goto fail;
	/* Reconciling before the caches are full would create duplicates of
	 * objects we simply have not seen yet. */
	for (int i = 0; i < infs.n; i++) {
		while (k8s_informer_wait_synced(inf[i], 1000) == ASB_ETIMEOUT) {
			struct timespec zero = { 0, 0 };
			if (sigtimedwait(&sigs, NULL, &zero) > 0) {
				asb_log(log, ASB_LOG_INFO, "signal received before caches synced; exiting", NULL);
				rc = 0;
				goto out;
			}
		}
	}
	if (f.leader_elect) {
		const char *lease_ns = f.leader_election_namespace;
		if (!lease_ns && getenv("KUBERNETES_SERVICE_HOST"))
			lease_ns = k8s_config_namespace(cfg);
		if (!lease_ns) {
			asb_log(log, ASB_LOG_ERROR, "cannot find the leader election namespace: not running "
			        "in-cluster; set --leader-election-namespace (or --leader-elect=false)", NULL);
			goto out;
		}
		k8s_leader_options lo = K8S_LEADER_OPTIONS_INIT;
		lo.lease_namespace = lease_ns;
		lo.lease_name = LEASE_NAME;
		lo.identity = instance;
		lo.on_started_leading = started_leading;
		lo.on_stopped_leading = stopped_leading;
		lo.on_new_leader = new_leader;
		lo.userdata = &lead;
		lo.logger = log;
		/* its own client: one Lease write (with its retry) must end well
		 * inside the 10 s renew deadline, whatever the workers are doing */
		k8s_client_options lco = co;
		lco.timeout_ms = 4000;
		lco.max_retries = 1;
		lco.qps = -1;  /* never throttled behind a burst of reconcile writes */
		if (k8s_client_new(&lease_client, cfg, &lco) < 0 ||
		    k8s_leader_new(&leader, lease_client, &lo) < 0 || k8s_leader_start(leader) < 0)
			goto fail;
		asb_log(log, ASB_LOG_INFO, "caches synced; waiting for leadership", "lease",
		        LEASE_NAME, "namespace", lease_ns, "identity", instance, NULL);
	} else {
		asb_log(log, ASB_LOG_INFO, "caches synced; starting workers", NULL);
		if (start_workers(&lead) < 0)
			goto fail;
	}

	int sig = 0;
	sigwait(&sigs, &sig);
	if (sig == SIGUSR1) {
		/* as controller-runtime: a lost Lease ends the process, a restart re-elects */
		asb_log(log, ASB_LOG_ERROR, "leader election lost; exiting", NULL);
		rc = 1;
		goto out;
	}
	asb_log(log, ASB_LOG_INFO, "shutting down", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
	rc = 0;
	goto out;
fail:
	asb_log(log, ASB_LOG_ERROR, "cannot start", "error", asb_error_last()->message, NULL);
out:
	/* endpoints first (readiness reads the informers), then the workers
	 * (they read the caches), then the informers */
	httpd_server_shutdown(metrics_srv, 5000);
	httpd_server_shutdown(probe_srv, 5000);
	httpd_server_free(metrics_srv);
	httpd_server_free(probe_srv);
	webhook_free(wh, 5000);
	if (sandboxes_gauge && inf[INF_SANDBOXES])
		asb_metric_remove_collector(sandboxes_gauge, sbx_sandboxes_collect, inf[INF_SANDBOXES]);
	httpd_health_checks_free(live);
	httpd_health_checks_free(ready);
	if (ctrl)
		k8s_controller_stop(ctrl);
	if (lead.templates)
		wp_template_controller_stop(lead.templates);
	if (lead.pools)
		wp_pool_controller_stop(lead.pools);
	if (lead.claims)
		wp_claim_controller_stop(lead.claims);
	/* after the workers: nothing writes once the Lease is released */
	k8s_leader_free(leader);
	k8s_client_free(lease_client);
	for (int i = infs.n - 1; i >= 0; i--)
		k8s_informer_stop(inf[i]);
	sbx_reconciler_free(rec);
	if (lead.claims)
		wp_claim_controller_free(lead.claims);
	if (lead.pools)
		wp_pool_controller_free(lead.pools);
	if (lead.templates)
		wp_template_controller_free(lead.templates);
	k8s_event_recorder_free(events);  /* flushes what is queued, bounded */
	for (int i = 0; i < 3; i++)
		k8s_event_recorder_free(wp_events[i]);
	k8s_controller_free(ctrl);
	for (int i = 0; i < infs.n; i++)
		k8s_informer_free(inf[i]);
	k8s_client_free(client);
	k8s_config_free(cfg);
	asb_metrics_registry_free(metrics);
	k8s_global_cleanup();
	asb_log(log, ASB_LOG_INFO, "stopped", NULL);
	asb_logger_free(log);
	return rc;
}
