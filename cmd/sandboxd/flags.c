/*
 * flags.c - sandboxd's command line (flags.h). The spellings are those of
 * Go's flag package, which upstream's sandboxd uses: -flag or --flag,
 * =value or the next word, booleans bare or =value. One asb_flag row per
 * flag drives parsing and --help.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asb/duration.h"
#include "asb/flags.h"
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
		.idle_keepers = 8,
		.kill_grace_ms = 2000,
		.max_upload_bytes = 0,
		.log = ASB_LOG_FLAGS_INIT,
	};
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

/* ---- setters (asb_flag_set_fn): the row's min/max bound integers ---- */

static int why_range(const asb_flag *fl, const char *v, long *out, char *why, size_t cap)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	/* strtol skips leading spaces; Go's strconv refuses them */
	if (errno || end == v || *end || isspace((unsigned char)*v) || n < fl->min || n > fl->max) {
		snprintf(why, cap, "must be an integer in [%ld, %ld]", fl->min, fl->max);
		return -1;
	}
	*out = n;
	return 0;
}

static int set_int(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	long n;
	if (why_range(fl, v, &n, why, cap) < 0)
		return -1;
	*(int *)((char *)o + fl->off) = (int)n;
	return 0;
}

static int set_long(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	return why_range(fl, v, (long *)((char *)o + fl->off), why, cap);
}

static int set_grpc(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	if (set_int(o, fl, v, why, cap) < 0)
		return -1;
	((sandboxd_flags *)o)->grpc_port_set = true;
	return 0;
}

static int set_chunk(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	long n;
	if (why_range(fl, v, &n, why, cap) < 0)
		return -1;
	((sandboxd_flags *)o)->stream_chunk_size = n <= 0 ? 4096 : (size_t)n;
	return 0;
}

/* a Go duration in milliseconds, at least fl->min */
static int set_ms(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	long ms;
	if (asb_duration_parse_ms(v, &ms) < 0)
		return snprintf(why, cap, "must be a duration such as 500ms, 10s or 1m"), -1;
	if (ms < fl->min)
		return snprintf(why, cap, "must be >= %ldms", fl->min), -1;
	*(long *)((char *)o + fl->off) = ms;
	return 0;
}

static int not_empty(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)o, (void)fl;
	return *v ? 0 : (snprintf(why, cap, "must not be empty"), -1);
}

static int set_prefix(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)fl, (void)why, (void)cap;
	((sandboxd_flags *)o)->metadata_env_prefix = *v ? v : "SANDBOX_";
	return 0;
}

static int set_max_output(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)fl;
	uint64_t u;
	if (sandboxd_parse_bytes(v, &u) < 0 || u == 0)
		return snprintf(why, cap, "must be a size > 0 such as 65536, 512Ki, 8Mi or 1Gi"), -1;
	((sandboxd_flags *)o)->max_output_bytes = u;
	return 0;
}

static int set_max_upload(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)fl;
	uint64_t u;
	if (sandboxd_parse_bytes(v, &u) < 0)
		return snprintf(why, cap, "must be a size such as 0, 100Mi or 2Gi"), -1;
	((sandboxd_flags *)o)->max_upload_bytes = u;
	return 0;
}

#define OFF(field) offsetof(sandboxd_flags, field)
#define RANGED(name_, fn_, field_, arg_, lo_, hi_, help_) \
	{ .name = (name_), .kind = ASB_FLAG_CUSTOM, .off = OFF(field_), .arg = (arg_), \
	  .help = (help_), .set = (fn_), .min = (lo_), .max = (hi_) }

/* One row per flag, in --help order. */
static const asb_flag table[] = {
	ASB_FLAG_FN("listen-host", ASB_FLAG_STRING_REF, OFF(listen_host), "HOST",
	  "bind host of both listeners (default 127.0.0.1;\n0.0.0.0 to be reachable from the router)",
	  not_empty),
	RANGED("rest-port", set_int, rest_port, "N", 1, 65535,
	  "REST files API and process API (default 8080)"),
	RANGED("runtime-port", set_int, runtime_port, "N", 0, 65535,
	  "python-runtime API (default 8888; 0: off)"),
	RANGED("grpc-port", set_grpc, grpc_port, "N", 1, 65535,
	  "accepted for upstream manifests, unused: no gRPC here,\n"
	  "processes are served over HTTP on --rest-port"),
	ASB_FLAG("root-dir", ASB_FLAG_STRING_REF, OFF(root_dir), "DIR",
	  "sandbox root, created 0755 if missing (default\n$SANDBOX_BASE_DIR, else /workspace)"),
	ASB_FLAG_FN("metadata-env-prefix", ASB_FLAG_CUSTOM, 0, "P",
	  "env prefix shown by /v1/metadata (default SANDBOX_)", set_prefix),
	RANGED("shutdown-timeout", set_ms, shutdown_timeout_ms, "D", 0, 0,
	  "graceful shutdown budget (Go duration; default 10s)"),
	RANGED("http-idle-timeout", set_ms, http_idle_timeout_ms, "D", 1, 0,
	  "keep-alive idle timeout (default 60s)"),
	RANGED("stall-timeout", set_ms, stall_timeout_ms, "D", 0, 0,
	  "a download whose client reads nothing, or a body\n"
	  "that stops arriving, this long is cut (default\n60s; 0: off)"),
	RANGED("stream-chunk-size", set_chunk, stream_chunk_size, "N", LONG_MIN, 1 << 20,
	  "bytes per streamed output event at most (default 4096;\n<= 0: 4096)"),
	RANGED("stream-keepalive", set_ms, stream_keepalive_ms, "D", 0, 0,
	  "an empty event {} on a quiet process stream this often,\n"
	  "to keep proxies open and notice clients gone (default\n10s; 0: off)"),
	RANGED("max-processes", set_int, max_processes, "N", 1, 100000,
	  "processes running at once, all APIs (default 64)"),
	ASB_FLAG_FN("max-output-bytes", ASB_FLAG_CUSTOM, 0, "SIZE",
	  "output kept per process and stream; the rest is\ndropped (default 8Mi)", set_max_output),
	RANGED("max-tasks", set_long, max_tasks, "N", 0, 1L << 22,
	  "RLIMIT_NPROC of the commands: tasks their user may\n"
	  "have at once, bounds fork bombs (default 0: inherited;\nno effect for root)"),
	RANGED("idle-keepers", set_int, idle_keepers, "N", 0, 1024,
	  "keepers kept for the next commands, per API; they\n"
	  "count as tasks (default 8; 0: a fresh keeper per\ncommand)"),
	RANGED("kill-grace", set_ms, kill_grace_ms, "D", 1, 0,
	  "SIGTERM to SIGKILL delay at a timeout (default 2s)"),
	ASB_FLAG_FN("max-upload-bytes", ASB_FLAG_CUSTOM, 0, "SIZE",
	  "largest upload or PUT body (default 0: no limit)", set_max_upload),
	ASB_LOG_FLAG_ROWS(OFF(log)),
	ASB_ZAP_FLAG_ROWS(OFF(log)),
	ASB_FLAG("version", ASB_FLAG_ACTION, 0, NULL, "print the version and exit"),
	{ .name = "help", .kind = ASB_FLAG_ACTION, .help = "this text", .short_opt = 'h' },
	ASB_FLAGS_END,
};

static void usage(FILE *f)
{
	static const asb_flags_layout lay = { .width = 27, .overflow_gap = 2 };
	fprintf(f,
"Usage: " PROG " [flags]\n"
"\n"
"The runtime inside a sandbox pod: runs commands and serves the files under\n"
"--root-dir, over HTTP (the python-runtime API and sandboxd's REST API).\n"
"\n"
"Flags:\n");
	asb_flags_usage(f, table, &lay);
}

int sandboxd_flags_parse(int argc, char **argv, sandboxd_flags *f)
{
	bool seen[sizeof(table) / sizeof(table[0])] = { false };
	asb_flags_result r;
	if (asb_flags_parse(table, ASB_FLAGS_GO, f, argc, argv, seen, &r) != ASB_OK) {
		/* the message names the flag as given */
		fprintf(stderr, PROG ": %s\n", asb_error_last()->message);
		return -1;
	}
	if (r.status == ASB_FLAGS_ACTION) {
		if (!strcmp(r.flag->name, "version"))
			printf(PROG " %s\n", SANDBOXD_VERSION);
		else
			usage(stdout);
		return 1;
	}
	asb_log_flags_finish(&f->log);  /* --zap-devel */
	bool root_set = seen[asb_flags_find(table, "root-dir", 8) - table];
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
