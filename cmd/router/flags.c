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
		.log = ASB_LOG_FLAGS_INIT,
		.max_header_bytes = 65536,
		.read_header_timeout_ms = 10000,
		.idle_timeout_ms = 120000,
		.max_connections = 65536,
		.upstream_idle_per_host = 64,
		.upstream_idle_timeout_ms = 90000,
		.connect_timeout_ms = 30000,
		.resume_timeout_ms = 120000,
		.resume_max_held = 4096,
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

/* ---- setters of the enumerated flags (asb_flag_set_fn) ---- */

static int want(char *why, size_t cap, const char *msg)
{
	snprintf(why, cap, "%s", msg);
	return -1;
}

static int set_mtls(void *opts, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)fl;
	rt_flags *f = opts;
	if (strcmp(v, "off") == 0)
		f->mtls_mode = RT_MTLS_OFF;
	else if (strcmp(v, "optional") == 0)
		f->mtls_mode = RT_MTLS_OPTIONAL;
	else if (strcmp(v, "required") == 0)
		f->mtls_mode = RT_MTLS_REQUIRED;
	else
		return want(why, cap, "must be off, optional or required");
	return 0;
}

static int set_authz(void *opts, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	(void)fl;
	rt_flags *f = opts;
	if (strcmp(v, "allow-all") == 0)
		f->authz_mode = RT_AUTHZ_ALLOW_ALL;
	else if (strcmp(v, "tokenreview") == 0)
		f->authz_mode = RT_AUTHZ_TOKENREVIEW;
	else if (strcmp(v, "scoped-token") == 0)
		f->authz_mode = RT_AUTHZ_SCOPED_TOKEN;
	else
		return want(why, cap, "must be allow-all, tokenreview or scoped-token");
	return 0;
}

/* ---- the table ---- */

#define OFF(field) offsetof(rt_flags, field)

const rt_flag_def rt_flag_table[] = {
	ASB_FLAG("http-bind-address", ASB_FLAG_STRING, OFF(http_addr), "ADDR",
	  "plain HTTP proxy listener, host:port or :port; \"\" disables (default :8080)"),
	ASB_FLAG("https-bind-address", ASB_FLAG_STRING, OFF(https_addr), "ADDR",
	  "TLS proxy listener; needs --tls-cert-file and --tls-key-file (default \"\": off)"),
	ASB_FLAG("metrics-bind-address", ASB_FLAG_STRING, OFF(metrics_addr), "ADDR",
	  "Prometheus /metrics listener; \"\" disables (default :9090)"),
	ASB_FLAG("health-probe-bind-address", ASB_FLAG_STRING, OFF(probe_addr), "ADDR",
	  "/healthz and /readyz listener; \"\" disables (default :8081)"),
	ASB_FLAG("tls-cert-file", ASB_FLAG_STRING, OFF(tls_cert_file), "PATH",
	  "PEM certificate chain of the HTTPS listener (reloaded when it changes)"),
	ASB_FLAG("tls-key-file", ASB_FLAG_STRING, OFF(tls_key_file), "PATH", "PEM private key of the HTTPS listener"),
	ASB_FLAG("tls-client-ca-file", ASB_FLAG_STRING, OFF(tls_client_ca_file), "PATH",
	  "PEM CA bundle that client certificates must chain to (--mtls-mode)"),
	ASB_FLAG_FN("mtls-mode", ASB_FLAG_CUSTOM, OFF(mtls_mode), "MODE",
	  "off, optional (verify when presented) or required (default off)", set_mtls),
	ASB_FLAG("cluster-domain", ASB_FLAG_STRING, OFF(cluster_domain), "DOMAIN",
	  "DNS suffix of <id>.<ns>.svc.<domain> (default cluster.local; env CLUSTER_DOMAIN)"),
	ASB_FLAG("proxy-timeout", ASB_FLAG_DURATION_MS, OFF(proxy_timeout_ms), "D",
	  "bound of a whole proxied request, body included; not upgrades (default 3m0s; env PROXY_TIMEOUT_SECONDS)"),
	ASB_FLAG("response-header-timeout", ASB_FLAG_DURATION_MS, OFF(response_header_timeout_ms), "D",
	  "bound of the wait for the sandbox's response head (default 30s)"),
	ASB_FLAG("shutdown-timeout", ASB_FLAG_DURATION_MS, OFF(shutdown_timeout_ms), "D",
	  "time requests in flight get to finish on SIGTERM (default 30s)"),
	ASB_FLAG("max-request-body-bytes", ASB_FLAG_I64, OFF(max_request_body_bytes), "N",
	  "largest request body, larger ones get 413; 0: unlimited (default 0)"),
	ASB_FLAG("allow-loopback-pod-ip", ASB_FLAG_BOOL, OFF(allow_loopback_pod_ip), "[=B]",
	  "accept loopback addresses in X-Sandbox-Pod-IP and the cache (default false)"),
	ASB_FLAG("upstream-max-retries", ASB_FLAG_INT, OFF(upstream_max_retries), "N",
	  "retries of a failed connect to a sandbox; 0 disables (default 3)"),
	ASB_FLAG("upstream-retry-initial-delay", ASB_FLAG_DURATION_MS, OFF(retry_initial_delay_ms), "D",
	  "first retry delay, doubling (default 200ms)"),
	ASB_FLAG("upstream-retry-max-delay", ASB_FLAG_DURATION_MS, OFF(retry_max_delay_ms), "D",
	  "largest retry delay (default 800ms)"),
	ASB_FLAG("enable-tracing", ASB_FLAG_BOOL, OFF(enable_tracing), "[=B]",
	  "OpenTelemetry tracing: accepted, no exporter in this build (default false)"),
	ASB_FLAG("enable-otel-metrics", ASB_FLAG_BOOL, OFF(enable_otel_metrics), "[=B]",
	  "OTLP metrics push: accepted, no exporter in this build (default false)"),
	ASB_FLAG("access-log", ASB_FLAG_BOOL, OFF(access_log), "[=B]", "one JSON line per request (default true)"),
	ASB_FLAG_FN("authz-mode", ASB_FLAG_CUSTOM, OFF(authz_mode), "MODE",
	  "allow-all, tokenreview or scoped-token (default allow-all)", set_authz),
	ASB_FLAG("authz-tokenreview-ttl", ASB_FLAG_DURATION_MS, OFF(tokenreview_ttl_ms), "D",
	  "how long a TokenReview decision is cached (default 30s)"),
	ASB_FLAG("authz-tokenreview-cache-size", ASB_FLAG_INT, OFF(tokenreview_cache_size), "N",
	  "decisions cached, least recently used evicted (default 2048)"),
	ASB_FLAG("authz-tokenreview-require-token", ASB_FLAG_BOOL, OFF(tokenreview_require_token), "[=B]",
	  "refuse requests without a bearer token with 401 (default false)"),
	ASB_FLAG("authz-tokenreview-audiences", ASB_FLAG_STRING, OFF(tokenreview_audiences), "CSV",
	  "audiences the TokenReview asks for, comma-separated (default none)"),
	ASB_FLAG("authz-tokenreview-workers", ASB_FLAG_INT, OFF(tokenreview_workers), "N",
	  "threads of their own that run the reviews (default 4)"),
	ASB_FLAG("authz-tokenreview-max-pending", ASB_FLAG_INT, OFF(tokenreview_max_pending), "N",
	  "reviews queued or running at once, more get 503 (default 1024)"),
	ASB_FLAG("authz-tokenreview-max-pending-per-client", ASB_FLAG_INT,
	  OFF(tokenreview_max_pending_per_client), "N",
	  "of those, per client address, more get 429; 0: no limit (default 64)"),
	ASB_FLAG("authz-namespace-access-review", ASB_FLAG_BOOL, OFF(access_review), "[=B]",
	  "tokenreview: also ask a SubjectAccessReview whether the caller may get the sandbox (default true)"),
	ASB_FLAG("authz-scoped-token-secret-file", ASB_FLAG_STRING, OFF(scoped_token_secret_file), "PATH",
	  "HMAC key of scoped tokens, at least 32 bytes after trimming"),
	ASB_FLAG("cache-enabled", ASB_FLAG_BOOL, OFF(cache_enabled), "[=B]",
	  "resolve sandboxes from Sandbox and Pod informer caches (default false)"),
	ASB_FLAG("cache-namespace", ASB_FLAG_STRING, OFF(cache_namespace), "NS",
	  "cache only this namespace (default \"\": all)"),
	ASB_FLAG("resume-timeout", ASB_FLAG_DURATION_MS, OFF(resume_timeout_ms), "D",
	  "wait for a Sandbox suspended for idleness to resume, then 504; "
	  "X-Sandbox-Timeout overrides (default 2m0s)"),
	ASB_FLAG("resume-max-held", ASB_FLAG_INT, OFF(resume_max_held), "N",
	  "requests waiting for their Sandboxes to get Ready at once; past it 503 (default 4096)"),
	ASB_FLAG("kubeconfig", ASB_FLAG_STRING, OFF(kubeconfig), "PATH",
	  "kubeconfig for the cache and TokenReviews (env KUBECONFIG; default in-cluster)"),
	ASB_FLAG("config", ASB_FLAG_STRING, OFF(config), "PATH",
	  "YAML file of flag-name: value (env SANDBOX_ROUTER_CONFIG)"),
	ASB_ZAP_FLAG_ROWS(OFF(log)),
	ASB_FLAG("max-header-bytes", ASB_FLAG_LONG, OFF(max_header_bytes), "N",
	  "request line + header fields, larger get 431; at most 81920 (default 65536)"),
	ASB_FLAG("read-header-timeout", ASB_FLAG_DURATION_MS, OFF(read_header_timeout_ms), "D",
	  "a request head must arrive whole within this (default 10s)"),
	ASB_FLAG("idle-timeout", ASB_FLAG_DURATION_MS, OFF(idle_timeout_ms), "D",
	  "keep-alive client connections idle this long are closed (default 2m0s)"),
	ASB_FLAG("max-connections", ASB_FLAG_INT, OFF(max_connections), "N",
	  "client connections served at once per listener (default 65536)"),
	ASB_FLAG("loops", ASB_FLAG_INT, OFF(loops), "N",
	  "event-loop threads of the proxy listeners; 0: one per CPU (default 0)"),
	ASB_FLAG("upstream-max-idle-per-host", ASB_FLAG_INT, OFF(upstream_idle_per_host), "N",
	  "idle keep-alive connections kept per sandbox and loop thread (default 64)"),
	ASB_FLAG("upstream-idle-timeout", ASB_FLAG_DURATION_MS, OFF(upstream_idle_timeout_ms), "D",
	  "idle sandbox connections are closed after this (default 1m30s)"),
	ASB_FLAG("upstream-connect-timeout", ASB_FLAG_DURATION_MS, OFF(connect_timeout_ms), "D",
	  "bound of one TCP connect to a sandbox (default 30s)"),
	ASB_FLAGS_END,
};

const rt_flag_def *rt_flag_find(const char *name, size_t len)
{
	return asb_flags_find(rt_flag_table, name, len);
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
	char why[160];
	if (asb_flags_set(d, f, v, why, sizeof(why)) == 0)
		return 0;
	fmt_err(err, cap, "invalid value \"%s\" for flag --%s%s%s: %s", v, d->name,
	        origin ? " in " : "", origin ? origin : "", why);
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
	static const asb_flags_layout lay = { .width = 40, .overflow_gap = 1 };
	asb_flags_usage(out, rt_flag_table, &lay);
	asb_flags_usage_line(out, &lay, "--version", "print the version and exit");
	asb_flags_usage_line(out, &lay, "-h, --help", "print this help and exit");
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

/* 1 when `a` is -version or --version, bare or with a boolean value (`*on`:
 * what it asks); -1 for one with a value that is no boolean (`*bad`: the
 * value); 0 for any other word. */
static int version_word(const char *a, bool *on, const char **bad)
{
	*on = true;
	if (a[0] != '-')
		return 0;
	const char *name = a + (a[1] == '-' ? 2 : 1);
	if (strncmp(name, "version", 7) != 0 || (name[7] && name[7] != '='))
		return 0;
	if (name[7] && k8s_parse_bool(name + 8, on) < 0) {
		*bad = name + 8;
		return -1;
	}
	return 1;
}

static int load_flags(rt_flags *f, int argc, char **argv, bool tracing_env, bool metrics_env,
                      char *err, size_t cap);

int rt_flags_load(rt_flags *f, int argc, char **argv, FILE *out, char *err, size_t cap)
{
	bool tracing_env = false, metrics_env = false;
	if (apply_env(f, &tracing_env, &metrics_env, err, cap) < 0)
		return RT_FLAGS_ERROR;

	/* --help and --version win over everything. -version is a boolean as in
	 * upstream's Go router: -version=false asks for nothing, and is left out
	 * of the words parsed below (av). */
	int dropped = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "-help") || !strcmp(a, "--help")) {
			usage(out);
			return RT_FLAGS_EXIT;
		}
		bool on;
		const char *bad = NULL;
		int v = version_word(a, &on, &bad);
		if (v < 0) {
			fmt_err(err, cap, "invalid value \"%s\" for flag --version: must be true or false",
			        bad);
			return RT_FLAGS_ERROR;
		}
		if (v && on) {
			fprintf(out, PROG " %s\n", AGENT_SANDBOX_VERSION);
			return RT_FLAGS_EXIT;
		}
		dropped += v;
	}
	char **av = argv;
	if (dropped) {
		av = malloc(sizeof(*av) * (size_t)(argc + 1));
		if (!av) {
			fmt_err(err, cap, "out of memory");
			return RT_FLAGS_ERROR;
		}
		int n = 0;
		bool ended = false;
		for (int i = 0; i < argc; i++) {
			bool on;
			const char *bad;
			ended |= i > 0 && strcmp(argv[i], "--") == 0;
			if (i == 0 || ended || version_word(argv[i], &on, &bad) != 1)
				av[n++] = argv[i];
		}
		av[n] = NULL;
		argc = n;
	}
	int rc = load_flags(f, argc, av, tracing_env, metrics_env, err, cap);
	if (av != argv)
		free(av);
	return rc;
}

/* rt_flags_load() after the environment and --help/--version. */
static int load_flags(rt_flags *f, int argc, char **argv, bool tracing_env, bool metrics_env,
                      char *err, size_t cap)
{
	bool explicit_tracing = false, explicit_metrics = false;
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

	bool seen[RT_FLAG_MAX] = { false };
	asb_flags_result res;
	if (asb_flags_parse(rt_flag_table, ASB_FLAGS_GO, f, argc, argv, seen, &res) < 0) {
		if (res.status == ASB_FLAGS_BAD_VALUE)  /* rt_flag_set()'s words */
			fmt_err(err, cap, "invalid value \"%s\" for flag --%s: %s", res.value,
			        res.flag->name, res.why);
		else
			fmt_err(err, cap, "%s", asb_error_last()->message);
		return RT_FLAGS_ERROR;
	}
	explicit_tracing |= seen[rt_flag_find("enable-tracing", 14) - rt_flag_table];
	explicit_metrics |= seen[rt_flag_find("enable-otel-metrics", 19) - rt_flag_table];
	/* OTLP endpoints in the environment switch these on unless set explicitly (docs/upstream.md#router-configuration) */
	if (tracing_env && !explicit_tracing)
		f->enable_tracing = true;
	if (metrics_env && !explicit_metrics)
		f->enable_otel_metrics = true;
	asb_log_flags_finish(&f->log);  /* --zap-devel */
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
	if (f->resume_timeout_ms <= 0)
		FAIL("invalid value for flag --resume-timeout: must be positive");
	if (f->resume_max_held <= 0)
		FAIL("invalid value for flag --resume-max-held: must be positive");
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
