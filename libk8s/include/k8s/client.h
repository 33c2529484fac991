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
 * once; each call borrows a connection from an internal pool.
 */
#ifndef K8S_CLIENT_H
#define K8S_CLIENT_H

#include <stdatomic.h>
#include <cjson/cJSON.h>
#include "k8s/common.h"
#include "k8s/config.h"
#include "k8s/log.h"
#include "k8s/resource.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque client handle. */
typedef struct k8s_client k8s_client;

#define K8S_CLIENT_OPTIONS_VERSION 1

/** Client options; initialise with K8S_CLIENT_OPTIONS_INIT. */
typedef struct {
	unsigned int version;     /**< K8S_CLIENT_OPTIONS_VERSION */
	long timeout_ms;          /**< per-request timeout (not watches); 0: none */
	long connect_timeout_ms;  /**< TCP+TLS connect timeout; 0: 10 s */
	const char *user_agent;   /**< NULL: "libk8s/<version>" */
	k8s_logger *logger;       /**< borrowed; NULL: silent */
} k8s_client_options;

#define K8S_CLIENT_OPTIONS_INIT { K8S_CLIENT_OPTIONS_VERSION, 30000, 10000, NULL, NULL }

/** Fills `opts` with defaults; returns K8S_EINVAL for an unknown version. */
K8S_EXTERN int k8s_client_options_init(k8s_client_options *opts,
                                       unsigned int version);

/**
 * Creates a client for `cfg` (copied; the caller keeps ownership of cfg).
 * `opts` may be NULL for defaults. The application must have called
 * k8s_global_init() first. Returns 0, K8S_EINVAL, K8S_ENOMEM or
 * K8S_ECONFIG (e.g. a server URL that can not be parsed).
 *
 * Connections are kept alive and reused between calls. With a token file
 * (in-cluster, or `tokenFile` in a kubeconfig) the client reads the file
 * again whenever it changes, so rotated tokens are picked up.
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

#define K8S_LIST_OPTIONS_INIT { K8S_LIST_OPTIONS_VERSION, NULL, NULL, 0, NULL, NULL, 0, false }

#define K8S_WRITE_OPTIONS_VERSION 1

/** Options of create, update and patch; all fields optional. */
typedef struct {
	unsigned int version;        /**< K8S_WRITE_OPTIONS_VERSION */
	const char *field_manager;   /**< fieldManager query parameter */
	bool dry_run;                /**< dryRun=All */
	bool force;                  /**< force=true (server-side apply only) */
} k8s_write_options;

#define K8S_WRITE_OPTIONS_INIT { K8S_WRITE_OPTIONS_VERSION, NULL, false, false }

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

#define K8S_DELETE_OPTIONS_INIT { K8S_DELETE_OPTIONS_VERSION, NULL, -1, NULL, NULL, false }

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
 * - the return value is 0 or a negative k8s_error_code; API errors carry
 *   the Status message, reason and HTTP code in k8s_error_last(), and the
 *   message names the resource kind, namespace and name.
 * Transport failures return K8S_ETRANSPORT or K8S_ETIMEOUT; an answer that
 * is not JSON returns K8S_EDECODE.
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

/** POST a new object (`generateName` honoured by the server). */
K8S_EXTERN int k8s_client_create(k8s_client *c, const k8s_resource *r,
                                 const char *ns, const cJSON *obj,
                                 const k8s_write_options *opts, cJSON **out);

/**
 * PUT an object (name from obj.metadata.name). The resourceVersion in the
 * object makes this an optimistic-concurrency write: a stale one yields
 * K8S_ECONFLICT.
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
 * (K8S_ETIMEOUT). Event lines are limited to 64 MiB (K8S_EDECODE beyond).
 *
 * @return 0 when the stream ended normally or `fn` stopped it;
 *         K8S_ECANCELED when cancelled; K8S_EGONE when the server says the
 *         resourceVersion is too old (HTTP 410 or an ERROR event with code
 *         410: relist); other API/transport codes otherwise. An ERROR event
 *         is never passed to `fn`: it ends the watch with its decoded code.
 */
K8S_EXTERN int k8s_client_watch(k8s_client *c, const k8s_resource *r,
                                const char *ns, const k8s_list_options *opts,
                                k8s_watch_fn fn, void *userdata,
                                const atomic_int *cancel);

#ifdef __cplusplus
}
#endif
#endif
