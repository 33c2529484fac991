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
#include "flags.h"

#define PROG "agent-sandbox-controller"

void controller_flags_defaults(controller_flags *f)
{
	*f = (controller_flags){
		.cluster_domain = "cluster.local",
		.sandbox_workers = 100,
		.log_format = K8S_LOG_TEXT,
		.log_level = K8S_LOG_INFO,
		.metrics_addr = ":8080",
		.probe_addr = ":8081",
		.leader_elect = true,
		.kube_api_qps = -1,
		.kube_api_burst = 10,
		.api_connections = 1,
	};
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
"  --health-probe-bind-address ADDR  serve /healthz and /readyz on ADDR (default :8081)\n"
"  --log-format text|json            log line format on stderr (default text)\n"
"  --log-level error|warn|info|debug minimum level logged (default info)\n"
"  --version                         print the version and exit\n"
"  -h, --help                        print this help and exit\n"
"\n"
"Signals: SIGTERM or SIGINT stop the controller cleanly (reconciles in flight\n"
"finish, the Lease is released, watches close).\n");
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

int controller_parse_duration(const char *s, int64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 }, { "\xce\xbcs", 1000 },
		{ "ms", 1000000 }, { "s", 1000000000ULL }, { "m", 60000000000ULL },
		{ "h", 3600000000000ULL },
	};
	const uint64_t limit = (uint64_t)1 << 63;
	bool neg = false;
	uint64_t total = 0;

	if (!s || !*s)
		return -1;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0) {
		*ns = 0;
		return 0;
	}
	if (!*s)
		return -1;
	while (*s) {
		/* [0-9]*(\.[0-9]*)? with at least one digit, then a unit */
		uint64_t whole = 0, frac = 0;
		double scale = 1;
		bool digits = false, overflow_frac = false;
		for (; isdigit((unsigned char)*s); s++, digits = true) {
			if (whole > limit / 10)
				return -1;
			whole = whole * 10 + (uint64_t)(*s - '0');
			if (whole > limit)
				return -1;
		}
		if (*s == '.') {
			for (s++; isdigit((unsigned char)*s); s++, digits = true) {
				if (overflow_frac || frac > limit / 10) {
					overflow_frac = true;   /* Go drops such digits */
					continue;
				}
				frac = frac * 10 + (uint64_t)(*s - '0');
				scale *= 10;
			}
		}
		if (!digits)
			return -1;
		size_t best = 0;
		uint64_t mult = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t n = strlen(units[i].unit);
			if (n > best && strncmp(s, units[i].unit, n) == 0) {
				best = n;
				mult = units[i].ns;
			}
		}
		if (!best)
			return -1;
		s += best;
		if (whole > limit / mult)
			return -1;
		uint64_t v = whole * mult;
		if (frac)
			v += (uint64_t)((double)frac * ((double)mult / scale));
		if (v > limit || total > limit - v)
			return -1;
		total += v;
	}
	if (total > limit - (neg ? 0 : 1))
		return -1;
	*ns = neg ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}

/* A duration flag in whole milliseconds (a fraction rounds up, so a tiny
 * window is not silently 0), at least `min_ms`. */
static int parse_duration_ms(const char *flag, const char *s, long min_ms, long *out)
{
	int64_t ns;
	if (controller_parse_duration(s, &ns) < 0)
		return bad(flag, s, "must be a duration such as 250ms, 1s, 1m or 0");
	int64_t ms = ns / 1000000 + (ns > 0 && ns % 1000000 ? 1 : 0);
	if (ms < min_ms || ms > LONG_MAX) {
		char want[64];
		snprintf(want, sizeof(want), "must be >= %ldms", min_ms);
		return bad(flag, s, want);
	}
	*out = (long)ms;
	return 0;
}

static int parse_bool(const char *flag, const char *s, bool *out)
{
	if (!s || strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
		*out = true;
	else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
		*out = false;
	else
		return bad(flag, s, "must be true or false");
	return 0;
}

int controller_flags_parse(int argc, char **argv, controller_flags *f)
{
	enum { KUBECONFIG = 256, CONTEXT, WORKERS, DOMAIN, LOGFMT, LOGLVL, VERSION, METRICS_ADDR,
	       PROBE_ADDR, LEADER_ELECT, LEADER_NS, QPS, BURST, API_CONNS, SEP_WATCH,
	       WRITE_BEHIND };
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
				f->log_format = K8S_LOG_TEXT;
			else if (strcmp(optarg, "json") == 0)
				f->log_format = K8S_LOG_JSON;
			else
				return bad("log-format", optarg, "use text or json");
			break;
		case LOGLVL:
			if ((f->log_level = k8s_log_level_parse(optarg)) < 0)
				return bad("log-level", optarg, "use error, warn, info or debug");
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
	return 0;
}
