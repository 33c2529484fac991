/*
 * flags.c - sandbox-router's configuration (flags.h): one table of flags
 * drives the command line, the config file (flags_file.c) and --help, so a
 * name is spelled once. Values are checked when they are set (type, enum);
 * rt_flags_validate() does the checks across flags.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "asb/duration.h"
#include "flags_table.h"

#define PROG "sandbox-router"

static char *dup_or_null(const char *s)
{
	return strdup(s ? s : "");
}

int rt_flags_defaults(rt_flags *f)
{
	*f = (rt_flags){
		.mtls_mode = RT_MTLS_OFF,
		.proxy_timeout_ms = 180000,
		.response_header_timeout_ms = 30000,
		.shutdown_timeout_ms = 30000,
		.upstream_max_retries = 3,
		.retry_initial_delay_ms = 200,
		.retry_max_delay_ms = 800,
		.access_log = true,
		.authz_mode = RT_AUTHZ_ALLOW_ALL,
		.tokenreview_ttl_ms = 30000,
		.tokenreview_cache_size = 2048,
		.tokenreview_workers = 4,
		.tokenreview_max_pending = 1024,
		.tokenreview_max_pending_per_client = 64,
		.access_review = true,
		.log_format = ASB_LOG_JSON,
		.log_level = ASB_LOG_INFO,
		.max_header_bytes = 65536,
		.read_header_timeout_ms = 10000,
		.idle_timeout_ms = 120000,
		.max_connections = 65536,
		.upstream_idle_per_host = 64,
		.upstream_idle_timeout_ms = 90000,
		.connect_timeout_ms = 30000,
	};
	char **strs[] = { &f->http_addr, &f->https_addr, &f->metrics_addr, &f->probe_addr,
	                  &f->tls_cert_file, &f->tls_key_file, &f->tls_client_ca_file,
	                  &f->cluster_domain, &f->tokenreview_audiences,
	                  &f->scoped_token_secret_file, &f->cache_namespace, &f->kubeconfig,
	                  &f->config };
	const char *vals[] = { ":8080", "", ":9090", ":8081", "", "", "", "cluster.local", "", "",
	                       "", "", "" };
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (!(*strs[i] = dup_or_null(vals[i]))) {
			rt_flags_free(f);
			return -1;
		}
	return 0;
}

void rt_flags_free(rt_flags *f)
{
	char **strs[] = { &f->http_addr, &f->https_addr, &f->metrics_addr, &f->probe_addr,
	                  &f->tls_cert_file, &f->tls_key_file, &f->tls_client_ca_file,
	                  &f->cluster_domain, &f->tokenreview_audiences,
	                  &f->scoped_token_secret_file, &f->cache_namespace, &f->kubeconfig,
	                  &f->config };
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		free(*strs[i]);
		*strs[i] = NULL;
	}
}

/* ---- value parsers: 0, or -1 with the reason in `why` ---- */

/* Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits only. */
static int parse_i64(const char *s, int64_t *out)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return -1;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int zap_level(const char *s)
{
	if (strcasecmp(s, "debug") == 0)
		return ASB_LOG_DEBUG;
	if (strcasecmp(s, "info") == 0)
		return ASB_LOG_INFO;
	if (strcasecmp(s, "warn") == 0)
		return ASB_LOG_WARN;
	if (strcasecmp(s, "error") == 0)
		return ASB_LOG_ERROR;
	int64_t v;
	return parse_i64(s, &v) == 0 && v > 0 ? ASB_LOG_DEBUG : -1;
}

static bool one_of_ci(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (strcasecmp(s, *set) == 0)
			return true;
	return false;
}

/* ---- the table ---- */

#define OFF(field) offsetof(rt_flags, field)

const rt_flag_def rt_flag_table[] = {
	{ "http-bind-address", RT_FT_STR, OFF(http_addr), "ADDR",
	  "plain HTTP proxy listener, host:port or :port; \"\" disables (default :8080)" },
	{ "https-bind-address", RT_FT_STR, OFF(https_addr), "ADDR",
	  "TLS proxy listener; needs --tls-cert-file and --tls-key-file (default \"\": off)" },
	{ "metrics-bind-address", RT_FT_STR, OFF(metrics_addr), "ADDR",
	  "Prometheus /metrics listener; \"\" disables (default :9090)" },
	{ "health-probe-bind-address", RT_FT_STR, OFF(probe_addr), "ADDR",
	  "/healthz and /readyz listener; \"\" disables (default :8081)" },
	{ "tls-cert-file", RT_FT_STR, OFF(tls_cert_file), "PATH",
	  "PEM certificate chain of the HTTPS listener (reloaded when it changes)" },
	{ "tls-key-file", RT_FT_STR, OFF(tls_key_file), "PATH", "PEM private key of the HTTPS listener" },
	{ "tls-client-ca-file", RT_FT_STR, OFF(tls_client_ca_file), "PATH",
	  "PEM CA bundle that client certificates must chain to (--mtls-mode)" },
	{ "mtls-mode", RT_FT_MTLS, OFF(mtls_mode), "MODE",
	  "off, optional (verify when presented) or required (default off)" },
	{ "cluster-domain", RT_FT_STR, OFF(cluster_domain), "DOMAIN",
	  "DNS suffix of <id>.<ns>.svc.<domain> (default cluster.local; env CLUSTER_DOMAIN)" },
	{ "proxy-timeout", RT_FT_DUR, OFF(proxy_timeout_ms), "D",
	  "bound of a whole proxied request, body included; not upgrades (default 3m0s; env PROXY_TIMEOUT_SECONDS)" },
	{ "response-header-timeout", RT_FT_DUR, OFF(response_header_timeout_ms), "D",
	  "bound of the wait for the sandbox's response head (default 30s)" },
	{ "shutdown-timeout", RT_FT_DUR, OFF(shutdown_timeout_ms), "D",
	  "time requests in flight get to finish on SIGTERM (default 30s)" },
	{ "max-request-body-bytes", RT_FT_I64, OFF(max_request_body_bytes), "N",
	  "largest request body, larger ones get 413; 0: unlimited (default 0)" },
	{ "allow-loopback-pod-ip", RT_FT_BOOL, OFF(allow_loopback_pod_ip), NULL,
	  "accept loopback addresses in X-Sandbox-Pod-IP and the cache (default false)" },
	{ "upstream-max-retries", RT_FT_INT, OFF(upstream_max_retries), "N",
	  "retries of a failed connect to a sandbox; 0 disables (default 3)" },
	{ "upstream-retry-initial-delay", RT_FT_DUR, OFF(retry_initial_delay_ms), "D",
	  "first retry delay, doubling (default 200ms)" },
	{ "upstream-retry-max-delay", RT_FT_DUR, OFF(retry_max_delay_ms), "D",
	  "largest retry delay (default 800ms)" },
	{ "enable-tracing", RT_FT_BOOL, OFF(enable_tracing), NULL,
	  "OpenTelemetry tracing: accepted, no exporter in this build (default false)" },
	{ "enable-otel-metrics", RT_FT_BOOL, OFF(enable_otel_metrics), NULL,
	  "OTLP metrics push: accepted, no exporter in this build (default false)" },
	{ "access-log", RT_FT_BOOL, OFF(access_log), NULL, "one JSON line per request (default true)" },
	{ "authz-mode", RT_FT_AUTHZ, OFF(authz_mode), "MODE",
	  "allow-all, tokenreview or scoped-token (default allow-all)" },
	{ "authz-tokenreview-ttl", RT_FT_DUR, OFF(tokenreview_ttl_ms), "D",
	  "how long a TokenReview decision is cached (default 30s)" },
	{ "authz-tokenreview-cache-size", RT_FT_INT, OFF(tokenreview_cache_size), "N",
	  "decisions cached, least recently used evicted (default 2048)" },
	{ "authz-tokenreview-require-token", RT_FT_BOOL, OFF(tokenreview_require_token), NULL,
	  "refuse requests without a bearer token with 401 (default false)" },
	{ "authz-tokenreview-audiences", RT_FT_STR, OFF(tokenreview_audiences), "CSV",
	  "audiences the TokenReview asks for, comma-separated (default none)" },
	{ "authz-tokenreview-workers", RT_FT_INT, OFF(tokenreview_workers), "N",
	  "threads of their own that run the reviews (default 4)" },
	{ "authz-tokenreview-max-pending", RT_FT_INT, OFF(tokenreview_max_pending), "N",
	  "reviews queued or running at once, more get 503 (default 1024)" },
	{ "authz-tokenreview-max-pending-per-client", RT_FT_INT,
	  OFF(tokenreview_max_pending_per_client), "N",
	  "of those, per client address, more get 429; 0: no limit (default 64)" },
	{ "authz-namespace-access-review", RT_FT_BOOL, OFF(access_review), NULL,
	  "tokenreview: also ask a SubjectAccessReview whether the caller may get the sandbox (default true)" },
	{ "authz-scoped-token-secret-file", RT_FT_STR, OFF(scoped_token_secret_file), "PATH",
	  "HMAC key of scoped tokens, at least 32 bytes after trimming" },
	{ "cache-enabled", RT_FT_BOOL, OFF(cache_enabled), NULL,
	  "resolve sandboxes from Sandbox and Pod informer caches (default false)" },
	{ "cache-namespace", RT_FT_STR, OFF(cache_namespace), "NS",
	  "cache only this namespace (default \"\": all)" },
	{ "kubeconfig", RT_FT_STR, OFF(kubeconfig), "PATH",
	  "kubeconfig for the cache and TokenReviews (env KUBECONFIG; default in-cluster)" },
	{ "config", RT_FT_STR, OFF(config), "PATH",
	  "YAML file of flag-name: value (env SANDBOX_ROUTER_CONFIG)" },
	{ "zap-devel", RT_FT_BOOL, OFF(zap_devel), NULL,
	  "development logging: console lines at debug level (default false)" },
	{ "zap-encoder", RT_FT_ENCODER, OFF(log_format), "E", "json or console (default json)" },
	{ "zap-log-level", RT_FT_LEVEL, OFF(log_level), "L",
	  "debug, info, warn, error or an integer > 0 for debug (default info)" },
	{ "zap-stacktrace-level", RT_FT_ZAPSTACK, 0, "L", "accepted and ignored (no stack traces)" },
	{ "zap-time-encoding", RT_FT_ZAPTIME, 0, "E", "accepted and ignored (timestamps are RFC 3339)" },
	{ "max-header-bytes", RT_FT_LONG, OFF(max_header_bytes), "N",
	  "request line + header fields, larger get 431; at most 81920 (default 65536)" },
	{ "read-header-timeout", RT_FT_DUR, OFF(read_header_timeout_ms), "D",
	  "a request head must arrive whole within this (default 10s)" },
	{ "idle-timeout", RT_FT_DUR, OFF(idle_timeout_ms), "D",
	  "keep-alive client connections idle this long are closed (default 2m0s)" },
	{ "max-connections", RT_FT_INT, OFF(max_connections), "N",
	  "client connections served at once per listener (default 65536)" },
	{ "loops", RT_FT_INT, OFF(loops), "N",
	  "event-loop threads of the proxy listeners; 0: one per CPU (default 0)" },
	{ "upstream-max-idle-per-host", RT_FT_INT, OFF(upstream_idle_per_host), "N",
	  "idle keep-alive connections kept per sandbox and loop thread (default 64)" },
	{ "upstream-idle-timeout", RT_FT_DUR, OFF(upstream_idle_timeout_ms), "D",
	  "idle sandbox connections are closed after this (default 1m30s)" },
	{ "upstream-connect-timeout", RT_FT_DUR, OFF(connect_timeout_ms), "D",
	  "bound of one TCP connect to a sandbox (default 30s)" },
	{ NULL, 0, 0, NULL, NULL },
};

const rt_flag_def *rt_flag_find(const char *name, size_t len)
{
	for (const rt_flag_def *d = rt_flag_table; d->name; d++)
		if (strlen(d->name) == len && strncmp(d->name, name, len) == 0)
			return d;
	return NULL;
}

static void fmt_err(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
}

int rt_flag_set(rt_flags *f, const rt_flag_def *d, const char *v, const char *origin,
                char *err, size_t cap)
{
	char *base = (char *)f + d->off;
	const char *want = NULL;
	switch (d->type) {
	case RT_FT_STR: {
		char *copy = strdup(v);
		if (!copy) {
			want = "out of memory";
			break;
		}
		free(*(char **)base);
		*(char **)base = copy;
		return 0;
	}
	case RT_FT_BOOL:
		if (k8s_parse_bool(v, (bool *)base) < 0)
			want = "must be true or false";
		break;
	case RT_FT_DUR:
		if (asb_duration_parse_ms(v, (long *)base) < 0)
			want = "must be a duration such as 250ms, 30s or 1m30s";
		break;
	case RT_FT_INT: {
		int64_t n;
		if (parse_i64(v, &n) < 0 || n < INT_MIN || n > INT_MAX)
			want = "must be an integer";
		else
			*(int *)base = (int)n;
		break;
	}
	case RT_FT_LONG: {
		int64_t n;
		if (parse_i64(v, &n) < 0 || n < LONG_MIN || n > LONG_MAX)
			want = "must be an integer";
		else
			*(long *)base = (long)n;
		break;
	}
	case RT_FT_I64:
		if (parse_i64(v, (int64_t *)base) < 0)
			want = "must be an integer";
		break;
	case RT_FT_MTLS:
		if (strcmp(v, "off") == 0)
			f->mtls_mode = RT_MTLS_OFF;
		else if (strcmp(v, "optional") == 0)
			f->mtls_mode = RT_MTLS_OPTIONAL;
		else if (strcmp(v, "required") == 0)
			f->mtls_mode = RT_MTLS_REQUIRED;
		else
			want = "must be off, optional or required";
		break;
	case RT_FT_AUTHZ:
		if (strcmp(v, "allow-all") == 0)
			f->authz_mode = RT_AUTHZ_ALLOW_ALL;
		else if (strcmp(v, "tokenreview") == 0)
			f->authz_mode = RT_AUTHZ_TOKENREVIEW;
		else if (strcmp(v, "scoped-token") == 0)
			f->authz_mode = RT_AUTHZ_SCOPED_TOKEN;
		else
			want = "must be allow-all, tokenreview or scoped-token";
		break;
	case RT_FT_ENCODER:
		if (strcasecmp(v, "json") == 0)
			f->log_format = ASB_LOG_JSON;
		else if (strcasecmp(v, "console") == 0)
			f->log_format = ASB_LOG_TEXT;
		else
			want = "must be json or console";
		break;
	case RT_FT_LEVEL: {
		int l = zap_level(v);
		if (l < 0)
			want = "must be debug, info, warn, error or an integer > 0";
		else
			f->log_level = l, f->log_level_set = true;
		break;
	}
	case RT_FT_ZAPSTACK:
		if (!one_of_ci(v, (const char *const[]){ "info", "error", "panic", NULL }))
			want = "must be info, error or panic";
		break;
	case RT_FT_ZAPTIME:
		if (!one_of_ci(v, (const char *const[]){ "epoch", "millis", "nano", "nanos", "iso8601",
		                                         "rfc3339", "rfc3339nano", NULL }))
			want = "must be epoch, millis, nanos, iso8601, rfc3339 or rfc3339nano";
		break;
	}
	if (!want)
		return 0;
	fmt_err(err, cap, "invalid value \"%s\" for flag --%s%s%s: %s", v, d->name,
	        origin ? " in " : "", origin ? origin : "", want);
	return -1;
}

/* ---- environment ---- */

static int apply_env(rt_flags *f, bool *tracing_env, bool *metrics_env, char *err, size_t cap)
{
	const char *v = getenv("CLUSTER_DOMAIN");
	if (v && *v && rt_flag_set(f, rt_flag_find("cluster-domain", 14), v, NULL, err, cap) < 0)
		return -1;
	/* numeric seconds, fraction allowed; invalid or non-positive ignored (docs/upstream.md#router-timeouts) */
	if ((v = getenv("PROXY_TIMEOUT_SECONDS")) && *v) {
		char *end;
		errno = 0;
		double s = strtod(v, &end);
		if (!errno && end != v && !*end && isfinite(s) && s > 0 && s * 1000 < (double)LONG_MAX)
			f->proxy_timeout_ms = (long)ceil(s * 1000);
	}
	if ((v = getenv("KUBECONFIG")) && *v) {
		char *copy = strdup(v);
		if (!copy)
			return fmt_err(err, cap, "out of memory"), -1;
		free(f->kubeconfig);
		f->kubeconfig = copy;
	}
	const char *any = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	const char *tr = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	const char *me = getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
	*tracing_env = (any && *any) || (tr && *tr);
	*metrics_env = (any && *any) || (me && *me);
	return 0;
}

/* ---- command line ---- */

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: " PROG " [flags]\n\n"
	        "Reverse proxy to sandbox pods: routes each request by its X-Sandbox-ID,\n"
	        "X-Sandbox-Namespace, X-Sandbox-Port and X-Sandbox-Pod-IP headers, streaming\n"
	        "bodies both ways and tunnelling WebSocket upgrades. docs/router.md has details.\n\n"
	        "Flags (-name or --name; =value or the next argument; booleans only =value):\n");
	for (const rt_flag_def *d = rt_flag_table; d->name; d++) {
		char left[64];
		snprintf(left, sizeof(left), "--%s%s%s", d->name, d->arg ? " " : "[=B]",
		         d->arg ? d->arg : "");
		fprintf(out, "  %-40s %s\n", left, d->help);
	}
	fprintf(out, "  %-40s %s\n  %-40s %s\n", "--version", "print the version and exit",
	        "-h, --help", "print this help and exit");
}

/* The config file named in argv, Go router style: --config P, --config=P,
 * -config P, -config=P (scanned before the flags are applied). */
static const char *config_in_argv(int argc, char **argv)
{
	const char *found = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-')
			continue;
		a += a[1] == '-' ? 2 : 1;
		if (strcmp(a, "config") == 0 && i + 1 < argc)
			found = argv[++i];
		else if (strncmp(a, "config=", 7) == 0)
			found = a + 7;
	}
	return found;
}

int rt_flags_load(rt_flags *f, int argc, char **argv, FILE *out, char *err, size_t cap)
{
	bool tracing_env = false, metrics_env = false;
	bool explicit_tracing = false, explicit_metrics = false;
	if (apply_env(f, &tracing_env, &metrics_env, err, cap) < 0)
		return RT_FLAGS_ERROR;

	/* --help and --version win over everything, as with Go's flag package */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "-help") || !strcmp(a, "--help")) {
			usage(out);
			return RT_FLAGS_EXIT;
		}
		if (!strcmp(a, "-version") || !strcmp(a, "--version")) {
			fprintf(out, PROG " %s\n", AGENT_SANDBOX_VERSION);
			return RT_FLAGS_EXIT;
		}
	}

	const char *cfg = config_in_argv(argc, argv);
	if (!cfg)
		cfg = getenv("SANDBOX_ROUTER_CONFIG");
	if (cfg && *cfg) {
		rt_flag_set(f, rt_flag_find("config", 6), cfg, NULL, err, cap);
		bool seen[RT_FLAG_MAX] = { false };
		if (rt_flags_apply_file_seen(f, cfg, seen, err, cap) < 0)
			return RT_FLAGS_ERROR;
		explicit_tracing = seen[rt_flag_find("enable-tracing", 14) - rt_flag_table];
		explicit_metrics = seen[rt_flag_find("enable-otel-metrics", 19) - rt_flag_table];
	}

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			if (i + 1 < argc) {
				fmt_err(err, cap, "unexpected argument \"%s\"", argv[i + 1]);
				return RT_FLAGS_ERROR;
			}
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			fmt_err(err, cap, "unexpected argument \"%s\"", a);
			return RT_FLAGS_ERROR;
		}
		const char *name = a + (a[1] == '-' ? 2 : 1);
		const char *eq = strchr(name, '=');
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
		const rt_flag_def *d = rt_flag_find(name, nlen);
		if (!d) {
			fmt_err(err, cap, "flag provided but not defined: -%.*s", (int)nlen, name);
			return RT_FLAGS_ERROR;
		}
		const char *v;
		if (eq)
			v = eq + 1;
		else if (d->type == RT_FT_BOOL)
			v = "true";
		else if (i + 1 < argc)
			v = argv[++i];
		else {
			fmt_err(err, cap, "flag needs an argument: --%s", d->name);
			return RT_FLAGS_ERROR;
		}
		if (rt_flag_set(f, d, v, NULL, err, cap) < 0)
			return RT_FLAGS_ERROR;
		if (!strcmp(d->name, "enable-tracing"))
			explicit_tracing = true;
		if (!strcmp(d->name, "enable-otel-metrics"))
			explicit_metrics = true;
	}
	/* OTLP endpoints in the environment switch these on unless set explicitly (docs/upstream.md#router-configuration) */
	if (tracing_env && !explicit_tracing)
		f->enable_tracing = true;
	if (metrics_env && !explicit_metrics)
		f->enable_otel_metrics = true;
	if (f->zap_devel) {
		if (!f->log_level_set)
			f->log_level = ASB_LOG_DEBUG;
		f->log_format = ASB_LOG_TEXT;
	}
	return RT_FLAGS_RUN;
}

int rt_flags_validate(const rt_flags *f, char *err, size_t cap)
{
#define FAIL(...) return fmt_err(err, cap, __VA_ARGS__), -1
	if (!*f->http_addr && !*f->https_addr)
		FAIL("no proxy listener: set --http-bind-address or --https-bind-address");
	if (*f->https_addr && (!*f->tls_cert_file || !*f->tls_key_file))
		FAIL("--https-bind-address needs --tls-cert-file and --tls-key-file");
	if ((*f->tls_cert_file != 0) != (*f->tls_key_file != 0))
		FAIL("--tls-cert-file and --tls-key-file go together");
	if (f->mtls_mode != RT_MTLS_OFF && !*f->https_addr)
		FAIL("--mtls-mode needs --https-bind-address");
	if (f->mtls_mode != RT_MTLS_OFF && !*f->tls_client_ca_file)
		FAIL("--mtls-mode needs --tls-client-ca-file");
	if (f->proxy_timeout_ms <= 0)
		FAIL("invalid value for flag --proxy-timeout: must be positive");
	if (f->response_header_timeout_ms <= 0)
		FAIL("invalid value for flag --response-header-timeout: must be positive");
	if (f->shutdown_timeout_ms < 0)
		FAIL("invalid value for flag --shutdown-timeout: must not be negative");
	if (f->max_request_body_bytes < 0)
		FAIL("invalid value for flag --max-request-body-bytes: must not be negative");
	if (f->upstream_max_retries < 0)
		FAIL("invalid value for flag --upstream-max-retries: must not be negative");
	if (f->retry_initial_delay_ms < 0)
		FAIL("invalid value for flag --upstream-retry-initial-delay: must not be negative");
	if (f->retry_max_delay_ms < 0)
		FAIL("invalid value for flag --upstream-retry-max-delay: must not be negative");
	if (!*f->cluster_domain)
		FAIL("invalid value for flag --cluster-domain: must not be empty");
	if (f->tokenreview_ttl_ms <= 0)
		FAIL("invalid value for flag --authz-tokenreview-ttl: must be positive");
	if (f->tokenreview_cache_size <= 0)
		FAIL("invalid value for flag --authz-tokenreview-cache-size: must be positive");
	if (f->tokenreview_workers <= 0 || f->tokenreview_workers > 256)
		FAIL("invalid value for flag --authz-tokenreview-workers: must be 1..256");
	if (f->tokenreview_max_pending <= 0)
		FAIL("invalid value for flag --authz-tokenreview-max-pending: must be positive");
	if (f->tokenreview_max_pending_per_client < 0)
		FAIL("invalid value for flag --authz-tokenreview-max-pending-per-client: must not be negative");
	if (f->authz_mode == RT_AUTHZ_SCOPED_TOKEN && !*f->scoped_token_secret_file)
		FAIL("--authz-mode=scoped-token needs --authz-scoped-token-secret-file");
	if (f->max_header_bytes < 1024 || f->max_header_bytes > 81920)
		FAIL("invalid value for flag --max-header-bytes: must be in [1024, 81920]");
	if (f->read_header_timeout_ms <= 0)
		FAIL("invalid value for flag --read-header-timeout: must be positive");
	if (f->idle_timeout_ms <= 0)
		FAIL("invalid value for flag --idle-timeout: must be positive");
	if (f->max_connections <= 0)
		FAIL("invalid value for flag --max-connections: must be positive");
	if (f->loops < 0 || f->loops > 64)
		FAIL("invalid value for flag --loops: must be in [0, 64]");
	if (f->upstream_idle_per_host < 0)
		FAIL("invalid value for flag --upstream-max-idle-per-host: must not be negative");
	if (f->upstream_idle_timeout_ms <= 0)
		FAIL("invalid value for flag --upstream-idle-timeout: must be positive");
	if (f->connect_timeout_ms <= 0)
		FAIL("invalid value for flag --upstream-connect-timeout: must be positive");
	return 0;
#undef FAIL
}

char **rt_flags_audiences(const rt_flags *f)
{
	size_t n = 0, cap = 4;
	char **v = calloc(cap + 1, sizeof(*v));
	if (!v)
		return NULL;
	const char *p = f->tokenreview_audiences;
	while (p && *p) {
		const char *comma = strchr(p, ',');
		const char *end = comma ? comma : p + strlen(p);
		const char *s = p;
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		const char *e = end;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e > s) {
			if (n == cap) {
				char **nv = realloc(v, (cap * 2 + 1) * sizeof(*v));
				if (!nv)
					return rt_strv_free(v), NULL;
				v = nv;
				cap *= 2;
			}
			if (!(v[n] = strndup(s, (size_t)(e - s))))
				return rt_strv_free(v), NULL;
			v[++n] = NULL;
		}
		p = comma ? comma + 1 : NULL;
	}
	if (!n) {
		free(v);
		return NULL;
	}
	return v;
}

void rt_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

const char *rt_authz_mode_name(rt_authz_mode m)
{
	switch (m) {
	case RT_AUTHZ_TOKENREVIEW: return "tokenreview";
	case RT_AUTHZ_SCOPED_TOKEN: return "scoped-token";
	default: return "allow-all";
	}
}
