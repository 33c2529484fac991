/*
 * handle_internal.h - what the files behind sandbox/handle.h share: the
 * handle structure, the way to the router (connect.c), the kubectl tunnel
 * (tunnel.c) and the request engine (http.c) that the runtime verbs
 * (runtime.c) call. Private to libsandbox.
 *
 * Locking: `lock` guards every mutable field of the handle; it is never
 * held across network I/O. `connect_lock` serialises setting up the way
 * to the router (a tunnel start or a gateway wait), so that concurrent
 * first requests start one tunnel, not several.
 */
#ifndef SBX_HANDLE_INTERNAL_H
#define SBX_HANDLE_INTERNAL_H

#include <pthread.h>
#include <curl/curl.h>
#include "client_internal.h"
#include "sandbox/handle.h"

/* The router Service both SDKs tunnel to (docs/upstream.md#identifiers). */
#define SBX_ROUTER_SERVICE "sandbox-router-svc"
#define SBX_ROUTER_PORT 8080
#define SBX_ROUTER_NAMESPACE "agent-sandbox-system"
/* Idle connections a handle keeps for its next requests. */
#define SBX_HANDLE_POOL_MAX 8

typedef struct sbx_tunnel sbx_tunnel;

struct sbx_handle {
	sbx_client *client;           /* a reference (sbx__client_ref) */
	char *ns, *claim, *sandbox_id;
	sbx_connection_options conn;  /* its strings point at the copies below */
	char *api_url, *gateway_name, *gateway_ns, *router_ns, *kubectl;

	pthread_mutex_t lock;
	pthread_mutex_t connect_lock;
	bool closed;                  /* close() or terminate() was called */
	bool terminated;              /* the claim delete was sent */
	char *base_url;               /* resolved router (or pod) URL, or NULL */
	char *pod_ip;                 /* X-Sandbox-Pod-IP, once known */
	bool pod_ip_disabled;         /* the API refused us the Sandbox (401/403) */
	char *pod_name;               /* cached sbx_handle_pod_name() */
	sbx_tunnel *tunnel;           /* LOCAL_TUNNEL, once started */
	CURL *pool[SBX_HANDLE_POOL_MAX];
	int npool;
};

/* ---- the way to the router (connect.c) ---- */

/*
 * A copy of the base URL requests go to (no trailing '/'), setting up the
 * tunnel or waiting for the gateway the first time. `*router` tells
 * whether the router headers apply (every mode but IN_CLUSTER).
 */
int sbx__handle_base_url(sbx_handle *h, char **url, bool *router);

/* Forgets the base URL and stops the tunnel (after a transport failure). */
void sbx__handle_disconnect(sbx_handle *h);

/*
 * Reads the Sandbox; `*out` (may be NULL) gets it. ASB_ENOTFOUND when it
 * is gone.
 */
int sbx__handle_get_sandbox(sbx_handle *h, cJSON **out);

/* ---- the kubectl tunnel (tunnel.c) ---- */

/*
 * Runs `kubectl port-forward <target> <local>:<remote_port> -n <ns>` (with
 * the client's --kubeconfig and --context) on a free loopback port and
 * waits until the port accepts connections. SBX_EPORTFORWARD with
 * kubectl's stderr when it exits first; ASB_ETIMEOUT after
 * `ready_timeout_ms` (the process is then stopped).
 */
int sbx__tunnel_start(sbx_tunnel **out, const char *kubectl, const char *kubeconfig,
                      const char *context, const char *ns, const char *target,
                      int remote_port, long ready_timeout_ms);

/* The local port of a started tunnel. */
int sbx__tunnel_port(const sbx_tunnel *t);

/* True while kubectl runs; false (with its stderr recorded as
 * SBX_EPORTFORWARD) once it exited. */
bool sbx__tunnel_alive(sbx_tunnel *t);

/* SIGTERM, up to 2 s, then SIGKILL; reaps the process and frees `t`. */
void sbx__tunnel_stop(sbx_tunnel *t);

/* ---- requests (http.c) ---- */

typedef struct {
	const char *method;           /* "GET" or "POST" */
	const char *path;             /* after the base URL, no leading '/' */
	const char *json;             /* a JSON body, or NULL */
	const sbx_upload_source *upload; /* a multipart upload, or NULL */
	const char *filename;         /* the upload part's filename */
	long timeout_ms;
	sbx_write_fn sink;            /* stream a 2xx body here; NULL: buffer */
	void *sink_ud;
	size_t max_body;              /* limit of a buffered body */
	int max_retries;              /* tries after the first; < 0: the handle's */
	const atomic_int *cancel;     /* NULL, or the call's cancel flag
	                               * (sbx_call_options) */
} sbx_http_req;

typedef struct {
	long status;
	char *body;                   /* buffered body (NUL-terminated), or NULL */
	size_t len;
	int64_t streamed;             /* bytes handed to the sink */
} sbx_http_resp;

/*
 * Sends `req` through the router to the sandbox, with the router headers,
 * retries (connection failures and 500/502/503/504) and error mapping of
 * sandbox/handle.h. On 0 the answer is a success status (2xx, or a 3xx
 * that is not a redirect with Location); `resp->body` is the caller's to
 * free. ASB_ECANCELED once `req->cancel` is set (sbx_call_options says
 * when it is read).
 */
int sbx__http_do(sbx_handle *h, const sbx_http_req *req, sbx_http_resp *resp);

/* Frees the curl handles of the pool (handle lock held or handle dying). */
void sbx__http_pool_clear(sbx_handle *h);

/*
 * Percent-encodes every byte outside `A-Za-z0-9_.-~` (Python's
 * quote(path, safe='')): a new string, or NULL when out of memory.
 */
char *sbx__path_encode(const char *path);

#endif
