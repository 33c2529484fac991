/*
 * flags.h - the configuration of sandbox-router: command-line flags, the
 * YAML config file and the environment, with the Go router's names,
 * defaults, precedence and validation (docs/upstream.md#router-listeners, #router-timeouts, #upstream-retries,
 * docs/upstream.md#router-authorization, #router-tls, #router-configuration). docs/router.md lists every flag.
 *
 * Precedence: command line > config file > environment > built-in
 * defaults. Errors name the flag (and the config file when the value came
 * from there); the caller exits 2 on them, as the Go router does.
 * Pure apart from reading the config file and the environment.
 */
#ifndef RT_FLAGS_H
#define RT_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "asb/log_flags.h"

typedef enum {
	RT_AUTHZ_ALLOW_ALL = 0,     /**< every request allowed (default, legacy) */
	RT_AUTHZ_TOKENREVIEW = 1,   /**< bearer token checked with a TokenReview */
	RT_AUTHZ_SCOPED_TOKEN = 2   /**< HMAC token bound to one sandbox (authz.h) */
} rt_authz_mode;

typedef enum {
	RT_MTLS_OFF = 0,            /**< no client certificate asked */
	RT_MTLS_OPTIONAL = 1,       /**< verified when presented */
	RT_MTLS_REQUIRED = 2        /**< must be presented and verify */
} rt_mtls_mode;

/** Every setting; strings are owned (rt_flags_free). "" means unset. */
typedef struct {
	/* listeners (docs/upstream.md#router-listeners) */
	char *http_addr;                 /**< --http-bind-address (:8080) */
	char *https_addr;                /**< --https-bind-address ("" = off) */
	char *metrics_addr;              /**< --metrics-bind-address (:9090; "" = off) */
	char *probe_addr;                /**< --health-probe-bind-address (:8081; "" = off) */
	/* TLS (docs/upstream.md#router-tls) */
	char *tls_cert_file, *tls_key_file, *tls_client_ca_file;
	rt_mtls_mode mtls_mode;          /**< --mtls-mode (off) */
	/* routing and upstream (docs/upstream.md#target-resolution, #router-timeouts, #upstream-retries) */
	char *cluster_domain;            /**< --cluster-domain (cluster.local; env CLUSTER_DOMAIN) */
	long proxy_timeout_ms;           /**< --proxy-timeout (180s; env PROXY_TIMEOUT_SECONDS) */
	long response_header_timeout_ms; /**< --response-header-timeout (30s) */
	long shutdown_timeout_ms;        /**< --shutdown-timeout (30s) */
	int64_t max_request_body_bytes;  /**< --max-request-body-bytes (0 = unlimited) */
	bool allow_loopback_pod_ip;      /**< --allow-loopback-pod-ip (false) */
	int upstream_max_retries;        /**< --upstream-max-retries (3) */
	long retry_initial_delay_ms;     /**< --upstream-retry-initial-delay (200ms) */
	long retry_max_delay_ms;         /**< --upstream-retry-max-delay (800ms) */
	/* observability (accepted; no OpenTelemetry exporter in this build) */
	bool enable_tracing, enable_otel_metrics;
	bool access_log;                 /**< --access-log (true) */
	/* authorization (docs/upstream.md#router-authorization) */
	rt_authz_mode authz_mode;        /**< --authz-mode (allow-all) */
	long tokenreview_ttl_ms;         /**< --authz-tokenreview-ttl (30s) */
	int tokenreview_cache_size;      /**< --authz-tokenreview-cache-size (2048) */
	int tokenreview_workers;         /**< --authz-tokenreview-workers (4; ours) */
	int tokenreview_max_pending;     /**< --authz-tokenreview-max-pending (1024; ours) */
	int tokenreview_max_pending_per_client; /**< --authz-tokenreview-max-pending-per-client (64; ours) */
	bool tokenreview_require_token;  /**< --authz-tokenreview-require-token (false) */
	char *tokenreview_audiences;     /**< --authz-tokenreview-audiences (csv) */
	bool access_review;              /**< --authz-namespace-access-review (true; ours) */
	char *scoped_token_secret_file;  /**< --authz-scoped-token-secret-file */
	/* cache (docs/upstream.md#pod-ip-cache) and cluster access */
	bool cache_enabled;              /**< --cache-enabled (false) */
	char *cache_namespace;           /**< --cache-namespace ("" = all) */
	char *kubeconfig;                /**< --kubeconfig (""; env KUBECONFIG) */
	char *config;                    /**< --config (env SANDBOX_ROUTER_CONFIG) */
	long resume_timeout_ms;          /**< --resume-timeout (120s; ours): how long a request
	                                      waits for its suspended Sandbox to resume */
	int resume_max_held;             /**< --resume-max-held (4096; ours): requests held
	                                      at once for their Sandboxes to get Ready */
	/* logging: controller-runtime's zap flags (asb/log_flags.h; JSON at info) */
	asb_log_flags log;
	/* ours (not in the Go router): limits and threads */
	long max_header_bytes;           /**< --max-header-bytes (65536) */
	long read_header_timeout_ms;     /**< --read-header-timeout (10s) */
	long idle_timeout_ms;            /**< --idle-timeout (120s) */
	int max_connections;             /**< --max-connections (65536) */
	int loops;                       /**< --loops (0 = one per CPU) */
	int upstream_idle_per_host;      /**< --upstream-max-idle-per-host (64) */
	long upstream_idle_timeout_ms;   /**< --upstream-idle-timeout (90s) */
	long connect_timeout_ms;         /**< --upstream-connect-timeout (30s) */
} rt_flags;

/** What rt_flags_load() tells the caller to do. */
enum {
	RT_FLAGS_RUN = 0,    /**< configuration complete: run */
	RT_FLAGS_EXIT = 1,   /**< --help or --version was printed: exit 0 */
	RT_FLAGS_ERROR = 2   /**< bad flag, file or value: `err` says which; exit 2 */
};

/** The built-in defaults (strings allocated; free with rt_flags_free()). */
int rt_flags_defaults(rt_flags *f);

/** Frees the strings; the struct may be reused after rt_flags_defaults(). */
void rt_flags_free(rt_flags *f);

/**
 * Builds the configuration: defaults, then the environment (CLUSTER_DOMAIN,
 * PROXY_TIMEOUT_SECONDS, KUBECONFIG, OTEL_EXPORTER_OTLP_*), then the config
 * file (--config in argv, else SANDBOX_ROUTER_CONFIG), then argv. `f` must
 * hold rt_flags_defaults(). Flags are Go-style: -name or --name, with
 * "=value" or the next argument; booleans take only "=value".
 * --help/--version print to `out` (stdout normally).
 * @return RT_FLAGS_RUN, RT_FLAGS_EXIT, or RT_FLAGS_ERROR with a message in
 *         `err` (NUL-terminated, truncated to `cap`) naming the flag.
 */
int rt_flags_load(rt_flags *f, int argc, char **argv, FILE *out, char *err, size_t cap);

/**
 * Applies the YAML config file at `path` (a top-level map of flag names to
 * scalars; unknown keys, nested values and unparsable values are errors).
 * Used by rt_flags_load(); exposed for tests. Marks the keys as explicitly
 * set. Returns 0 or -1 with the reason in `err`.
 */
int rt_flags_apply_file(rt_flags *f, const char *path, char *err, size_t cap);

/**
 * Cross-flag checks of docs/upstream.md#router-configuration (no proxy listener, HTTPS without a key pair,
 * mTLS without HTTPS or a CA, non-positive timeouts (--resume-timeout
 * included), negative limits,
 * empty cluster domain, bad TTL or cache size, scoped-token without a
 * secret file). Returns 0 or -1 with a message naming the flag in `err`.
 */
int rt_flags_validate(const rt_flags *f, char *err, size_t cap);

/**
 * The trimmed, non-empty entries of --authz-tokenreview-audiences as a
 * NULL-terminated malloc'd array of malloc'd strings (free with
 * rt_strv_free()), or NULL when there are none or on allocation failure.
 */
char **rt_flags_audiences(const rt_flags *f);

/** Frees a NULL-terminated string array; NULL accepted. */
void rt_strv_free(char **v);

/** Name of an authz mode as the flag spells it. */
const char *rt_authz_mode_name(rt_authz_mode m);

#endif
