/*
 * flags.c - parsing and validating the controller's flags (flags.h).
 * Go-style spellings are accepted: --flag=value, --flag value, and for
 * booleans --flag, --flag=true, --flag=false.
 */
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
	       PROBE_ADDR, LEADER_ELECT, LEADER_NS, QPS, BURST, API_CONNS, SEP_WATCH };
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
