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
#include "asb/signals.h"

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
#include "sandbox/cache.h"
#include "sandbox/metrics.h"
#include "sandbox/podcache.h"
#include "sandbox/reconciler.h"
#include "warmpool/api.h"
#include "warmpool/claimctl.h"
#include "warmpool/poolctl.h"
#include "warmpool/templatectl.h"

#include "flags.h"
#include "heap.h"
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
	/* upstream's help text: a scrape compares equal */
	o.help = "Agent sandbox controller build metadata exposed as labels with a constant value of 1.";
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
	k8s_packer *packer;  /* the codec of the packed caches (sandbox/cache.h) */
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

/* wp_pool_controller_options.handouts_pending over the claim controller
 * (made after the pool controller, so read at call time). */
static size_t claim_handouts_pending(void *ud)
{
	return wp_claim_controller_pending(((leading_state *)ud)->claims);
}

/*
 * --extensions: one event recorder per controller (each reports under its
 * upstream name) and the three libwarmpool controllers, which register
 * their handlers on the informers now, before these start.
 */
static int start_extensions(const controller_flags *f, k8s_client *client, k8s_informer **inf,
                            const k8s_packer *packer,
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
	po.packer = packer;
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
	po.handouts_pending = claim_handouts_pending;
	po.handouts_ud = lead;
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
	co.networkpolicies = inf[INF_NETPOLS];
	return wp_claim_controller_new(&lead->claims, &co);
}

/* Everything main() builds, so that each step below can fill its part and
 * shut_down() can free whatever exists. */
typedef struct {
	const controller_flags *f;
	asb_logger *log;     /* unnamed, for the libraries, as controller-runtime's own lines */
	asb_logger *setup;   /* "setup": main's own lines and the webhook's, as upstream's */
	k8s_config *cfg;
	k8s_client_options client_opts;   /* also the base of the Lease client's */
	k8s_client *client, *lease_client;
	k8s_controller *ctrl;
	sbx_reconciler *rec;
	informer_set infs;
	k8s_event_recorder *events;
	k8s_event_recorder *wp_events[3];  /* template, pool, claim */
	asb_metrics_registry *metrics;
	asb_metric *sandboxes_gauge;
	httpd_health_checks *live, *ready;
	httpd_server *metrics_srv, *probe_srv;
	k8s_leader *leader;
	leading_state lead;
	webhook *wh;
	char instance[128];                /* our leader election and Event identity */
} controller_app;

/* Logs `what` with the last error; returns -1. */
static int cannot(controller_app *a, const char *what)
{
	asb_log(a->setup, ASB_LOG_ERROR, what, "error", asb_error_last()->message, NULL);
	return -1;
}

/* /metrics and the probes, not started yet. Returns 0 or -1 (said). */
static int setup_endpoints(controller_app *a)
{
	if (new_server(&a->metrics_srv, "metrics", a->f->metrics_addr, "--metrics-bind-address",
	               a->log) < 0 ||
	    new_server(&a->probe_srv, "health-probe", a->f->probe_addr,
	               "--health-probe-bind-address", a->log) < 0)
		return -1;
	if (asb_metrics_registry_new(&a->metrics) < 0 || register_build_info(a->metrics) < 0 ||
	    asb_metrics_register_process(a->metrics) < 0 ||
	    register_sandboxes_gauge(a->metrics, &a->sandboxes_gauge) < 0 ||
	    httpd_health_checks_new(&a->live) < 0 || httpd_health_checks_new(&a->ready) < 0 ||
	    httpd_health_checks_add(a->live, "ping", ping, NULL) < 0 ||
	    httpd_health_checks_add(a->ready, "ping", ping, NULL) < 0 ||
	    httpd_health_checks_add(a->ready, "informers-synced", informers_synced, &a->infs) < 0 ||
	    httpd_server_handle_metrics(a->metrics_srv, "/metrics", a->metrics) < 0 ||
	    httpd_server_handle_health(a->probe_srv, "/healthz", a->live) < 0 ||
	    httpd_server_handle_health(a->probe_srv, "/readyz", a->ready) < 0)
		return cannot(a, "cannot set up metrics and probes");
	return 0;
}

/* The cluster configuration, the API client and the conversion webhook.
 * Returns 0 or -1 (said). */
static int setup_client(controller_app *a)
{
	const controller_flags *f = a->f;
	if (k8s_global_init() < 0) {
		asb_log(a->setup, ASB_LOG_ERROR, "cannot initialise libcurl", NULL);
		return -1;
	}
	if (load_config(f, a->setup, &a->cfg) < 0)
		return cannot(a, "cannot load cluster configuration");
	k8s_client_options co = K8S_CLIENT_OPTIONS_INIT;
	co.logger = a->log;
	co.metrics = a->metrics;
	co.user_agent = "agent-sandbox-controller/" AGENT_SANDBOX_VERSION;
	co.qps = f->kube_api_qps;
	co.burst = f->kube_api_burst;
	co.api_connections = f->api_connections;
	co.separate_watch_connection = f->separate_watch_connection;
	a->client_opts = co;
	if (k8s_client_new(&a->client, a->cfg, &co) < 0)
		return cannot(a, "cannot create API client");
	/* Conversion is served from startup on every replica, leader or not:
	 * the caches themselves may need it to sync. */
	if (webhook_start(&a->wh, &f->webhook, f->cluster_domain, a->client, a->setup, a->metrics) < 0)
		return cannot(a, "cannot start the conversion webhook");
	return 0;
}

/* The Sandbox controller's informers, created in INF_ order. */
static int setup_informers(controller_app *a)
{
	static const k8s_resource *const resources[INF_COUNT] = {
		&sbx_resource_sandboxes, &k8s_resource_pods, &k8s_resource_services,
		&wp_resource_templates, &wp_resource_pools, &wp_resource_claims,
		&wp_resource_networkpolicies,
	};
	k8s_informer **inf = a->infs.inf;
	if (sbx_packer_new(&a->infs.packer) < 0)
		return -1;
	for (int i = 0; i < a->infs.n; i++) {
		k8s_informer_options io = K8S_INFORMER_OPTIONS_INIT;
		io.resource = resources[i];
		io.userdata = a->ctrl;
		io.logger = a->log;
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
		/* Pods: the diet (podcache.h); the others: no managedFields,
		 * which nothing reads from a cache. All are cached packed
		 * (sandbox/cache.h) but pools and claims, which their
		 * controllers read in place as cJSON (k8s_informer_read_index). */
		io.transform = i == INF_PODS ? sbx_pod_transform : k8s_transform_strip_managed_fields;
		if (i != INF_POOLS && i != INF_CLAIMS)
			io.codec = k8s_packer_codec(a->infs.packer);
		/* --cache-label-selectors (docs/upstream.md#cache-scoping): only children carrying the tracking label */
		if ((i == INF_PODS || i == INF_SERVICES) && a->f->cache_label_selectors)
			io.label_selector = SBX_LABEL_NAME_HASH;
		if (k8s_informer_new(&inf[i], a->client, &io) < 0)
			return -1;
	}
	if (k8s_informer_add_index(inf[INF_PODS], "sandbox-name-hash", sbx_pod_index_name_hash, NULL) < 0)
		return -1;
	return asb_metric_add_collector(a->sandboxes_gauge, sbx_sandboxes_collect, inf[INF_SANDBOXES]);
}

/* The work queue, the informers, the Sandbox reconciler and (--extensions)
 * the extension controllers; nothing runs yet. Returns 0 or -1 (said). */
static int setup_controllers(controller_app *a)
{
	const controller_flags *f = a->f;
	k8s_controller_options ko = K8S_CONTROLLER_OPTIONS_INIT;
	ko.name = "sandbox";
	ko.workers = f->sandbox_workers;
	ko.reconcile = reconcile;
	ko.userdata = &a->rec;
	ko.logger = a->log;
	ko.metrics = a->metrics;
	if (k8s_controller_new(&a->ctrl, &ko) < 0 || setup_informers(a) < 0)
		return cannot(a, "cannot start");

	k8s_informer **inf = a->infs.inf;
	sbx_reconciler_options ro = SBX_RECONCILER_OPTIONS_INIT;
	ro.client = a->client;
	ro.sandboxes = inf[INF_SANDBOXES];
	ro.pods = inf[INF_PODS];
	ro.services = inf[INF_SERVICES];
	ro.cluster_domain = f->cluster_domain;
	ro.cache_label_selectors = f->cache_label_selectors;
	ro.write_behind_window_ms = f->sandbox_write_behind_window_ms;
	ro.status_coalesce_window_ms = f->sandbox_status_coalesce_window_ms;
	ro.logger = a->log;
	if (f->extensions) {
		/* the claim controller is made below; read at call time */
		ro.handouts_pending = claim_handouts_pending;
		ro.handouts_ud = &a->lead;
	}
	identity(a->instance, sizeof(a->instance));
	k8s_event_recorder_options eo = K8S_EVENT_RECORDER_OPTIONS_INIT;
	eo.reporting_controller = REPORTING_CONTROLLER;
	eo.reporting_instance = a->instance;
	eo.logger = a->log;
	if (k8s_event_recorder_new(&a->events, a->client, &eo) < 0)
		return cannot(a, "cannot start");
	ro.events = a->events;
	if (sbx_reconciler_new(&a->rec, &ro) < 0)
		return cannot(a, "cannot create the Sandbox reconciler");
	a->lead.ctrl = a->ctrl;
	a->lead.log = a->setup;
	if (f->extensions && start_extensions(f, a->client, inf, a->infs.packer, a->metrics, a->log,
	                                      a->instance,
	                                      a->wp_events, &a->lead) < 0)
		return cannot(a, "cannot create the extension controllers");
	return 0;
}

/* Starts the endpoints and the informers. Probes answer while the caches
 * fill: alive, not ready yet. Returns 0 or -1 (said). */
static int start_serving(controller_app *a)
{
	asb_log_typed(a->setup, ASB_LOG_INFO, "starting", ASB_LOG_STR("version", AGENT_SANDBOX_VERSION),
	              ASB_LOG_STR("server", k8s_config_server(a->cfg)),
	              ASB_LOG_INT("workers", a->f->sandbox_workers),
	              ASB_LOG_STR("clusterDomain", a->f->cluster_domain));
	if (httpd_server_start(a->metrics_srv) < 0 || httpd_server_start(a->probe_srv) < 0)
		return cannot(a, "cannot start");
	for (int i = 0; i < a->infs.n; i++)
		if (k8s_informer_start(a->infs.inf[i]) < 0)
			return cannot(a, "cannot start");
	return 0;
}

/* Waits for every informer's first list. Reconciling before the caches are
 * full would create duplicates of objects we simply have not seen yet.
 * Returns 0, or 1 when a signal came first. */
static int wait_synced(controller_app *a, const sigset_t *sigs)
{
	for (int i = 0; i < a->infs.n; i++) {
		while (k8s_informer_wait_synced(a->infs.inf[i], 1000) == ASB_ETIMEOUT) {
			struct timespec zero = { 0, 0 };
			if (sigtimedwait(sigs, NULL, &zero) > 0) {
				asb_log(a->setup, ASB_LOG_INFO, "signal received before caches synced; exiting", NULL);
				return 1;
			}
		}
	}
	return 0;
}

/* --leader-elect: campaign for the Lease (the workers start when it is
 * won); else start the workers now. Returns 0 or -1 (said). */
static int start_leading(controller_app *a)
{
	const controller_flags *f = a->f;
	if (!f->leader_elect) {
		asb_log(a->setup, ASB_LOG_INFO, "caches synced; starting workers", NULL);
		return start_workers(&a->lead) < 0 ? cannot(a, "cannot start") : 0;
	}
	const char *lease_ns = f->leader_election_namespace;
	if (!lease_ns && getenv("KUBERNETES_SERVICE_HOST"))
		lease_ns = k8s_config_namespace(a->cfg);
	if (!lease_ns) {
		asb_log(a->setup, ASB_LOG_ERROR, "cannot find the leader election namespace: not running "
		        "in-cluster; set --leader-election-namespace (or --leader-elect=false)", NULL);
		return -1;
	}
	k8s_leader_options lo = K8S_LEADER_OPTIONS_INIT;
	lo.lease_namespace = lease_ns;
	lo.lease_name = LEASE_NAME;
	lo.identity = a->instance;
	lo.on_started_leading = started_leading;
	lo.on_stopped_leading = stopped_leading;
	lo.on_new_leader = new_leader;
	lo.userdata = &a->lead;
	lo.logger = a->log;
	lo.metrics = a->metrics;  /* leader_election_master_status{name=LEASE_NAME} */
	/* its own client: one Lease write (with its retry) must end well
	 * inside the 10 s renew deadline, whatever the workers are doing */
	k8s_client_options lco = a->client_opts;
	lco.timeout_ms = 4000;
	lco.max_retries = 1;
	lco.qps = -1;  /* never throttled behind a burst of reconcile writes */
	if (k8s_client_new(&a->lease_client, a->cfg, &lco) < 0 ||
	    k8s_leader_new(&a->leader, a->lease_client, &lo) < 0 || k8s_leader_start(a->leader) < 0)
		return cannot(a, "cannot start");
	asb_log(a->setup, ASB_LOG_INFO, "caches synced; waiting for leadership", "lease",
	        LEASE_NAME, "namespace", lease_ns, "identity", a->instance, NULL);
	return 0;
}

/* Builds everything, starts it and waits for SIGTERM/SIGINT or a lost
 * Lease. Returns the exit status; shut_down() frees what was built. */
static int run(controller_app *a, const sigset_t *sigs)
{
	if (setup_endpoints(a) < 0 || setup_client(a) < 0 || setup_controllers(a) < 0 ||
	    start_serving(a) < 0)
		return 1;
	int synced = wait_synced(a, sigs);
	if (synced != 0)
		return synced > 0 ? 0 : 1;
	if (start_leading(a) < 0)
		return 1;

	/* the heap as the initial LISTs left it, then every period */
	heap_trim();
	int sig;
	do {
		struct timespec period = { HEAP_TRIM_PERIOD_MS / 1000, 0 };
		sig = sigtimedwait(sigs, NULL, &period);
		if (sig < 0)
			heap_trim();
	} while (sig < 0);
	if (sig == SIGUSR1) {
		/* as controller-runtime: a lost Lease ends the process, a restart re-elects */
		asb_log(a->setup, ASB_LOG_ERROR, "leader election lost; exiting", NULL);
		return 1;
	}
	asb_log(a->setup, ASB_LOG_INFO, "shutting down", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
	return 0;
}

/* Stops and frees what run() built, in reverse: endpoints first (readiness
 * reads the informers), then the workers (they read the caches), then the
 * informers. */
static void shut_down(controller_app *a)
{
	k8s_informer **inf = a->infs.inf;
	httpd_server_shutdown(a->metrics_srv, 5000);
	httpd_server_shutdown(a->probe_srv, 5000);
	httpd_server_free(a->metrics_srv);
	httpd_server_free(a->probe_srv);
	webhook_free(a->wh, 5000);
	if (a->sandboxes_gauge && inf[INF_SANDBOXES])
		asb_metric_remove_collector(a->sandboxes_gauge, sbx_sandboxes_collect, inf[INF_SANDBOXES]);
	httpd_health_checks_free(a->live);
	httpd_health_checks_free(a->ready);
	if (a->ctrl)
		k8s_controller_stop(a->ctrl);
	if (a->lead.templates)
		wp_template_controller_stop(a->lead.templates);
	if (a->lead.pools)
		wp_pool_controller_stop(a->lead.pools);
	if (a->lead.claims)
		wp_claim_controller_stop(a->lead.claims);
	/* after the workers: nothing writes once the Lease is released */
	k8s_leader_free(a->leader);
	k8s_client_free(a->lease_client);
	for (int i = a->infs.n - 1; i >= 0; i--)
		k8s_informer_stop(inf[i]);
	sbx_reconciler_free(a->rec);
	if (a->lead.claims)
		wp_claim_controller_free(a->lead.claims);
	if (a->lead.pools)
		wp_pool_controller_free(a->lead.pools);
	if (a->lead.templates)
		wp_template_controller_free(a->lead.templates);
	k8s_event_recorder_free(a->events);  /* flushes what is queued, bounded */
	for (int i = 0; i < 3; i++)
		k8s_event_recorder_free(a->wp_events[i]);
	k8s_controller_free(a->ctrl);
	for (int i = 0; i < a->infs.n; i++)
		k8s_informer_free(inf[i]);
	k8s_packer_free(a->infs.packer);
	k8s_client_free(a->client);
	k8s_config_free(a->cfg);
	asb_metrics_registry_free(a->metrics);
	k8s_global_cleanup();
	asb_log(a->setup, ASB_LOG_INFO, "stopped", NULL);
}

/* Signals are taken synchronously by the main thread with sigwait(),
 * blocked first thing (asb/signals.h); SIGUSR1 is raised by ourselves when
 * the Lease is lost. */
static void block_signals(sigset_t *sigs)
{
	asb_signals_block_stop(sigs, SIGUSR1);
}

int main(int argc, char **argv)
{
	heap_limit_arenas();
	sigset_t sigs;
	block_signals(&sigs);

	controller_flags f;
	controller_flags_defaults(&f);
	int parsed = controller_flags_parse(argc, argv, &f);
	if (parsed != 0)  /* as upstream: 2 from Go's flag package, 1 from its checks */
		return parsed > 0 ? 0 : parsed == -1 ? 2 : 1;
	controller_app a = { .f = &f, .infs.n = f.extensions ? INF_COUNT : INF_CORE_COUNT };
	if (asb_log_flags_logger(&a.log, &f.log, stderr) < 0 ||
	    asb_logger_named(&a.setup, a.log, "setup") < 0) {
		asb_logger_free(a.log);
		return 1;
	}
	char invalid[256];
	int rc = 1;
	if (controller_flags_validate(&f, invalid, sizeof(invalid)) < 0) {
		fprintf(stderr, "agent-sandbox-controller: %s\n", invalid);
	} else {
		controller_flags_warnings(&f, log_flag_warning, a.setup);
		rc = run(&a, &sigs);
		shut_down(&a);
	}
	asb_logger_free(a.setup);
	asb_logger_free(a.log);
	return rc;
}
