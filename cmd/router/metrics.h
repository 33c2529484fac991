/*
 * metrics.h - the router's Prometheus metrics, with the Go router's names
 * and labels (docs/upstream.md#router-observability), plus the connection gauges of this
 * implementation:
 *   sandbox_router_requests_total{method,code,sandbox_namespace}
 *   sandbox_router_request_duration_seconds{method,code,sandbox_namespace}
 *   sandbox_router_inflight_requests
 *   sandbox_router_upstream_errors_total{sandbox_namespace,reason}
 *   sandbox_router_upstream_retries_total{sandbox_namespace}
 *   sandbox_router_cache_invalidations_total{sandbox_namespace}
 *   sandbox_router_authz_decisions_total{sandbox_namespace,decision}
 *   sandbox_router_cert_reloads_total{outcome}
 *   sandbox_router_build_info{git_version,git_commit,build_date,go_version,compiler,platform}
 *   sandbox_router_upstream_connections{state="active"|"idle"} (ours)
 * and ours for idle Sandboxes (docs/router.md#idle-sandboxes):
 *   sandbox_router_activity_writes_total{result="ok"|"not_found"|"error"}
 *   sandbox_router_activity_tracked
 *   sandbox_router_activity_publish_lag_seconds (histogram)
 *   sandbox_router_resumes_total{result="ok"|"not_found"|"error"}
 *   sandbox_router_resume_hold_seconds{result="ready"|"timeout"|"gone"|"drain"|"other"}
 * No per-sandbox labels. Every label value an outside party chooses is
 * bounded, or any client could grow memory and every scrape without limit
 * (one attack reached 231 k series, a 387 MB scrape):
 * - sandbox_namespace (a client header, before authorization): "-" when
 *   the request had no valid namespace, "_other" for a namespace first
 *   seen after RT_METRICS_MAX_NAMESPACES others;
 * - method (the client's): the methods of RFC 9110 §9 and PATCH, else
 *   "OTHER" (rt_metrics_method());
 * - code (often the sandbox's): the registered status codes, else the
 *   class, "2xx" ... "5xx" (rt_metrics_code());
 * - and each family labelled by namespace holds at most
 *   RT_METRICS_MAX_SERIES series: past that, new ones count under
 *   sandbox_namespace "_other" with their other labels (bounded above), so
 *   a family never exceeds RT_METRICS_MAX_SERIES plus those combinations.
 * Every function is thread-safe.
 */
#ifndef RT_METRICS_H
#define RT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include "asb/metrics.h"

typedef struct rt_metrics rt_metrics;

/** Distinct sandbox_namespace values kept; later new ones count as "_other". */
#define RT_METRICS_MAX_NAMESPACES 1000

/** Series of one namespace-labelled family before new ones fold into
 *  sandbox_namespace "_other" (a duration series is ~2 KiB of a scrape). */
#define RT_METRICS_MAX_SERIES 2000

/** The method label of `method`: itself when one of GET, HEAD, POST, PUT,
 *  DELETE, CONNECT, OPTIONS, TRACE, PATCH, else "OTHER". Static strings. */
const char *rt_metrics_method(const char *method);

/** The code label of status `code` in `buf` (>= 8 bytes), returned: the
 *  number for a status registered by RFC 9110 / 6585 / 7725 (and 499, the
 *  router's "client went first"), else its class "1xx" ... "5xx", "other"
 *  outside 100..599. */
const char *rt_metrics_code(int code, char *buf, size_t cap);

/** Build facts for sandbox_router_build_info (borrowed strings). */
typedef struct {
	const char *version, *commit, *date, *compiler, *platform;
} rt_build_info;

/** Registers the families in `reg` (borrowed; outlives the handle). 0 or ASB_E*. */
int rt_metrics_new(rt_metrics **out, asb_metrics_registry *reg, const rt_build_info *bi);
void rt_metrics_free(rt_metrics *m);

/** One finished request: its method, status code, namespace label and duration. */
void rt_metrics_request(rt_metrics *m, const char *method, int code, const char *ns,
                        double seconds);
/**
 * What one loop thread last resolved its label sets to: a request's
 * counter and histogram series, an authorization verdict's counter. A loop
 * serving requests alike then skips the lookups (label checks, key, lock,
 * hash) that rt_metrics_request and rt_metrics_authz make. Zero it before
 * first use; one per thread, never shared. Series live as long as the
 * registry, so the memo stays valid while `m` does.
 */
typedef struct {
	const rt_metrics *m;
	const char *method;              /* rt_metrics_method()'s static name */
	int code;
	char ns[64];
	asb_metric_series *requests, *duration;
	const rt_metrics *authz_m;
	bool allow;
	char authz_ns[64];
	asb_metric_series *authz;
} rt_metrics_memo;

/** rt_metrics_request through `memo` (the calling thread's). */
void rt_metrics_request_memo(rt_metrics *m, rt_metrics_memo *memo, const char *method, int code,
                             const char *ns, double seconds);
/** rt_metrics_authz through `memo` (the calling thread's). */
void rt_metrics_authz_memo(rt_metrics *m, rt_metrics_memo *memo, const char *ns, bool allow);
/** A request starts (+1) or ends (-1). */
void rt_metrics_inflight(rt_metrics *m, int delta);
/** An upstream failure; reason is timeout, tls, eof, dial or other. */
void rt_metrics_upstream_error(rt_metrics *m, const char *ns, const char *reason);
/** A connect retried. */
void rt_metrics_retry(rt_metrics *m, const char *ns);
/** An authorization verdict. */
void rt_metrics_authz(rt_metrics *m, const char *ns, bool allow);
/** Upstream connections: state "active" or "idle", delta +1/-1. */
void rt_metrics_upstream_conn(rt_metrics *m, const char *state, int delta);

/** The result label of an activity or resume write answered `rc` (0 or
 *  an ASB_E* code): "ok", "not_found" or "error". Static strings. */
const char *rt_metrics_write_result(int rc);
/** One activity write (the last-activity patch) that returned `rc`. */
void rt_metrics_activity_write(rt_metrics *m, int rc);
/** Sandboxes whose activity is tracked now. */
void rt_metrics_activity_tracked(rt_metrics *m, size_t n);
/** One last-activity write sent `seconds` after it became due (rt_activity_due_at()). */
void rt_metrics_activity_lag(rt_metrics *m, double seconds);
/** One resume patch that returned `rc`. */
void rt_metrics_resume(rt_metrics *m, int rc);
/**
 * A request held while its Sandbox resumed, for `seconds`, and how the
 * hold ended: "ready" (forwarded), "timeout" (504), "gone" (the client
 * left), "drain" (503 at shutdown), anything else counts as "other".
 */
void rt_metrics_resume_hold(rt_metrics *m, const char *result, double seconds);

#endif
