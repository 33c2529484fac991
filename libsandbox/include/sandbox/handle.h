/*
 * handle.h - one sandbox, as a client uses it: how to reach it (through
 * the sandbox router: a direct URL, a Gateway, or a local kubectl tunnel;
 * or straight at the pod from inside the cluster), run a command in it,
 * and write, read, list and probe its files.
 *
 * The wire is the upstream one: the router contract of docs/upstream.md#router
 * (X-Sandbox-ID, X-Sandbox-Namespace, X-Sandbox-Port, X-Sandbox-Pod-IP,
 * X-Sandbox-Timeout) in front of the python-runtime API of docs/upstream.md#python-runtime-api (POST
 * /execute, POST /upload, GET /download/, /list/, /exists/), requested the
 * way the Python SDK does (docs/upstream.md#connector, #commands-and-files), so a handle works with upstream's
 * router and runtimes as with this project's. Bodies are streamed: an
 * upload reads from a buffer, a file descriptor or a callback, a download
 * writes to a file descriptor or a callback, so a file of any size moves
 * in bounded memory.
 *
 * Errors are sandbox/client.h's. Threads: a handle may be used from any
 * number of threads at once (requests run on pooled connections, the
 * cached router URL and pod IP sit behind a lock); sbx_handle_free() must
 * not race with other calls on the handle.
 */
#ifndef SANDBOX_HANDLE_H
#define SANDBOX_HANDLE_H

#include <stdint.h>
#include <sys/types.h>
#include "sandbox/client.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How a handle reaches its sandbox (docs/upstream.md#connection-configs). */
typedef enum {
	/** kubectl port-forward to svc/sandbox-router-svc port 8080 in
	 *  `router_namespace`, on a free local port (upstream's default) */
	SBX_CONNECT_LOCAL_TUNNEL = 0,
	/** the address of Gateway `gateway_name` (gateway.networking.k8s.io/v1,
	 *  first valid status.addresses[].value, port 80) */
	SBX_CONNECT_GATEWAY = 1,
	/** the router at `api_url` */
	SBX_CONNECT_DIRECT = 2,
	/** http://<pod IP>:<server_port>, else the per-sandbox Service DNS name;
	 *  no router, no router headers */
	SBX_CONNECT_IN_CLUSTER = 3
} sbx_connect_mode;

/**
 * Which address SBX_CONNECT_IN_CLUSTER takes (upstream 1.0.8's
 * SandboxdInClusterConnectionConfig modes).
 */
typedef enum {
	/** the pod IP of the Sandbox's status.podIPs, else the Service DNS name
	 *  `<sandbox>.<ns>.svc.cluster.local` (SandboxInClusterConnectionConfig) */
	SBX_IN_CLUSTER_ANY = 0,
	/** the pod IP only ("in-cluster-pod-ip"); none yet: SBX_ENOPODIP */
	SBX_IN_CLUSTER_POD_IP = 1,
	/** the Sandbox's status.serviceFQDN only ("in-cluster-service"); none:
	 *  SBX_ENOSERVICE */
	SBX_IN_CLUSTER_SERVICE = 2
} sbx_in_cluster_address;

/**
 * Told how working out the way to the sandbox went, once per attempt:
 * the Gateway's address wait (GATEWAY), the kubectl tunnel's start
 * (LOCAL_TUNNEL) or the Sandbox lookup (IN_CLUSTER); DIRECT has none.
 * `rc` is 0 or the error code the request then fails with, `elapsed_ms`
 * the time the attempt took (monotonic clock). Called on the thread of
 * the request that needed the address while the handle's other requests
 * wait for that address: it must be quick and must not call into the
 * handle. The thread's last error (asb_error_last()) is kept across it. Upstream's SDK times the same
 * step for its sandbox_client_discovery_latency_ms histogram.
 */
typedef void (*sbx_connect_fn)(void *userdata, sbx_connect_mode mode, int rc,
                               double elapsed_ms);

/** Version 2 added in_cluster_address, on_connect and on_connect_userdata;
 *  version 1 structs (without them) are still accepted. */
#define SBX_CONNECTION_OPTIONS_VERSION 2

/**
 * How to reach sandboxes; initialise with SBX_CONNECTION_OPTIONS_INIT or
 * sbx_connection_options_init(). Strings are copied by sbx_handle_new().
 */
typedef struct {
	unsigned int version;          /**< SBX_CONNECTION_OPTIONS_VERSION */
	sbx_connect_mode mode;         /**< default SBX_CONNECT_LOCAL_TUNNEL */
	const char *api_url;           /**< DIRECT: the router's base URL, http(s) */
	const char *gateway_name;      /**< GATEWAY: required */
	const char *gateway_namespace; /**< GATEWAY: NULL: "default" */
	long gateway_ready_timeout_ms; /**< GATEWAY: wait for an address (180000) */
	const char *router_namespace;  /**< LOCAL_TUNNEL: NULL: "agent-sandbox-system"
	                                *   (a DNS-1123 label) */
	long port_forward_ready_timeout_ms; /**< LOCAL_TUNNEL: wait for the local
	                                *   port to accept (30000) */
	const char *kubectl;           /**< LOCAL_TUNNEL: the kubectl to run; NULL:
	                                *   $AGENT_SANDBOX_KUBECTL, else "kubectl"
	                                *   on PATH */
	int server_port;               /**< the runtime's port in the pod, sent as
	                                *   X-Sandbox-Port (8888, python-runtime) */
	int max_retries;               /**< tries after the first (5, as upstream's
	                                *   urllib3 Retry(total=5)): any request
	                                *   whose connection could not be made;
	                                *   GET, PUT and DELETE also on 500, 502,
	                                *   503, 504 or a failure after sending.
	                                *   A POST (run, write) that went out is
	                                *   never repeated (upstream 1.0.8) */
	long retry_backoff_ms;         /**< waits 0, 2b, 4b, 8b, 16b... between tries
	                                *   (b = 500: 0, 1, 2, 4, 8 s as upstream) */
	long connect_timeout_ms;       /**< TCP connect to the router (10000) */
	/* version 2 */
	sbx_in_cluster_address in_cluster_address; /**< IN_CLUSTER: which address
	                                *   (SBX_IN_CLUSTER_ANY) */
	sbx_connect_fn on_connect;     /**< may be NULL (none) */
	void *on_connect_userdata;     /**< passed to on_connect; not owned */
} sbx_connection_options;

#define SBX_CONNECTION_OPTIONS_INIT { .version = SBX_CONNECTION_OPTIONS_VERSION, \
	.mode = SBX_CONNECT_LOCAL_TUNNEL, .gateway_ready_timeout_ms = 180000, \
	.port_forward_ready_timeout_ms = 30000, .server_port = 8888, .max_retries = 5, \
	.retry_backoff_ms = 500, .connect_timeout_ms = 10000 }

/** Fills `opts` with the defaults of `version` (1 or 2; a version 1
 *  struct is filled only as far as it goes); ASB_EINVAL for another. */
SBX_EXTERN int sbx_connection_options_init(sbx_connection_options *opts,
                                           unsigned int version);

/** Opaque handle on one sandbox. Free with sbx_handle_free(). */
typedef struct sbx_handle sbx_handle;

/**
 * A handle on the sandbox `sandbox_id` bound to claim `claim_name` in `ns`
 * (as sbx_client_create() or sbx_client_wait_claim() resolved them).
 * Nothing is contacted yet: the router URL (tunnel, gateway) is set up on
 * the first request. `pod_ip` (may be NULL) seeds the X-Sandbox-Pod-IP
 * header; without it the pod IP is read from the Sandbox's status before
 * requests until found.
 *
 * The handle keeps a reference to `client`, which stays usable until the
 * handle is freed even if the caller frees the client first.
 *
 * @return 0; ASB_EINVAL (empty names, DIRECT without api_url or with a URL
 *         that is not http(s), GATEWAY without a name, an invalid
 *         router_namespace, a port outside 1-65535, negative retries, an
 *         unknown version or in_cluster_address); ASB_ENOMEM.
 */
SBX_EXTERN int sbx_handle_new(sbx_handle **out, sbx_client *client, const char *ns,
                              const char *claim_name, const char *sandbox_id,
                              const char *pod_ip, const sbx_connection_options *conn);

/**
 * Creates a claim, waits for it (sbx_client_create()) and returns a handle
 * on its sandbox, seeded with the claim's pod IP: upstream's
 * create_sandbox(). Returns as sbx_client_create() and sbx_handle_new().
 */
SBX_EXTERN int sbx_handle_create(sbx_handle **out, sbx_client *client,
                                 const sbx_claim_options *claim,
                                 const sbx_connection_options *conn);

/**
 * Frees the handle: closes its connection (sbx_handle_close()) but leaves
 * the claim (use sbx_handle_terminate() first to delete it). NULL is
 * accepted. No other call on the handle may be in flight.
 */
SBX_EXTERN void sbx_handle_free(sbx_handle *h);

/** The claim's name (borrowed; "" once terminated). */
SBX_EXTERN const char *sbx_handle_claim_name(const sbx_handle *h);
/** The Sandbox's name, the router's X-Sandbox-ID (borrowed). */
SBX_EXTERN const char *sbx_handle_sandbox_id(const sbx_handle *h);
/** The namespace (borrowed). */
SBX_EXTERN const char *sbx_handle_namespace(const sbx_handle *h);

/**
 * True until sbx_handle_close() or sbx_handle_terminate(). Thread-safe.
 */
SBX_EXTERN bool sbx_handle_is_active(sbx_handle *h);

/**
 * The pod's name: the Sandbox's `agents.x-k8s.io/pod-name` annotation
 * (a warm-pool sandbox's pod keeps its pool name), else the sandbox name;
 * read once and cached until close. `*out` is a new string (sbx_free()).
 * Returns 0, ASB_ENOTFOUND (no such Sandbox) or an API code.
 */
SBX_EXTERN int sbx_handle_pod_name(sbx_handle *h, char **out);

/**
 * The pod's IP as the Sandbox's status.podIPs says now (sbx_pick_pod_ip()),
 * read anew on each call. `*out` is a new string (sbx_free()), or NULL
 * when the status has none. Returns 0, ASB_ENOTFOUND or an API code.
 */
SBX_EXTERN int sbx_handle_pod_ip(sbx_handle *h, char **out);

/** States of sbx_handle_status(), upstream's Sandbox.status(). */
typedef enum {
	SBX_STATE_READY = 0,      /**< "SandboxReady" */
	SBX_STATE_NOT_READY = 1,  /**< "SandboxNotReady" */
	SBX_STATE_NOT_FOUND = 2   /**< "SandboxNotFound" */
} sbx_state;

/**
 * Reads the Sandbox's Ready condition: `*state` and, in `*message` (may be
 * NULL; sbx_free()), the condition's message, or a short explanation
 * when there is none or the Sandbox is gone. Returns 0 (a missing Sandbox
 * is SBX_STATE_NOT_FOUND, not an error) or an API/transport code.
 */
SBX_EXTERN int sbx_handle_status(sbx_handle *h, sbx_state *state, char **message);

/**
 * Closes the connection: the tunnel (kubectl ends with SIGTERM, SIGKILL
 * after 2 s), pooled HTTP connections, the cached router URL and pod IP.
 * Later requests fail with SBX_ECLOSED (upstream disables the command and
 * file engines). Idempotent; thread-safe.
 */
SBX_EXTERN void sbx_handle_close(sbx_handle *h);

/**
 * Closes the handle and deletes its claim (the garbage collector removes
 * the Sandbox and Pod); a claim already gone is fine. Idempotent: the
 * claim is deleted once. Returns 0 or the API/transport code of the
 * delete (the handle is closed either way). Thread-safe.
 */
SBX_EXTERN int sbx_handle_terminate(sbx_handle *h);

/** Result of sbx_handle_run(). Free with sbx_exec_result_free(). */
typedef struct {
	char *out;          /**< stdout as the runtime returned it (UTF-8 text),
	                     *   NUL-terminated; "" when absent */
	size_t out_len;     /**< bytes, not counting the NUL */
	char *err;          /**< stderr, as `out` */
	size_t err_len;
	int exit_code;      /**< -1 when the runtime gave none (upstream default) */
} sbx_exec_result;

/** Frees a result; NULL is accepted. */
SBX_EXTERN void sbx_exec_result_free(sbx_exec_result *r);

/**
 * Runs `command` in the sandbox: POST /execute {"command": ...} (the
 * runtime splits it shell-style, no shell), with X-Sandbox-Timeout set
 * to `timeout_ms` in seconds. A command that fails or times out inside
 * the sandbox is a result (exit code, stderr), not an error.
 *
 * @param timeout_ms  the whole request, in ms (> 0; upstream's default is
 *                    60000).
 * @return 0; ASB_EINVAL (NULL or empty command, timeout <= 0);
 *   SBX_EREQUEST (error status, or no answer after the retries; the
 *   message has the URL, the status and the body's first bytes);
 *   ASB_ENOTFOUND when, after a failed request, the Sandbox turns out to
 *   be gone (the message says so: it was deleted under the client);
 *   SBX_ERESPONSE (an answer that is not an execution result);
 *   SBX_ECLOSED; SBX_EPORTFORWARD; ASB_ETIMEOUT (gateway address wait).
 */
SBX_EXTERN int sbx_handle_run(sbx_handle *h, const char *command, long timeout_ms,
                              sbx_exec_result **out);

/**
 * Reads up to `cap` bytes of an upload into `buf`; returns how many
 * (0 at the end), or -1 to abort the upload. Called on the caller's thread.
 */
typedef ssize_t (*sbx_read_fn)(void *userdata, char *buf, size_t cap);

/**
 * Takes `len` bytes of a download; returns 0 to go on, non-zero to abort
 * (the call then fails with ASB_ECANCELED). Called on the caller's thread.
 */
typedef int (*sbx_write_fn)(void *userdata, const char *buf, size_t len);

/** sbx_handle_* file flag: send the path as given, no guard (upstream's
 *  allow_unsafe_paths). */
#define SBX_FILE_ALLOW_UNSAFE_PATHS 0x1u

/**
 * Where an upload's bytes come from: exactly one of `data` (with `size`),
 * `fd` (>= 0) or `read` is used, in that order of preference.
 */
typedef struct {
	const void *data;      /**< a buffer of `size` bytes (borrowed) */
	int fd;                /**< a file descriptor read from its current
	                        *   offset to its end (or `size` bytes); -1: none */
	sbx_read_fn read;      /**< a callback; NULL: none */
	void *userdata;        /**< for `read` */
	int64_t size;          /**< bytes; -1 unknown (chunked upload) */
} sbx_upload_source;

/**
 * Writes a file in the sandbox: POST /upload, multipart/form-data with one
 * part `file` whose filename is the path (the runtime creates missing
 * directories). Unless `flags` has SBX_FILE_ALLOW_UNSAFE_PATHS, the path
 * goes through sbx_path_guard() first. The body is streamed from `src`.
 * Being a POST, it is retried only when no connection could be made
 * (then a buffer or seekable fd is rewound; a callback or pipe source that
 * was read from is not sent again).
 *
 * @return 0; ASB_EINVAL (path refused by the guard: upstream's message;
 *   no source; timeout <= 0); ASB_ECANCELED (the read callback aborted);
 *   ASB_ETRANSPORT (reading `fd` failed); otherwise as sbx_handle_run().
 */
SBX_EXTERN int sbx_handle_write(sbx_handle *h, const char *path, const sbx_upload_source *src,
                                long timeout_ms, unsigned int flags);

/**
 * Reads a file of the sandbox (GET /download/<path, percent-encoded>),
 * streaming the body to `fn` as it arrives. The path is guarded as in
 * sbx_handle_write(). `*written` (may be NULL) gets the byte count. A
 * request that failed before any byte reached `fn` is retried like the
 * others; once bytes went out, a failure is final.
 *
 * @return 0; ASB_ECANCELED (`fn` aborted); as sbx_handle_write().
 */
SBX_EXTERN int sbx_handle_read_cb(sbx_handle *h, const char *path, sbx_write_fn fn,
                                  void *userdata, long timeout_ms, unsigned int flags,
                                  int64_t *written);

/** sbx_handle_read_cb() into file descriptor `fd` (written at its offset). */
SBX_EXTERN int sbx_handle_read_fd(sbx_handle *h, const char *path, int fd, long timeout_ms,
                                  unsigned int flags, int64_t *written);

/**
 * sbx_handle_read_cb() into memory: `*data` (sbx_free(); NUL-terminated
 * for convenience) and `*len`.
 */
SBX_EXTERN int sbx_handle_read(sbx_handle *h, const char *path, long timeout_ms,
                               unsigned int flags, char **data, size_t *len);

/** One entry of sbx_handle_list() (upstream's FileEntry.from_legacy). */
typedef struct {
	char *name;         /**< entry name */
	int64_t size;       /**< bytes */
	bool is_dir;        /**< type "directory" (else "file") */
	double mod_time;    /**< POSIX seconds (0 when missing: the epoch) */
} sbx_file_entry;

/** A listing: `count` entries. Free with sbx_file_list_free(). */
typedef struct {
	sbx_file_entry *entries;
	size_t count;
} sbx_file_list;

/** Frees a listing; NULL is accepted. */
SBX_EXTERN void sbx_file_list_free(sbx_file_list *l);

/**
 * Lists a directory of the sandbox: GET /list/<path, percent-encoded>,
 * the path sent as given (no guard, as upstream). An empty answer is an
 * empty list. Returns 0, SBX_ERESPONSE (not a JSON array of entries), or
 * as sbx_handle_run().
 */
SBX_EXTERN int sbx_handle_list(sbx_handle *h, const char *path, long timeout_ms,
                               sbx_file_list **out);

/**
 * Whether a path exists in the sandbox: GET /exists/<path> and its JSON
 * field `exists` (missing: false). Returns as sbx_handle_list().
 */
SBX_EXTERN int sbx_handle_exists(sbx_handle *h, const char *path, long timeout_ms,
                                 bool *exists);

/* ---- per-call options: timeout, retries, cancellation ---- */

#define SBX_CALL_OPTIONS_VERSION 1

/**
 * How one request of sbx_handle_run_opts() and its siblings runs;
 * initialise with SBX_CALL_OPTIONS_INIT or sbx_call_options_init(). The
 * plain functions (sbx_handle_run(), ...) are these with the defaults and
 * their own timeout and flags.
 *
 * Cancellation: once `*cancel` is non-zero the call stops and returns
 * ASB_ECANCELED ("... was cancelled"). The flag is read before each try,
 * while a transfer runs (libcurl's progress callback: at once while bytes
 * move, at least about once a second while the connection is silent, as
 * during a long command) and every 50 ms of a wait between retries. Not
 * interrupted: a Kubernetes API request the call makes on the way (the
 * Sandbox read for X-Sandbox-Pod-IP or for a sandbox deleted under the
 * client; each bounded by the client's request_timeout_ms), the start of
 * the kubectl tunnel (port_forward_ready_timeout_ms) and the wait for a
 * Gateway's address (gateway_ready_timeout_ms). A cancelled POST (run,
 * write) may already have reached the sandbox: the command may run, the
 * file may be partly written. This is how a language binding maps its own
 * cancellation (a Go context, an asyncio task) onto a call: it sets the
 * flag from another thread while the call blocks.
 */
typedef struct {
	unsigned int version;      /**< SBX_CALL_OPTIONS_VERSION */
	long timeout_ms;           /**< the whole request, each try (> 0; 60000);
	                            *   sent as X-Sandbox-Timeout */
	unsigned int flags;        /**< write and read: SBX_FILE_ALLOW_UNSAFE_PATHS */
	int max_retries;           /**< tries after the first, as the connection
	                            *   options' max_retries; < 0 (default): the
	                            *   handle's */
	const atomic_int *cancel;  /**< NULL, or a flag read as above (borrowed
	                            *   for the call; another thread may set it) */
} sbx_call_options;

#define SBX_CALL_OPTIONS_INIT { .version = SBX_CALL_OPTIONS_VERSION, .timeout_ms = 60000, \
	.max_retries = -1 }

/** Fills `opts` with the defaults (ASB_EINVAL for an unknown version). */
SBX_EXTERN int sbx_call_options_init(sbx_call_options *opts, unsigned int version);

/**
 * sbx_handle_run() with call options (NULL: the defaults). Returns as
 * sbx_handle_run(), plus ASB_ECANCELED; ASB_EINVAL for an unknown options
 * version or a timeout <= 0.
 */
SBX_EXTERN int sbx_handle_run_opts(sbx_handle *h, const char *command,
                                   const sbx_call_options *opts, sbx_exec_result **out);

/**
 * sbx_handle_write() with call options (NULL: the defaults). A source
 * callback that blocks is not interrupted by the flag; the flag is read
 * again when it returns. Returns as sbx_handle_write() (ASB_ECANCELED
 * also when the callback aborted).
 */
SBX_EXTERN int sbx_handle_write_opts(sbx_handle *h, const char *path,
                                     const sbx_upload_source *src,
                                     const sbx_call_options *opts);

/**
 * sbx_handle_read_cb() with call options (NULL: the defaults). Returns as
 * sbx_handle_read_cb() (ASB_ECANCELED when `fn` aborted or the flag was
 * set; `*written` counts what `fn` took either way).
 */
SBX_EXTERN int sbx_handle_read_cb_opts(sbx_handle *h, const char *path, sbx_write_fn fn,
                                       void *userdata, const sbx_call_options *opts,
                                       int64_t *written);

/** sbx_handle_list() with call options (NULL: the defaults); plus ASB_ECANCELED. */
SBX_EXTERN int sbx_handle_list_opts(sbx_handle *h, const char *path,
                                    const sbx_call_options *opts, sbx_file_list **out);

/** sbx_handle_exists() with call options (NULL: the defaults); plus ASB_ECANCELED. */
SBX_EXTERN int sbx_handle_exists_opts(sbx_handle *h, const char *path,
                                      const sbx_call_options *opts, bool *exists);

/**
 * Upstream's path guard for write and read (docs/upstream.md#commands-and-files): refuses
 * ASCII control characters, then trims surrounding whitespace (empty:
 * refused), normalises POSIX-style (`//`, `.`, `x/..`) and strips leading
 * `/` (empty or `.`: refused), and refuses any `..` left. `/etc/passwd`
 * becomes `etc/passwd`, `a/../b` becomes `b`; `../x` is refused.
 *
 * @param out  receives the normalised path, a new string (sbx_free()).
 * @return 0; ASB_EINVAL with upstream's ValueError text ("Upload path
 *         contains ASCII control characters: '<p>'", "Upload path cannot
 *         be empty.", "Upload path '<p>' does not name a file.", "Upload
 *         path '<p>' escapes the sandbox root."); ASB_ENOMEM. Pure.
 */
SBX_EXTERN int sbx_path_guard(const char *path, char **out);

/**
 * True when `value` is a Gateway address the client accepts (docs/upstream.md#connection-configs): an IP
 * address, or a host name of at most 253 characters whose labels are
 * 1-63 characters of `[A-Za-z0-9-]` not starting or ending with `-`, with
 * no trailing dot, and not made only of numeric or `0x` hex labels (so
 * "2130706433" and "0x7f.1" are refused). Pure.
 */
SBX_EXTERN bool sbx_gateway_address_valid(const char *value);

#ifdef __cplusplus
}
#endif
#endif
