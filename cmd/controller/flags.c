/*
 * flags.c - parsing and validating the controller's flags (flags.h).
 * Go-style spellings are accepted: --flag=value, --flag value, and for
 * booleans --flag, --flag=true, --flag=false.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "asb/duration.h"
#include "flags.h"

#define PROG "agent-sandbox-controller"

void controller_flags_defaults(controller_flags *f)
{
	*f = (controller_flags){
		.cluster_domain = "cluster.local",
		.sandbox_workers = 100,
		.log_format = ASB_LOG_TEXT,
		.log_level = ASB_LOG_INFO,
		.metrics_addr = ":8080",
		.probe_addr = ":8081",
		.leader_elect = true,
		.kube_api_qps = -1,
		.kube_api_burst = 10,
		.api_connections = 1,
		.sandbox_claim_workers = 50,
		.sandbox_warm_pool_workers = 1,
		.sandbox_template_workers = 1,
		.warm_pool_max_batch_size = 300,
		.warm_pool_readiness_grace_period_ms = 5 * 60 * 1000,
		.warm_pool_unschedulable_recheck_ms = 60 * 1000,
		.enable_warm_pool_eviction = true,
		.pprof_block_profile_rate = 1000000,
		.pprof_mutex_profile_fraction = 10,
	};
	webhook_flags_defaults(&f->webhook);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [flags]\n"
"\n"
"Reconciles agents.x-k8s.io Sandboxes: one Pod per Sandbox, an optional\n"
"headless Service, PVCs from volumeClaimTemplates, suspend/resume and expiry.\n"
"\n"
"Flags:\n"
"  --kubeconfig PATH                 kubeconfig to use; default: $KUBECONFIG, then the\n"
"                                    in-cluster service account, then ~/.kube/config\n"
"  --context NAME                    kubeconfig context (default: current-context)\n"
"  --sandbox-concurrent-workers N    concurrent Sandbox reconciles (default 100)\n"
"  --cluster-domain DOMAIN           DNS suffix of status.serviceFQDN (default cluster.local)\n"
"  --leader-elect[=true|false]       run the workers only while holding the Lease\n"
"                                    a3317529.agent-sandbox.x-k8s.io (default true)\n"
"  --leader-election-namespace NS    namespace of that Lease (default: the in-cluster\n"
"                                    namespace; required out of cluster with --leader-elect)\n"
"  --kube-api-qps Q                  client-side API requests/s; negative: no limit (default -1)\n"
"  --kube-api-burst N                requests admitted at once before pacing (default 10)\n"
"  --api-connections N               connections (HTTP/2) sharing non-watch requests (default 1)\n"
"  --separate-watch-connection[=B]   lists and watches on a connection of their own (default false)\n"
"  --sandbox-write-behind-window D   coalesce metadata-only patches of owned Pods for up to\n"
"                                    min(D, 1s) (Go duration: 250ms, 1s, 1m; >= 0;\n"
"                                    default 0: synchronous)\n"
"  --metrics-bind-address ADDR       serve /metrics on ADDR (host:port or :port;\n"
"                                    0 disables; default :8080)\n"
"  --health-probe-bind-address ADDR  serve /healthz and /readyz on ADDR (same forms;\n"
"                                    0 disables; default :8081)\n"
"  --log-format text|json            log line format on stderr (default text)\n"
"  --log-level error|warn|info|debug minimum level logged (default info)\n"
"  --cache-label-selectors[=B]       cache only Pods and Services labelled agents.x-k8s.io/sandbox-name-hash (default false)\n"
"  --zap-devel[=B]                   development mode: debug level unless a level flag is given (default false)\n"
"  --zap-encoder json|console        same as --log-format json|text (default console)\n"
"  --zap-log-level debug|info|error|N  same as --log-level; an integer N > 0 means debug (default info)\n"
"  --zap-stacktrace-level info|error|panic  accepted and ignored: no stack traces are logged (default error)\n"
"  --zap-time-encoding E             epoch|millis|nanos|iso8601|rfc3339|rfc3339nano: accepted and ignored (timestamps are RFC 3339)\n"
"  --version                         print the version and exit\n"
"  -h, --help                        print this help and exit\n"
"\n"
"Signals: SIGTERM or SIGINT stop the controller cleanly (reconciles in flight\n"
"finish, the Lease is released, watches close).\n"
"\n"
"Extension controllers (SandboxTemplate, SandboxWarmPool, SandboxClaim). The flags\n"
"below take effect when those run, and are validated either way:\n"
"  --extensions[=B]                  run the extension controllers (default false)\n"
"  --sandbox-claim-concurrent-workers N  concurrent SandboxClaim reconciles, > 0 (default 50)\n"
"  --sandbox-warm-pool-concurrent-workers N  concurrent SandboxWarmPool reconciles, > 0 (default 1)\n"
"  --sandbox-template-concurrent-workers N  concurrent SandboxTemplate reconciles (default 1)\n"
"  --sandbox-warm-pool-max-batch-size N  parallel creates/deletes per warm-pool batch, > 0 (default 300)\n"
"  --sandbox-warm-pool-replenish-delay D  delay replacing members that left a pool (default 0)\n"
"  --sandbox-warm-pool-max-refill-rate R  refill creates/s per pool, finite, >= 0; 0: unpaced (default 0)\n"
"  --sandbox-warm-pool-readiness-grace-period D  time a member may stay non-Ready, > 0 (default 5m)\n"
"  --sandbox-warm-pool-unschedulable-recheck-interval D  requeue of pools with unschedulable members, > 0 (default 1m)\n"
"  --enable-warm-pool-eviction[=B]   mark warm-pool pods safe to evict (default true)\n"
"  --disable-claim-events[=B]        no Events from the claim controller (default false)\n"
"  --disable-claim-observability-annotations[=B]  no first-observed/trace annotations on claims (default false)\n"
"\n"
"Accepted for compatibility with upstream's Go controller, without effect (a\n"
"warning is logged): no OpenTelemetry exporter, no Go runtime to profile.\n"
"  --enable-tracing[=B]              OpenTelemetry tracing (default false)\n"
"  --enable-pprof[=B]                Go CPU profile on the metrics server (default false)\n"
"  --enable-pprof-debug[=B]          Go debug profiles (default false)\n"
"  --pprof-block-profile-rate N      Go block profile rate in ns (default 1000000)\n"
"  --pprof-mutex-profile-fraction N  Go mutex profile fraction (default 10)\n"
"\n"
"Conversion webhook (agents.x-k8s.io v1alpha1 <-> v1beta1, HTTPS POST /convert):\n"
"%s", webhook_flags_usage);
}

static int bad(const char *flag, const char *value, const char *want)
{
	fprintf(stderr, PROG ": invalid value \"%s\" for --%s: %s\n", value, flag, want);
	return -1;
}

static int parse_int(const char *flag, const char *s, int min, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > INT_MAX) {
		char want[64];
		snprintf(want, sizeof(want), "must be an integer >= %d", min);
		return bad(flag, s, want);
	}
	*out = (int)v;
	return 0;
}

/* A duration flag in whole milliseconds (a fraction rounds up, so a tiny
 * window is not silently 0), at least `min_ms`. */
static int parse_duration_ms(const char *flag, const char *s, long min_ms, long *out)
{
	long ms;
	if (asb_duration_parse_ms(s, &ms) < 0)
		return bad(flag, s, "must be a duration such as 250ms, 1s, 1m or 0");
	if (ms < min_ms) {
		char want[64];
		snprintf(want, sizeof(want), "must be >= %ldms", min_ms);
		return bad(flag, s, want);
	}
	*out = ms;
	return 0;
}

/* A duration flag that must be > 0 (docs/upstream.md#startup-validation), in milliseconds. */
static int parse_positive_duration_ms(const char *flag, const char *s, long *out)
{
	int64_t ns;
	if (asb_duration_parse(s, &ns) == 0 && ns <= 0)
		return bad(flag, s, "must be a positive duration such as 30s, 5m or 1h");
	return parse_duration_ms(flag, s, 1, out);
}

/* controller-runtime lower-cases the values of its zap flags (strings.ToLower)
 * before matching them, so `--zap-encoder=JSON` or `--zap-log-level=Debug` in
 * existing manifests work there and must work here. */
static bool one_of_ci(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (strcasecmp(s, *set) == 0)
			return true;
	return false;
}

/* controller-runtime's --zap-log-level: debug, info, error (any case), or an
 * integer > 0 (a debug verbosity, which is our debug). Returns an asb_log_level
 * or -1. */
static int zap_level(const char *s)
{
	if (strcasecmp(s, "debug") == 0)
		return ASB_LOG_DEBUG;
	if (strcasecmp(s, "info") == 0)
		return ASB_LOG_INFO;
	if (strcasecmp(s, "error") == 0)
		return ASB_LOG_ERROR;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	return errno || end == s || *end || v <= 0 ? -1 : ASB_LOG_DEBUG;
}

static int parse_bool(const char *flag, const char *s, bool *out)
{
	if (!s)   /* a bare --flag */
		return *out = true, 0;
	return k8s_parse_bool(s, out) == 0 ? 0 : bad(flag, s, "must be true or false");
}

int controller_flags_parse(int argc, char **argv, controller_flags *f)
{
	enum { KUBECONFIG = 256, CONTEXT, WORKERS, DOMAIN, LOGFMT, LOGLVL, VERSION, METRICS_ADDR,
	       PROBE_ADDR, LEADER_ELECT, LEADER_NS, QPS, BURST, API_CONNS, SEP_WATCH,
	       WRITE_BEHIND,
	       CACHE_SEL, EXTENSIONS, CLAIM_WORKERS, POOL_WORKERS, TEMPLATE_WORKERS, POOL_BATCH,
	       POOL_REPLENISH, POOL_REFILL, POOL_GRACE, POOL_RECHECK, POOL_EVICTION, NO_CLAIM_EVENTS,
	       NO_CLAIM_ANNOTATIONS, TRACING, PPROF, PPROF_DEBUG, PPROF_BLOCK, PPROF_MUTEX, ZAP_DEVEL,
	       ZAP_ENCODER, ZAP_LEVEL, ZAP_STACK, ZAP_TIME,
	       WH_ENABLE, WH_MANAGE, WH_PORT, WH_CERT_DIR, WH_CERT_NAME, WH_KEY_NAME, WH_SERVICE,
	       WH_NAMESPACE, WH_URL, WH_BIND };
	static const struct option opts[] = {
		{ "kubeconfig", required_argument, NULL, KUBECONFIG },
		{ "context", required_argument, NULL, CONTEXT },
		{ "sandbox-concurrent-workers", required_argument, NULL, WORKERS },
		{ "cluster-domain", required_argument, NULL, DOMAIN },
		{ "log-format", required_argument, NULL, LOGFMT },
		{ "log-level", required_argument, NULL, LOGLVL },
		{ "version", no_argument, NULL, VERSION },
		{ "metrics-bind-address", required_argument, NULL, METRICS_ADDR },
		{ "health-probe-bind-address", required_argument, NULL, PROBE_ADDR },
		{ "leader-elect", optional_argument, NULL, LEADER_ELECT },
		{ "leader-election-namespace", required_argument, NULL, LEADER_NS },
		{ "kube-api-qps", required_argument, NULL, QPS },
		{ "kube-api-burst", required_argument, NULL, BURST },
		{ "api-connections", required_argument, NULL, API_CONNS },
		{ "separate-watch-connection", optional_argument, NULL, SEP_WATCH },
		{ "sandbox-write-behind-window", required_argument, NULL, WRITE_BEHIND },
		{ "cache-label-selectors", optional_argument, NULL, CACHE_SEL },
		{ "extensions", optional_argument, NULL, EXTENSIONS },
		{ "sandbox-claim-concurrent-workers", required_argument, NULL, CLAIM_WORKERS },
		{ "sandbox-warm-pool-concurrent-workers", required_argument, NULL, POOL_WORKERS },
		{ "sandbox-template-concurrent-workers", required_argument, NULL, TEMPLATE_WORKERS },
		{ "sandbox-warm-pool-max-batch-size", required_argument, NULL, POOL_BATCH },
		{ "sandbox-warm-pool-replenish-delay", required_argument, NULL, POOL_REPLENISH },
		{ "sandbox-warm-pool-max-refill-rate", required_argument, NULL, POOL_REFILL },
		{ "sandbox-warm-pool-readiness-grace-period", required_argument, NULL, POOL_GRACE },
		{ "sandbox-warm-pool-unschedulable-recheck-interval", required_argument, NULL, POOL_RECHECK },
		{ "enable-warm-pool-eviction", optional_argument, NULL, POOL_EVICTION },
		{ "disable-claim-events", optional_argument, NULL, NO_CLAIM_EVENTS },
		{ "disable-claim-observability-annotations", optional_argument, NULL, NO_CLAIM_ANNOTATIONS },
		{ "enable-tracing", optional_argument, NULL, TRACING },
		{ "enable-pprof", optional_argument, NULL, PPROF },
		{ "enable-pprof-debug", optional_argument, NULL, PPROF_DEBUG },
		{ "pprof-block-profile-rate", required_argument, NULL, PPROF_BLOCK },
		{ "pprof-mutex-profile-fraction", required_argument, NULL, PPROF_MUTEX },
		{ "zap-devel", optional_argument, NULL, ZAP_DEVEL },
		{ "zap-encoder", required_argument, NULL, ZAP_ENCODER },
		{ "zap-log-level", required_argument, NULL, ZAP_LEVEL },
		{ "zap-stacktrace-level", required_argument, NULL, ZAP_STACK },
		{ "zap-time-encoding", required_argument, NULL, ZAP_TIME },
		{ "enable-webhook", optional_argument, NULL, WH_ENABLE },
		{ "manage-webhook-certs", optional_argument, NULL, WH_MANAGE },
		{ "webhook-port", required_argument, NULL, WH_PORT },
		{ "webhook-cert-dir", required_argument, NULL, WH_CERT_DIR },
		{ "webhook-cert-name", required_argument, NULL, WH_CERT_NAME },
		{ "webhook-key-name", required_argument, NULL, WH_KEY_NAME },
		{ "webhook-service-name", required_argument, NULL, WH_SERVICE },
		{ "webhook-namespace", required_argument, NULL, WH_NAMESPACE },
		{ "webhook-url", required_argument, NULL, WH_URL },
		{ "webhook-bind-address", required_argument, NULL, WH_BIND },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case KUBECONFIG:
			if (!*optarg)
				return bad("kubeconfig", optarg, "must not be empty");
			f->kubeconfig = optarg;
			break;
		case CONTEXT:
			if (!*optarg)
				return bad("context", optarg, "must not be empty");
			f->context = optarg;
			break;
		case WORKERS:
			if (parse_int("sandbox-concurrent-workers", optarg, 1, &f->sandbox_workers) < 0)
				return -1;
			break;
		case DOMAIN:
			if (!*optarg)
				return bad("cluster-domain", optarg, "must not be empty");
			f->cluster_domain = optarg;
			break;
		case LOGFMT:
			if (strcmp(optarg, "text") == 0)
				f->log_format = ASB_LOG_TEXT;
			else if (strcmp(optarg, "json") == 0)
				f->log_format = ASB_LOG_JSON;
			else
				return bad("log-format", optarg, "use text or json");
			break;
		case LOGLVL:
			if ((f->log_level = asb_log_level_parse(optarg)) < 0)
				return bad("log-level", optarg, "use error, warn, info or debug");
			f->log_level_set = true;
			break;
		case METRICS_ADDR: f->metrics_addr = optarg; break;
		case PROBE_ADDR: f->probe_addr = optarg; break;
		case LEADER_ELECT:
			if (parse_bool("leader-elect", optarg, &f->leader_elect) < 0)
				return -1;
			break;
		case LEADER_NS:
			if (!*optarg)
				return bad("leader-election-namespace", optarg, "must not be empty");
			f->leader_election_namespace = optarg;
			break;
		case QPS: {
			char *end;
			errno = 0;
			double q = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(q))
				return bad("kube-api-qps", optarg, "must be a finite number (negative: no limit)");
			f->kube_api_qps = q;
			break;
		}
		case BURST:
			if (parse_int("kube-api-burst", optarg, 1, &f->kube_api_burst) < 0)
				return -1;
			break;
		case API_CONNS:
			if (parse_int("api-connections", optarg, 1, &f->api_connections) < 0)
				return -1;
			if (f->api_connections > 64)
				return bad("api-connections", optarg, "must be at most 64");
			break;
		case SEP_WATCH:
			if (parse_bool("separate-watch-connection", optarg, &f->separate_watch_connection) < 0)
				return -1;
			break;
		case WRITE_BEHIND:
			if (parse_duration_ms("sandbox-write-behind-window", optarg, 0,
			                      &f->sandbox_write_behind_window_ms) < 0)
				return -1;
			break;
		case CACHE_SEL:
			if (parse_bool("cache-label-selectors", optarg, &f->cache_label_selectors) < 0)
				return -1;
			break;
		case EXTENSIONS:
			if (parse_bool("extensions", optarg, &f->extensions) < 0)
				return -1;
			break;
		case POOL_EVICTION:
			if (parse_bool("enable-warm-pool-eviction", optarg, &f->enable_warm_pool_eviction) < 0)
				return -1;
			break;
		case NO_CLAIM_EVENTS:
			if (parse_bool("disable-claim-events", optarg, &f->disable_claim_events) < 0)
				return -1;
			break;
		case NO_CLAIM_ANNOTATIONS:
			if (parse_bool("disable-claim-observability-annotations", optarg, &f->disable_claim_observability_annotations) < 0)
				return -1;
			break;
		case TRACING:
			if (parse_bool("enable-tracing", optarg, &f->enable_tracing) < 0)
				return -1;
			break;
		case PPROF:
			if (parse_bool("enable-pprof", optarg, &f->enable_pprof) < 0)
				return -1;
			break;
		case PPROF_DEBUG:
			if (parse_bool("enable-pprof-debug", optarg, &f->enable_pprof_debug) < 0)
				return -1;
			break;
		case ZAP_DEVEL:
			if (parse_bool("zap-devel", optarg, &f->zap_devel) < 0)
				return -1;
			break;
		case CLAIM_WORKERS:
			if (parse_int("sandbox-claim-concurrent-workers", optarg, 1, &f->sandbox_claim_workers) < 0)
				return -1;
			break;
		case POOL_WORKERS:
			if (parse_int("sandbox-warm-pool-concurrent-workers", optarg, 1,
			              &f->sandbox_warm_pool_workers) < 0)
				return -1;
			break;
		case TEMPLATE_WORKERS:  /* not validated > 0 upstream */
			if (parse_int("sandbox-template-concurrent-workers", optarg, INT_MIN,
			              &f->sandbox_template_workers) < 0)
				return -1;
			break;
		case POOL_BATCH:
			if (parse_int("sandbox-warm-pool-max-batch-size", optarg, 1, &f->warm_pool_max_batch_size) < 0)
				return -1;
			break;
		case POOL_REPLENISH:
			if (parse_duration_ms("sandbox-warm-pool-replenish-delay", optarg, LONG_MIN,
			                      &f->warm_pool_replenish_delay_ms) < 0)
				return -1;
			break;
		case POOL_REFILL: {
			char *end;
			errno = 0;
			double r = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(r) || r < 0)
				return bad("sandbox-warm-pool-max-refill-rate", optarg,
				           "must be a finite number >= 0 (0: unpaced)");
			f->warm_pool_max_refill_rate = r;
			break;
		}
		case POOL_GRACE:
			if (parse_positive_duration_ms("sandbox-warm-pool-readiness-grace-period", optarg,
			                               &f->warm_pool_readiness_grace_period_ms) < 0)
				return -1;
			break;
		case POOL_RECHECK:
			if (parse_positive_duration_ms("sandbox-warm-pool-unschedulable-recheck-interval",
			                               optarg, &f->warm_pool_unschedulable_recheck_ms) < 0)
				return -1;
			break;
		case PPROF_BLOCK:
			if (parse_int("pprof-block-profile-rate", optarg, INT_MIN, &f->pprof_block_profile_rate) < 0)
				return -1;
			if (f->pprof_block_profile_rate < 0)
				f->pprof_block_profile_rate = 0;  /* as upstream: negative clamped */
			break;
		case PPROF_MUTEX:
			if (parse_int("pprof-mutex-profile-fraction", optarg, INT_MIN,
			              &f->pprof_mutex_profile_fraction) < 0)
				return -1;
			break;
		case ZAP_ENCODER:
			if (strcasecmp(optarg, "console") == 0)
				f->log_format = ASB_LOG_TEXT;
			else if (strcasecmp(optarg, "json") == 0)
				f->log_format = ASB_LOG_JSON;
			else
				return bad("zap-encoder", optarg, "use json or console");
			break;
		case ZAP_LEVEL:
			if ((f->log_level = zap_level(optarg)) < 0)
				return bad("zap-log-level", optarg,
				           "use debug, info, error or an integer > 0");
			f->log_level_set = true;
			break;
		case ZAP_STACK:
			if (!one_of_ci(optarg, (const char *const[]){ "info", "error", "panic", NULL }))
				return bad("zap-stacktrace-level", optarg, "use info, error or panic");
			f->zap_stacktrace_level = optarg;
			break;
		case ZAP_TIME:
			/* controller-runtime accepts "nanos" (its help text says "nano",
			 * which it refuses); both are taken here */
			if (!one_of_ci(optarg, (const char *const[]){ "epoch", "millis", "nano", "nanos",
			                                              "iso8601", "rfc3339", "rfc3339nano",
			                                              NULL }))
				return bad("zap-time-encoding", optarg,
				           "use epoch, millis, nanos, iso8601, rfc3339 or rfc3339nano");
			f->zap_time_encoding = optarg;
			break;
		case WH_ENABLE:
			if (parse_bool("enable-webhook", optarg, &f->webhook.enable) < 0)
				return -1;
			break;
		case WH_MANAGE:
			if (parse_bool("manage-webhook-certs", optarg, &f->webhook.manage_certs) < 0)
				return -1;
			break;
		case WH_PORT:  /* <= 65535 is checked with the other webhook flags */
			if (parse_int("webhook-port", optarg, 1, &f->webhook.port) < 0)
				return -1;
			break;
		case WH_CERT_DIR: f->webhook.cert_dir = optarg; break;
		case WH_CERT_NAME: f->webhook.cert_name = optarg; f->webhook.cert_name_set = true; break;
		case WH_KEY_NAME: f->webhook.key_name = optarg; f->webhook.key_name_set = true; break;
		case WH_SERVICE: f->webhook.service_name = optarg; break;
		case WH_NAMESPACE: f->webhook.namespace_ = optarg; break;
		case WH_URL: f->webhook.url = optarg; break;
		case WH_BIND: f->webhook.bind_address = optarg; break;
		case VERSION:
			printf(PROG " %s\n", AGENT_SANDBOX_VERSION);
			return 1;
		case 'h':
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, PROG ": unknown or incomplete flag \"%s\"\n\n", argv[optind - 1]);
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	/* controller-runtime: development mode defaults the level to debug */
	if (f->zap_devel && !f->log_level_set)
		f->log_level = ASB_LOG_DEBUG;
	return 0;
}

int controller_flags_validate(const controller_flags *f, char *err, size_t cap)
{
	if (webhook_flags_validate(&f->webhook, err, cap) < 0)
		return -1;
	return 0;
}

int controller_flags_warnings(const controller_flags *f, controller_flags_warn_fn warn,
                              void *userdata)
{
	int n = 0;
	char msg[256];
	long long total = (long long)f->sandbox_workers + f->sandbox_claim_workers +
	                  f->sandbox_warm_pool_workers + f->sandbox_template_workers;
	if (total > 1000) {
		snprintf(msg, sizeof(msg), "the concurrent workers of the four controllers add up "
		         "to %lld (more than 1000): expect contention on the API server", total);
		warn("sandbox-concurrent-workers", msg, userdata), n++;
	}
	if (f->kube_api_qps > 0 && total > f->kube_api_burst) {
		snprintf(msg, sizeof(msg), "the concurrent workers add up to %lld, more than "
		         "--kube-api-burst=%d while --kube-api-qps limits the rate: workers will "
		         "wait for the client-side rate limiter", total, f->kube_api_burst);
		warn("kube-api-burst", msg, userdata), n++;
	}
	if (f->enable_tracing)
		warn("enable-tracing", "tracing is not supported by this controller (no "
		     "OpenTelemetry exporter): the flag is ignored", userdata), n++;
	if (f->enable_pprof || f->enable_pprof_debug)
		warn(f->enable_pprof_debug ? "enable-pprof-debug" : "enable-pprof",
		     "pprof profiles are Go runtime profiles and this controller is not a Go "
		     "program: no /debug/pprof endpoint is served", userdata), n++;
	return n;
}
