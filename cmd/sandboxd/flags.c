/*
 * flags.c - sandboxd's command line (flags.h). Go-style spellings are
 * accepted: --flag=value and --flag value, as upstream's Go flag package.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asb/duration.h"
#include "flags.h"

#define PROG "sandboxd"
#ifndef SANDBOXD_VERSION
#define SANDBOXD_VERSION "dev"
#endif

void sandboxd_flags_defaults(sandboxd_flags *f)
{
	*f = (sandboxd_flags){
		.listen_host = "127.0.0.1",
		.rest_port = 8080,
		.runtime_port = 8888,
		.grpc_port = 9090,
		.root_dir = "/workspace",
		.metadata_env_prefix = "SANDBOX_",
		.shutdown_timeout_ms = 10000,
		.http_idle_timeout_ms = 60000,
		.stall_timeout_ms = 60000,
		.stream_chunk_size = 4096,
		.stream_keepalive_ms = 10000,
		.max_processes = 64,
		.max_output_bytes = 8u << 20,
		.max_tasks = 0,
		.kill_grace_ms = 2000,
		.max_upload_bytes = 0,
		.log_format = ASB_LOG_TEXT,
		.log_level = ASB_LOG_INFO,
	};
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [flags]\n"
"\n"
"The runtime inside a sandbox pod: runs commands and serves the files under\n"
"--root-dir, over HTTP (the python-runtime API and sandboxd's REST API).\n"
"\n"
"Flags:\n"
"  --listen-host HOST          bind host of both listeners (default 127.0.0.1;\n"
"                              0.0.0.0 to be reachable from the router)\n"
"  --rest-port N               REST files API and process API (default 8080)\n"
"  --runtime-port N            python-runtime API (default 8888; 0: off)\n"
"  --grpc-port N               accepted for upstream manifests, unused: no gRPC here,\n"
"                              processes are served over HTTP on --rest-port\n"
"  --root-dir DIR              sandbox root, created 0755 if missing (default\n"
"                              $SANDBOX_BASE_DIR, else /workspace)\n"
"  --metadata-env-prefix P     env prefix shown by /v1/metadata (default SANDBOX_)\n"
"  --shutdown-timeout D        graceful shutdown budget (Go duration; default 10s)\n"
"  --http-idle-timeout D       keep-alive idle timeout (default 60s)\n"
"  --stall-timeout D           a download whose client reads nothing, or a body\n"
"                              that stops arriving, this long is cut (default\n"
"                              60s; 0: off)\n"
"  --stream-chunk-size N       bytes per streamed output event at most (default 4096;\n"
"                              <= 0: 4096)\n"
"  --stream-keepalive D        an empty event {} on a quiet process stream this often,\n"
"                              to keep proxies open and notice clients gone (default\n"
"                              10s; 0: off)\n"
"  --max-processes N           processes running at once, all APIs (default 64)\n"
"  --max-output-bytes SIZE     output kept per process and stream; the rest is\n"
"                              dropped (default 8Mi)\n"
"  --max-tasks N               RLIMIT_NPROC of the commands: tasks their user may\n"
"                              have at once, bounds fork bombs (default 0: inherited;\n"
"                              no effect for root)\n"
"  --kill-grace D              SIGTERM to SIGKILL delay at a timeout (default 2s)\n"
"  --max-upload-bytes SIZE     largest upload or PUT body (default 0: no limit)\n"
"  --log-format text|json      log line format on stderr (default text)\n"
"  --log-level error|warn|info|debug  (default info)\n"
"  --version                   print the version and exit\n"
"  --help                      this text\n");
}

static int bad(const char *flag, const char *value, const char *want)
{
	fprintf(stderr, PROG ": invalid value \"%s\" for --%s: %s\n", value, flag, want);
	return -1;
}

static int parse_long(const char *flag, const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		char want[80];
		snprintf(want, sizeof(want), "must be an integer in [%ld, %ld]", min, max);
		return bad(flag, s, want);
	}
	*out = v;
	return 0;
}

static int parse_ms(const char *flag, const char *s, long min_ms, long *out)
{
	long ms;
	if (asb_duration_parse_ms(s, &ms) < 0)
		return bad(flag, s, "must be a duration such as 500ms, 10s or 1m");
	if (ms < min_ms) {
		char want[64];
		snprintf(want, sizeof(want), "must be >= %ldms", min_ms);
		return bad(flag, s, want);
	}
	*out = ms;
	return 0;
}

int sandboxd_parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	uint64_t mult = 1;
	if (*end) {
		static const char *const suf[] = { "K", "M", "G", "T" };
		bool found = false;
		for (int i = 0; i < 4 && !found; i++) {
			size_t n = strlen(suf[i]);
			if (strncmp(end, suf[i], n) == 0 &&
			    (end[n] == '\0' || (end[n] == 'i' && end[n + 1] == '\0'))) {
				mult = (uint64_t)1 << (10 * (i + 1));
				found = true;
			}
		}
		if (!found)
			return -1;
	}
	if (v > UINT64_MAX / mult)
		return -1;
	*out = (uint64_t)v * mult;
	return 0;
}

int sandboxd_flags_parse(int argc, char **argv, sandboxd_flags *f)
{
	enum { HOST = 256, REST, RUNTIME, GRPC, ROOT, PREFIX, SHUTDOWN, IDLE, STALL, CHUNK, KEEPALIVE, MAXPROC,
	       MAXOUT, MAXTASKS, GRACE, MAXUP, LOGFMT, LOGLVL, VERSION, HELP };
	static const struct option opts[] = {
		{ "listen-host", required_argument, NULL, HOST },
		{ "rest-port", required_argument, NULL, REST },
		{ "runtime-port", required_argument, NULL, RUNTIME },
		{ "grpc-port", required_argument, NULL, GRPC },
		{ "root-dir", required_argument, NULL, ROOT },
		{ "metadata-env-prefix", required_argument, NULL, PREFIX },
		{ "shutdown-timeout", required_argument, NULL, SHUTDOWN },
		{ "http-idle-timeout", required_argument, NULL, IDLE },
		{ "stall-timeout", required_argument, NULL, STALL },
		{ "stream-chunk-size", required_argument, NULL, CHUNK },
		{ "stream-keepalive", required_argument, NULL, KEEPALIVE },
		{ "max-processes", required_argument, NULL, MAXPROC },
		{ "max-output-bytes", required_argument, NULL, MAXOUT },
		{ "max-tasks", required_argument, NULL, MAXTASKS },
		{ "kill-grace", required_argument, NULL, GRACE },
		{ "max-upload-bytes", required_argument, NULL, MAXUP },
		{ "log-format", required_argument, NULL, LOGFMT },
		{ "log-level", required_argument, NULL, LOGLVL },
		{ "version", no_argument, NULL, VERSION },
		{ "help", no_argument, NULL, HELP },
		{ NULL, 0, NULL, 0 },
	};
	bool root_set = false;
	long v;
	uint64_t u;
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long_only(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case HOST:
			if (!*optarg)
				return bad("listen-host", optarg, "must not be empty");
			f->listen_host = optarg;
			break;
		case REST:
			if (parse_long("rest-port", optarg, 1, 65535, &v) < 0)
				return -1;
			f->rest_port = (int)v;
			break;
		case RUNTIME:
			if (parse_long("runtime-port", optarg, 0, 65535, &v) < 0)
				return -1;
			f->runtime_port = (int)v;
			break;
		case GRPC:
			if (parse_long("grpc-port", optarg, 1, 65535, &v) < 0)
				return -1;
			f->grpc_port = (int)v;
			f->grpc_port_set = true;
			break;
		case ROOT:
			f->root_dir = optarg;
			root_set = true;
			break;
		case PREFIX:
			f->metadata_env_prefix = *optarg ? optarg : "SANDBOX_";
			break;
		case SHUTDOWN:
			if (parse_ms("shutdown-timeout", optarg, 0, &f->shutdown_timeout_ms) < 0)
				return -1;
			break;
		case IDLE:
			if (parse_ms("http-idle-timeout", optarg, 1, &f->http_idle_timeout_ms) < 0)
				return -1;
			break;
		case STALL:
			if (parse_ms("stall-timeout", optarg, 0, &f->stall_timeout_ms) < 0)
				return -1;
			break;
		case CHUNK:
			if (parse_long("stream-chunk-size", optarg, LONG_MIN, 1 << 20, &v) < 0)
				return -1;
			f->stream_chunk_size = v <= 0 ? 4096 : (size_t)v;
			break;
		case KEEPALIVE:
			if (parse_ms("stream-keepalive", optarg, 0, &f->stream_keepalive_ms) < 0)
				return -1;
			break;
		case MAXPROC:
			if (parse_long("max-processes", optarg, 1, 100000, &v) < 0)
				return -1;
			f->max_processes = (int)v;
			break;
		case MAXOUT:
			if (sandboxd_parse_bytes(optarg, &u) < 0 || u == 0)
				return bad("max-output-bytes", optarg,
				           "must be a size > 0 such as 65536, 512Ki, 8Mi or 1Gi");
			f->max_output_bytes = u;
			break;
		case MAXTASKS:
			if (parse_long("max-tasks", optarg, 0, 1L << 22, &v) < 0)
				return -1;
			f->max_tasks = v;
			break;
		case GRACE:
			if (parse_ms("kill-grace", optarg, 1, &f->kill_grace_ms) < 0)
				return -1;
			break;
		case MAXUP:
			if (sandboxd_parse_bytes(optarg, &u) < 0)
				return bad("max-upload-bytes", optarg,
				           "must be a size such as 0, 100Mi or 2Gi");
			f->max_upload_bytes = u;
			break;
		case LOGFMT:
			if (strcmp(optarg, "text") == 0)
				f->log_format = ASB_LOG_TEXT;
			else if (strcmp(optarg, "json") == 0)
				f->log_format = ASB_LOG_JSON;
			else
				return bad("log-format", optarg, "must be text or json");
			break;
		case LOGLVL:
			if ((f->log_level = asb_log_level_parse(optarg)) < 0)
				return bad("log-level", optarg, "must be error, warn, info or debug");
			break;
		case VERSION:
			printf(PROG " %s\n", SANDBOXD_VERSION);
			return 1;
		case HELP:
		case 'h':
			usage(stdout);
			return 1;
		default:
			/* '?': unknown flag or missing value */
			fprintf(stderr, PROG ": unknown flag or missing value: %s\n", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument: %s\n", argv[optind]);
		return -1;
	}
	if (!root_set) {
		const char *env = getenv("SANDBOX_BASE_DIR");
		if (env && *env)
			f->root_dir = env;
	}
	if (!f->root_dir || !*f->root_dir) {
		fprintf(stderr, PROG ": invalid value \"\" for --root-dir: must not be empty\n");
		return -1;
	}
	if (f->runtime_port && f->runtime_port == f->rest_port) {
		fprintf(stderr, PROG ": --runtime-port must differ from --rest-port (both %d)\n",
		        f->rest_port);
		return -1;
	}
	if (f->grpc_port_set && f->grpc_port == f->rest_port) {
		fprintf(stderr, PROG ": --grpc-port must differ from --rest-port\n");
		return -1;
	}
	return 0;
}
