/*
 * flags.c - the controller's command line (flags.h). One asb_flag row per
 * flag, in --help order, drives both parsing and --help (asb/flags.h).
 * Spellings are those of Go's flag package, which upstream's controller
 * uses and people's manifests carry: -flag or --flag, =value or the next
 * word, and for booleans -flag, -flag=true, -flag=false. Each value is
 * checked as it is set; the checks across flags are in
 * controller_flags_validate().
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/duration.h"
#include "asb/flags.h"
#include "flags.h"

#define PROG "agent-sandbox-controller"

void controller_flags_defaults(controller_flags *f)
{
	*f = (controller_flags){
		.cluster_domain = "cluster.local",
		.sandbox_workers = 100,
		.sandbox_status_coalesce_window_ms = 500,
		.log = ASB_LOG_FLAGS_INIT,
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

/* ---- setters (asb_flag_set_fn): 0, or -1 (not of the flag's type: Go's
 * flag package refuses it, exit 2) or ASB_FLAG_RULE (well formed, a bound
 * refuses it: upstream's startup checks, exit 1) with the reason in `why` ---- */

static int want(char *why, size_t cap, const char *msg)
{
	snprintf(why, cap, "%s", msg);
	return -1;
}

static int rule(char *why, size_t cap, const char *msg)
{
	snprintf(why, cap, "%s", msg);
	return ASB_FLAG_RULE;
}

/* An int of at least the row's min (and at most its max, when set). */
static int set_int(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (end == v || *end || isspace((unsigned char)*v))
		return fl->min == INT_MIN ? want(why, cap, "must be an integer")
		                          : (snprintf(why, cap, "must be an integer >= %ld", fl->min), -1);
	/* out of range: say which end (strtol's ERANGE gives LONG_MIN/MAX);
	 * beyond 64 bits Go's strconv refuses the text itself */
	if (errno == ERANGE)
		return snprintf(why, cap, "must be at %s %d", n > 0 ? "most" : "least",
		                n > 0 ? INT_MAX : INT_MIN), -1;
	if (n > INT_MAX)
		return snprintf(why, cap, "must be at most %d", INT_MAX), ASB_FLAG_RULE;
	if (n < INT_MIN)
		return snprintf(why, cap, "must be at least %d", INT_MIN), ASB_FLAG_RULE;
	if (n < fl->min)
		return snprintf(why, cap, "must be an integer >= %ld", fl->min), ASB_FLAG_RULE;
	if (fl->max && n > fl->max)
		return snprintf(why, cap, "must be at most %ld", fl->max), ASB_FLAG_RULE;
	*(int *)((char *)o + fl->off) = (int)n;
	return 0;
}

/* A duration in whole milliseconds (a fraction rounds up, so a tiny window
 * is not silently 0), at least the row's min; a min of 1 or more means the
 * duration itself must be > 0 (docs/upstream.md#startup-validation). */
static int set_ms(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	int64_t ns;
	long ms;
	if (fl->min > 0 && asb_duration_parse(v, &ns) == 0 && ns <= 0)
		return rule(why, cap, "must be a positive duration such as 30s, 5m or 1h");
	if (asb_duration_parse_ms(v, &ms) < 0)
		return want(why, cap, "must be a duration such as 250ms, 1s, 1m or 0");
	/* -0.5ms is 0 in whole ms: still below a min of 0 */
	if (ms < fl->min || (fl->min == 0 && asb_duration_parse(v, &ns) == 0 && ns < 0))
		return snprintf(why, cap, "must be >= %ldms", fl->min), ASB_FLAG_RULE;
	*(long *)((char *)o + fl->off) = ms;
	return 0;
}

/* A finite number: 0; -1 for text that is no number (strtod syntax,
 * without the leading spaces it skips and Go refuses); ASB_FLAG_RULE for
 * NaN and the infinities, numbers to Go's ParseFloat. */
static int parse_finite(const char *v, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (end == v || *end || isspace((unsigned char)*v))
		return -1;
	if (errno == ERANGE && !isfinite(d))
		return -1;  /* beyond a double: Go's ParseFloat refuses it too */
	if (!isfinite(d))
		return ASB_FLAG_RULE;  /* NaN, Inf */
	*out = d;
	return 0;
}

static int set_qps(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)fl;
	int rc = parse_finite(v, &((controller_flags *)o)->kube_api_qps);
	if (rc < 0)
		return want(why, cap, "must be a finite number (negative: no limit)"), rc;
	return 0;
}

static int set_refill_rate(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)fl;
	double r = 0;
	int rc = parse_finite(v, &r);
	if (rc < 0 || r < 0)
		return want(why, cap, "must be a finite number >= 0 (0: unpaced)"),
		       rc == -1 ? -1 : ASB_FLAG_RULE;
	((controller_flags *)o)->warm_pool_max_refill_rate = r;
	return 0;
}

/* A borrowed string that must not be empty. */
static int set_nonempty(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	if (!*v)
		return rule(why, cap, "must not be empty");
	*(const char **)((char *)o + fl->off) = v;
	return 0;
}

/* --webhook-cert-name and --webhook-key-name (stored by the row's kind) are
 * honoured only when given: note that they were. */
static int mark_given(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)v, (void)why, (void)cap;
	webhook_flags *w = &((controller_flags *)o)->webhook;
	if (fl->off == offsetof(controller_flags, webhook.cert_name))
		w->cert_name_set = true;
	else
		w->key_name_set = true;
	return 0;
}

/* ---- the table ---- */

#define OFF(field) offsetof(controller_flags, field)
/* Rows by kind of value; ARG is the placeholder shown in --help. */
#define BOOL_FLAG(name_, field_, help_) \
	ASB_FLAG(name_, ASB_FLAG_BOOL, OFF(field_), "[=B]", help_)
#define STR_FLAG(name_, field_, arg_, help_) \
	ASB_FLAG(name_, ASB_FLAG_STRING_REF, OFF(field_), arg_, help_)
#define NONEMPTY_FLAG(name_, field_, arg_, help_) \
	ASB_FLAG_FN(name_, ASB_FLAG_CUSTOM, OFF(field_), arg_, help_, set_nonempty)
/* an int in [min_, max_] (max_ 0: INT_MAX) */
#define INT_FLAG(name_, field_, min_, max_, help_) \
	{ .name = (name_), .kind = ASB_FLAG_CUSTOM, .off = OFF(field_), .arg = "N", \
	  .help = (help_), .set = set_int, .min = (min_), .max = (max_) }
/* a duration of at least min_ ms */
#define MS_FLAG(name_, field_, min_, help_) \
	{ .name = (name_), .kind = ASB_FLAG_CUSTOM, .off = OFF(field_), .arg = "D", \
	  .help = (help_), .set = set_ms, .min = (min_) }
#define CUSTOM_FLAG(name_, set_, field_, arg_, help_) \
	ASB_FLAG_FN(name_, ASB_FLAG_CUSTOM, OFF(field_), arg_, help_, set_)

/* The whole --help text, one row per flag in its order; the (default ...)
 * of a help text is controller_flags_defaults()'s value. */
static const asb_flag table[] = {
	ASB_FLAG_LINE("Usage: " PROG " [flags]"),
	ASB_FLAG_LINE(""),
	ASB_FLAG_LINE("Reconciles agents.x-k8s.io Sandboxes: one Pod per Sandbox, an optional"),
	ASB_FLAG_LINE("headless Service, PVCs from volumeClaimTemplates, suspend/resume and expiry."),
	ASB_FLAG_LINE(""),
	ASB_FLAG_LINE("Flags:"),
	NONEMPTY_FLAG("kubeconfig", kubeconfig, "PATH",
	  "kubeconfig to use; default: $KUBECONFIG, then the\n"
	  "in-cluster service account, then ~/.kube/config"),
	NONEMPTY_FLAG("context", context, "NAME", "kubeconfig context (default: current-context)"),
	INT_FLAG("sandbox-concurrent-workers", sandbox_workers, 1, 0,
	  "concurrent Sandbox reconciles (default 100)"),
	NONEMPTY_FLAG("cluster-domain", cluster_domain, "DOMAIN",
	  "DNS suffix of status.serviceFQDN (default cluster.local)"),
	ASB_FLAG("leader-elect", ASB_FLAG_BOOL, OFF(leader_elect), "[=true|false]",
	  "run the workers only while holding the Lease\n"
	  "a3317529.agent-sandbox.x-k8s.io (default true)"),
	NONEMPTY_FLAG("leader-election-namespace", leader_election_namespace, "NS",
	  "namespace of that Lease (default: the in-cluster\n"
	  "namespace; required out of cluster with --leader-elect)"),
	CUSTOM_FLAG("kube-api-qps", set_qps, kube_api_qps, "Q",
	  "client-side API requests/s; negative: no limit (default -1)"),
	INT_FLAG("kube-api-burst", kube_api_burst, 1, 0,
	  "requests admitted at once before pacing (default 10)"),
	INT_FLAG("api-connections", api_connections, 1, 64,
	  "connections (HTTP/2) sharing non-watch requests (default 1)"),
	BOOL_FLAG("separate-watch-connection", separate_watch_connection,
	  "lists and watches on a connection of their own (default false)"),
	MS_FLAG("sandbox-write-behind-window", sandbox_write_behind_window_ms, 0,
	  "coalesce metadata-only patches of owned Pods for up to\n"
	  "min(D, 1s) (Go duration: 250ms, 1s, 1m; >= 0;\ndefault 0: synchronous)"),
	MS_FLAG("sandbox-status-coalesce-window", sandbox_status_coalesce_window_ms, 0,
	  "while a Sandbox is not Ready, hold status changes that\nleave it not Ready for up to D, so one write carries\nseveral (Go duration; >= 0; default 500ms; 0: every\nchange at once)"),
	STR_FLAG("metrics-bind-address", metrics_addr, "ADDR",
	  "serve /metrics on ADDR (host:port or :port;\n0 disables; default :8080)"),
	STR_FLAG("health-probe-bind-address", probe_addr, "ADDR",
	  "serve /healthz and /readyz on ADDR (same forms;\n0 disables; default :8081)"),
	ASB_LOG_FLAG_ROWS(OFF(log)),
	BOOL_FLAG("cache-label-selectors", cache_label_selectors,
	  "cache only Pods and Services labelled agents.x-k8s.io/sandbox-name-hash (default false)"),
	ASB_ZAP_FLAG_ROWS(OFF(log)),
	ASB_FLAG("version", ASB_FLAG_ACTION, 0, NULL, "print the version and exit"),
	{ .name = "help", .kind = ASB_FLAG_ACTION, .help = "print this help and exit", .short_opt = 'h' },
	ASB_FLAG_LINE(""),
	ASB_FLAG_LINE("Signals: SIGTERM or SIGINT stop the controller cleanly (reconciles in flight"),
	ASB_FLAG_LINE("finish, the Lease is released, watches close)."),
	ASB_FLAG_LINE(""),
	ASB_FLAG_LINE("Extension controllers (SandboxTemplate, SandboxWarmPool, SandboxClaim). The flags"),
	ASB_FLAG_LINE("below take effect when those run, and are validated either way:"),
	BOOL_FLAG("extensions", extensions, "run the extension controllers (default false)"),
	INT_FLAG("sandbox-claim-concurrent-workers", sandbox_claim_workers, 1, 0,
	  "concurrent SandboxClaim reconciles, > 0 (default 50)"),
	INT_FLAG("sandbox-warm-pool-concurrent-workers", sandbox_warm_pool_workers, 1, 0,
	  "concurrent SandboxWarmPool reconciles, > 0 (default 1)"),
	/* not validated > 0 upstream */
	INT_FLAG("sandbox-template-concurrent-workers", sandbox_template_workers, INT_MIN, 0,
	  "concurrent SandboxTemplate reconciles (default 1)"),
	INT_FLAG("sandbox-warm-pool-max-batch-size", warm_pool_max_batch_size, 1, 0,
	  "parallel creates/deletes per warm-pool batch, > 0 (default 300)"),
	MS_FLAG("sandbox-warm-pool-replenish-delay", warm_pool_replenish_delay_ms, LONG_MIN,
	  "delay replacing members that left a pool (default 0)"),
	CUSTOM_FLAG("sandbox-warm-pool-max-refill-rate", set_refill_rate, warm_pool_max_refill_rate,
	  "R", "refill creates/s per pool, finite, >= 0; 0: unpaced (default 0)"),
	MS_FLAG("sandbox-warm-pool-readiness-grace-period", warm_pool_readiness_grace_period_ms, 1,
	  "time a member may stay non-Ready, > 0 (default 5m)"),
	MS_FLAG("sandbox-warm-pool-unschedulable-recheck-interval",
	  warm_pool_unschedulable_recheck_ms, 1,
	  "requeue of pools with unschedulable members, > 0 (default 1m)"),
	BOOL_FLAG("enable-warm-pool-eviction", enable_warm_pool_eviction,
	  "mark warm-pool pods safe to evict (default true)"),
	BOOL_FLAG("disable-claim-events", disable_claim_events,
	  "no Events from the claim controller (default false)"),
	BOOL_FLAG("disable-claim-observability-annotations", disable_claim_observability_annotations,
	  "no first-observed/trace annotations on claims (default false)"),
	ASB_FLAG_LINE(""),
	ASB_FLAG_LINE("Accepted for compatibility with upstream's Go controller, without effect (a"),
	ASB_FLAG_LINE("warning is logged): no OpenTelemetry exporter, no Go runtime to profile."),
	BOOL_FLAG("enable-tracing", enable_tracing, "OpenTelemetry tracing (default false)"),
	BOOL_FLAG("enable-pprof", enable_pprof, "Go CPU profile on the metrics server (default false)"),
	BOOL_FLAG("enable-pprof-debug", enable_pprof_debug, "Go debug profiles (default false)"),
	INT_FLAG("pprof-block-profile-rate", pprof_block_profile_rate, INT_MIN, 0,
	  "Go block profile rate in ns (default 1000000)"),
	INT_FLAG("pprof-mutex-profile-fraction", pprof_mutex_profile_fraction, INT_MIN, 0,
	  "Go mutex profile fraction (default 10)"),
	ASB_FLAG_LINE(""),
	ASB_FLAG_LINE("Conversion webhook (agents.x-k8s.io v1alpha1 <-> v1beta1, HTTPS POST /convert):"),
	/* webhook_flags.h; the port's upper bound is checked with the other webhook flags */
	BOOL_FLAG("enable-webhook", webhook.enable,
	  "serve the v1alpha1 <-> v1beta1 conversion webhook (default\n"
	  "true; with false the CRDs must use conversion strategy None)"),
	BOOL_FLAG("manage-webhook-certs", webhook.manage_certs,
	  "keep the serving certificate in the Secret\n"
	  "agent-sandbox-webhook-certs and patch the CRDs' caBundle\n(default true)"),
	INT_FLAG("webhook-port", webhook.port, 1, 0, "HTTPS port of the webhook (default 9443)"),
	STR_FLAG("webhook-cert-dir", webhook.cert_dir, "DIR",
	  "serving certificate directory\n(default /tmp/k8s-webhook-server/serving-certs)"),
	ASB_FLAG_FN("webhook-cert-name", ASB_FLAG_STRING_REF, OFF(webhook.cert_name), "NAME",
	  "certificate file in that directory (default tls.crt;\n"
	  "honoured only with --manage-webhook-certs=false)", mark_given),
	ASB_FLAG_FN("webhook-key-name", ASB_FLAG_STRING_REF, OFF(webhook.key_name), "NAME",
	  "key file in that directory (default tls.key; same rule)", mark_given),
	STR_FLAG("webhook-service-name", webhook.service_name, "NAME",
	  "Service of the webhook, in certificate names and the CRD\n"
	  "conversion config (default agent-sandbox-webhook-service)"),
	STR_FLAG("webhook-namespace", webhook.namespace_, "NS",
	  "namespace of that Service and of the Secret\n(default agent-sandbox-system)"),
	STR_FLAG("webhook-url", webhook.url, "URL",
	  "local development (not upstream): the CRDs call this https\n"
	  "URL (e.g. https://127.0.0.1:9443/convert) instead of the\n"
	  "Service, and a new certificate also names its host"),
	STR_FLAG("webhook-bind-address", webhook.bind_address, "HOST",
	  "local development (not upstream): listen on HOST only\n(default: every interface)"),
	ASB_FLAGS_END,
};

static void usage(FILE *f)
{
	static const asb_flags_layout lay = { .width = 33, .overflow_gap = 2, .show_short = true };
	asb_flags_usage(f, table, &lay);
}

/* Says on stderr why asb_flags_parse() refused argv (its message names the
 * flag); an unknown flag gets the list, as Go's flag package prints it.
 * Returns -2 for a well-formed value a rule refused, else -1. */
static int refuse(const asb_flags_result *r)
{
	fprintf(stderr, PROG ": %s\n", asb_error_last()->message);
	if (r->status == ASB_FLAGS_UNKNOWN) {
		fputc('\n', stderr);
		usage(stderr);
	}
	return r->status == ASB_FLAGS_BAD_VALUE && r->rule ? -2 : -1;
}

int controller_flags_parse(int argc, char **argv, controller_flags *f)
{
	asb_flags_result r;
	if (asb_flags_parse(table, ASB_FLAGS_GO, f, argc, argv, NULL, &r) != ASB_OK)
		return refuse(&r);
	if (r.status == ASB_FLAGS_ACTION) {  /* --help or --version */
		if (r.flag->short_opt == 'h')
			usage(stdout);
		else
			printf(PROG " %s\n", AGENT_SANDBOX_VERSION);
		return 1;
	}
	asb_log_flags_finish(&f->log);  /* --zap-devel */
	/* as upstream: a negative block profile rate is clamped to 0 */
	if (f->pprof_block_profile_rate < 0)
		f->pprof_block_profile_rate = 0;
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
