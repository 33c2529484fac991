/*
 * client.h - the REST client: get, list, create, update, patch, delete and
 * watch any resource, with API errors decoded from the Status object.
 *
 * Objects travel as cJSON trees (https://github.com/DaveGamble/cJSON). The
 * semantics are those of the Kubernetes API conventions
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/): a 409 with
 * reason Conflict means the resourceVersion was stale, AlreadyExists means a
 * create collided, 410 Gone means a watch must relist.
 *
 * Thread-safety: one k8s_client may be used from any number of threads at
 * once; calls run on the client's connection shards (see k8s_client_new()).
 */
#ifndef K8S_CLIENT_H
#define K8S_CLIENT_H

#include <stdatomic.h>
#include <cjson/cJSON.h>
#include "k8s/common.h"
#include "k8s/config.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "k8s/ratelimit.h"
#include "k8s/resource.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque client handle. */
typedef struct k8s_client k8s_client;

#define K8S_CLIENT_OPTIONS_VERSION 3

/**
 * Client options; initialise with K8S_CLIENT_OPTIONS_INIT (or
 * k8s_client_options_init()). Fields after `logger` came with version 2,
 * `metrics` with version 3: a caller built against an older version keeps
 * working, with the defaults of the fields it does not know.
 */
typedef struct {
	unsigned int version;     /**< K8S_CLIENT_OPTIONS_VERSION */
	long timeout_ms;          /**< per-request timeout (not watches), per try; 0: none */
	long connect_timeout_ms;  /**< TCP+TLS connect timeout; 0: 10 s */
	const char *user_agent;   /**< NULL: "libk8s/<version>" */
	asb_logger *logger;       /**< borrowed; NULL: silent */
	/* version 2 */
	double qps;               /**< client-side limit on non-watch requests
	                           *   per second (every try counts), as
	                           *   upstream's --kube-api-qps; <= 0: none
	                           *   (default -1) */
	int burst;                /**< requests admitted at once before pacing
	                           *   (--kube-api-burst, default 10); >= 1
	                           *   when qps > 0 */
	k8s_ratelimiter *ratelimiter; /**< borrowed limiter shared with other
	                           *   clients; overrides qps and burst; NULL:
	                           *   the client's own, from qps and burst */
	int api_connections;      /**< connection shards for non-watch requests,
	                           *   1..64, round-robin (--api-connections,
	                           *   default 1; 0 means 1) */
	bool separate_watch_connection; /**< lists and watches get a shard of
	                           *   their own (--separate-watch-connection) */
	int max_retries;          /**< tries after the first for a retryable
	                           *   failure (default 4; 0: none) */
	long max_retry_delay_ms;  /**< bound of one backoff or Retry-After wait
	                           *   (0: 10000) */
	long exec_timeout_ms;     /**< longest run of an exec credential plugin
	                           *   (0: 60000) */
	/* version 3 */
	asb_metrics_registry *metrics; /**< borrowed; NULL: no metrics. Records
	                           *   client-go's rest_client_requests_total
	                           *   {code,method,host} (every try, watches
	                           *   too; code "<error>" without an answer)
	                           *   and rest_client_request_duration_seconds
	                           *   {verb,host} (not watches). Must outlive
	                           *   the client. */
} k8s_client_options;

#define K8S_CLIENT_OPTIONS_INIT { .version = K8S_CLIENT_OPTIONS_VERSION, \
	.timeout_ms = 30000, .connect_timeout_ms = 10000, .qps = -1, .burst = 10, \
	.api_connections = 1, .max_retries = 4, .max_retry_delay_ms = 10000, \
	.exec_timeout_ms = 60000 }

/**
 * Fills `opts` with the defaults of options `version` (1 up to
 * K8S_CLIENT_OPTIONS_VERSION: an older struct is shorter, only its fields
 * are written). Returns 0, or ASB_EINVAL for an unknown version.
 */
K8S_EXTERN int k8s_client_options_init(k8s_client_options *opts,
                                       unsigned int version);

/**
 * Creates a client for `cfg` (copied; the caller keeps ownership of cfg).
 * `opts` may be NULL for defaults. The application must have called
 * k8s_global_init() first.
 *
 * Transport (https://kubernetes.io/docs/reference/using-api/api-concepts/):
 * - HTTP/2 is used when TLS negotiates it (ALPN; kube-apiserver offers it),
 *   else HTTP/1.1. The client starts `api_connections` connection shards
 *   (one thread each; plus one with `separate_watch_connection`); requests
 *   are spread over them round-robin, and the concurrent requests of a
 *   shard share one connection as HTTP/2 streams (a second connection opens
 *   only past 100 concurrent streams, or with HTTP/1.1). Connections stay
 *   open and are reused.
 * - With `separate_watch_connection`, LISTs and WATCHes (what an informer
 *   does) use their own shard and so never share a connection with writes;
 *   otherwise a watch is one more stream on a request shard.
 * - The rate limiter (qps/burst or `ratelimiter`) delays every non-watch
 *   try; a try that would wait past `timeout_ms` fails with ASB_ETIMEOUT.
 * - A failed try is sent again, after 100 ms doubling (+ up to 20% jitter)
 *   or the server's Retry-After (RFC 9110; seconds or a date), each wait at
 *   most `max_retry_delay_ms`, `max_retries` times at most: any request
 *   that could not connect or got 429 Too Many Requests (not processed);
 *   and, when sending twice changes nothing, after a broken connection or
 *   500, 502, 503, 504: GET (get, list), DELETE, PUT whose object carries a
 *   resourceVersion (update, update_status) and update_scale. POST and
 *   PATCH are not sent twice. A retried DELETE may answer ASB_ENOTFOUND
 *   when the first try had succeeded.
 * - Server warnings (the `Warning: 299 - "text"` headers of RFC 7234) are
 *   logged at warn level, once per distinct text per client.
 *
 * Credentials: a token file (in-cluster, or `tokenFile`) is read again
 * whenever it changes, so rotated tokens are picked up. An exec credential
 * plugin is run on the first request and its credential cached until its
 * expirationTimestamp, or until the server answers 401 (the request is
 * then sent once more with a fresh credential); one run at a time, at most
 * `exec_timeout_ms` long. Tokens are never logged.
 *
 * @return 0; ASB_EINVAL (bad options: an unknown version, qps NaN, burst < 1
 *         with a qps, api_connections out of range, max_retries < 0);
 *         ASB_ENOMEM; ASB_ECONFIG (a server URL that can not be parsed);
 *         ASB_ERROR (a connection thread could not be started).
 */
K8S_EXTERN int k8s_client_new(k8s_client **out, const k8s_config *cfg,
                              const k8s_client_options *opts);

/** Frees a client; NULL is accepted. No call may be in flight. */
K8S_EXTERN void k8s_client_free(k8s_client *c);

/** The namespace of the client's context ("default" if unset). */
K8S_EXTERN const char *k8s_client_namespace(const k8s_client *c);

#define K8S_LIST_OPTIONS_VERSION 1

/** Options of list and watch; all fields optional (0 / NULL). */
typedef struct {
	unsigned int version;          /**< K8S_LIST_OPTIONS_VERSION */
	const char *label_selector;    /**< e.g. "app=x,tier!=db" */
	const char *field_selector;    /**< e.g. "metadata.name=x" */
	long limit;                    /**< page size; 0: server default (all) */
	const char *continue_token;    /**< from a previous page's metadata.continue */
	const char *resource_version;  /**< list/watch from this version */
	long timeout_seconds;          /**< server-side watch timeout; 0: none */
	bool allow_watch_bookmarks;    /**< ask for BOOKMARK events */
} k8s_list_options;

#define K8S_LIST_OPTIONS_INIT { .version = K8S_LIST_OPTIONS_VERSION }

#define K8S_WRITE_OPTIONS_VERSION 1

/** Options of create, update and patch; all fields optional. */
typedef struct {
	unsigned int version;        /**< K8S_WRITE_OPTIONS_VERSION */
	const char *field_manager;   /**< fieldManager query parameter */
	bool dry_run;                /**< dryRun=All */
	bool force;                  /**< force=true (server-side apply only) */
} k8s_write_options;

#define K8S_WRITE_OPTIONS_INIT { .version = K8S_WRITE_OPTIONS_VERSION }

#define K8S_DELETE_OPTIONS_VERSION 1

/** Options of delete (meta/v1 DeleteOptions); all fields optional. */
typedef struct {
	unsigned int version;               /**< K8S_DELETE_OPTIONS_VERSION */
	const char *propagation_policy;     /**< "Background", "Foreground", "Orphan" */
	long grace_period_seconds;          /**< -1: server default */
	const char *precondition_uid;       /**< delete only this UID */
	const char *precondition_resource_version; /**< delete only this version */
	bool dry_run;                       /**< dryRun=All */
} k8s_delete_options;

#define K8S_DELETE_OPTIONS_INIT { .version = K8S_DELETE_OPTIONS_VERSION, .grace_period_seconds = -1 }

/** Patch content types (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/). */
typedef enum {
	K8S_PATCH_MERGE = 0,      /**< application/merge-patch+json (RFC 7386) */
	K8S_PATCH_JSON = 1,       /**< application/json-patch+json (RFC 6902) */
	K8S_PATCH_STRATEGIC = 2,  /**< application/strategic-merge-patch+json (core kinds) */
	K8S_PATCH_APPLY = 3       /**< application/apply-patch+yaml (server-side apply; needs field_manager) */
} k8s_patch_type;

/*
 * Common to the verbs below:
 * - `ns` is the namespace (ignored for cluster-scoped resources). For the
 *   verbs on one object, NULL or "" means the object's own
 *   metadata.namespace (create, update) or else the client's default
 *   namespace (k8s_client_namespace()); for list and watch it means all
 *   namespaces;
 * - `out`, when not NULL, receives the object the server returned, which
 *   the caller frees with cJSON_Delete(); it is set to NULL on error;
 * - the return value is 0 or a negative asb_error_code; API errors carry
 *   the Status message, reason and HTTP code in asb_error_last(), and the
 *   message names the resource kind, namespace and name.
 * Transport failures return ASB_ETRANSPORT or ASB_ETIMEOUT; an answer that
 * is not JSON returns ASB_EDECODE.
 */

/** GET one object. */
K8S_EXTERN int k8s_client_get(k8s_client *c, const k8s_resource *r,
                              const char *ns, const char *name, cJSON **out);

/**
 * LIST a collection (`ns` NULL: all namespaces). `*out` is the List object
 * (`items`, `metadata.resourceVersion`, `metadata.continue`). One page only:
 * pass `metadata.continue` back in opts->continue_token for the next.
 */
K8S_EXTERN int k8s_client_list(k8s_client *c, const k8s_resource *r,
                               const char *ns, const k8s_list_options *opts,
                               cJSON **out);

/**
 * LIST a whole collection, following `metadata.continue` page after page
 * (https://kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks),
 * and return one List: `*out` holds every item of every page in order,
 * the final page's `metadata.resourceVersion` (a consistent snapshot: watch
 * from it), and no `continue`. `opts->limit` is the page size (0: 500);
 * selectors apply to every page; `opts->resource_version` to the first
 * page only (the server rejects it with a continue token);
 * `opts->continue_token` resumes an earlier paged list. When a continue
 * token expires mid-way (410, the snapshot was compacted), the list starts
 * over as one unpaged request, as client-go's pager does.
 *
 * `out` is required. Returns as k8s_client_list().
 */
K8S_EXTERN int k8s_client_list_all(k8s_client *c, const k8s_resource *r,
                                   const char *ns, const k8s_list_options *opts,
                                   cJSON **out);

/** POST a new object (`generateName` honoured by the server). */
K8S_EXTERN int k8s_client_create(k8s_client *c, const k8s_resource *r,
                                 const char *ns, const cJSON *obj,
                                 const k8s_write_options *opts, cJSON **out);

/**
 * PUT an object (name from obj.metadata.name). The resourceVersion in the
 * object makes this an optimistic-concurrency write: a stale one yields
 * ASB_ECONFLICT.
 */
K8S_EXTERN int k8s_client_update(k8s_client *c, const k8s_resource *r,
                                 const char *ns, const cJSON *obj,
                                 const k8s_write_options *opts, cJSON **out);

/** PUT the status subresource of an object (name from obj.metadata.name). */
K8S_EXTERN int k8s_client_update_status(k8s_client *c, const k8s_resource *r,
                                        const char *ns, const cJSON *obj,
                                        const k8s_write_options *opts,
                                        cJSON **out);

/**
 * PATCH an object, or its `subresource` (e.g. "status"; NULL for the
 * object itself). `patch` is the patch document (a JSON object for merge,
 * strategic and apply, an array of operations for JSON patch).
 */
K8S_EXTERN int k8s_client_patch(k8s_client *c, const k8s_resource *r,
                                const char *ns, const char *name,
                                const char *subresource, k8s_patch_type type,
                                const cJSON *patch,
                                const k8s_write_options *opts, cJSON **out);

/**
 * GET the scale subresource of an object (apps/v1 Deployments,
 * StatefulSets and ReplicaSets, core/v1 ReplicationControllers, and custom
 * resources whose CRD enables it). `*out` is an autoscaling/v1 Scale:
 * `spec.replicas`, `status.replicas`, `status.selector`.
 */
K8S_EXTERN int k8s_client_get_scale(k8s_client *c, const k8s_resource *r,
                                    const char *ns, const char *name,
                                    cJSON **out);

/**
 * Sets `spec.replicas` (>= 0) through the scale subresource, with a JSON
 * merge patch of the Scale (what `kubectl scale` sends). Setting an
 * absolute count is idempotent, so this write is retried like a GET.
 * `*out`, when not NULL, is the resulting Scale. ASB_EINVAL for
 * replicas < 0; otherwise returns as k8s_client_patch().
 */
K8S_EXTERN int k8s_client_update_scale(k8s_client *c, const k8s_resource *r,
                                       const char *ns, const char *name,
                                       int32_t replicas,
                                       const k8s_write_options *opts,
                                       cJSON **out);

/** DELETE an object. `opts` may be NULL. `out` may be NULL. */
K8S_EXTERN int k8s_client_delete(k8s_client *c, const k8s_resource *r,
                                 const char *ns, const char *name,
                                 const k8s_delete_options *opts, cJSON **out);

/** Watch event types (meta/v1 WatchEvent.type). */
typedef enum {
	K8S_WATCH_ADDED = 0,
	K8S_WATCH_MODIFIED = 1,
	K8S_WATCH_DELETED = 2,
	K8S_WATCH_BOOKMARK = 3
} k8s_watch_event_type;

/**
 * Called once per watch event, on the thread that called
 * k8s_client_watch(). The callback takes ownership of `object` (free it
 * with cJSON_Delete() or keep it). Return 0 to go on, non-zero to end the
 * watch (k8s_client_watch() then returns 0).
 */
typedef int (*k8s_watch_fn)(k8s_watch_event_type type, cJSON *object,
                            void *userdata);

/**
 * Streams a watch (GET ...?watch=1) and calls `fn` per event until the
 * server ends the stream (e.g. after opts->timeout_seconds), `fn` returns
 * non-zero, or `*cancel` becomes non-zero (checked at least once a second).
 * `cancel` may be NULL.
 *
 * A watch has no request timeout (it may be idle for minutes); TCP
 * keepalive detects a dead peer, and when opts->timeout_seconds is set the
 * client also gives up 60 s after the server should have ended the stream
 * (ASB_ETIMEOUT). Event lines are limited to 64 MiB (ASB_EDECODE beyond).
 *
 * @return 0 when the stream ended normally or `fn` stopped it;
 *         ASB_ECANCELED when cancelled; ASB_EGONE when the server says the
 *         resourceVersion is too old (HTTP 410 or an ERROR event with code
 *         410: relist); other API/transport codes otherwise. An ERROR event
 *         is never passed to `fn`: it ends the watch with its decoded code.
 */
K8S_EXTERN int k8s_client_watch(k8s_client *c, const k8s_resource *r,
                                const char *ns, const k8s_list_options *opts,
                                k8s_watch_fn fn, void *userdata,
                                const atomic_int *cancel);

#define K8S_CLIENT_STATS_VERSION 1

/** What a client has done since it was created; see k8s_client_stats_get(). */
typedef struct {
	unsigned int version;        /**< set by the caller: K8S_CLIENT_STATS_VERSION */
	uint64_t requests;           /**< HTTP requests sent: every try, watches too */
	uint64_t retries;            /**< tries sent again after a retryable failure */
	uint64_t throttled;          /**< tries the rate limiter delayed */
	uint64_t throttle_wait_ms;   /**< total delay from the rate limiter, in ms */
	uint64_t connections;        /**< TCP (+TLS) connections opened */
	uint64_t http2;              /**< answers received over HTTP/2 */
	uint64_t credential_runs;    /**< exec credential plugin runs */
	uint64_t warnings;           /**< distinct server Warning texts logged */
} k8s_client_stats;

/**
 * Copies the client's counters into `*out`, whose `version` the caller
 * sets. Counters only grow; each is read atomically, the set is not one
 * snapshot. Thread-safe. Returns 0 or ASB_EINVAL (NULL argument, unknown
 * version).
 */
K8S_EXTERN int k8s_client_stats_get(k8s_client *c, k8s_client_stats *out);

#ifdef __cplusplus
}
#endif
#endif
