/*
 * client.h - the client side of agent-sandbox: connect to a cluster, ask a
 * warm pool for a sandbox by creating a SandboxClaim, wait until it is
 * Ready, find, list and delete claims.
 *
 * This is the C core under the Python SDK (sdk-python/, through ctypes)
 * and any other client: the claim it writes and the way it waits are those
 * of the upstream SDKs (docs/upstream.md#sandboxclient to #readiness-wait, #sdk-exceptions), the objects those
 * of docs/api.md#sandboxclaim-and-sandboxwarmpool and #claim-controller. What to do with a sandbox once it is there
 * (run commands, move files) is sandbox/handle.h; the pure parts (the claim
 * manifest, reading a claim's conditions) are sandbox/clientclaim.h.
 *
 * Errors: every function returns 0 or a negative code, ASB_E* from
 * k8s/common.h or SBX_E* below; asb_error_last() holds the calling
 * thread's message (it names the claim and the cause), the API reason or
 * the claim condition's reason in `reason`, and an HTTP status where there
 * was one. sbx_strerror() names any code.
 *
 * Threads: an sbx_client may be used from any number of threads at once;
 * the Kubernetes calls share its libk8s client (k8s/client.h).
 */
#ifndef SANDBOX_CLIENT_H
#define SANDBOX_CLIENT_H

#include <stdatomic.h>
#include <stdint.h>
#include "k8s/client.h"
#include "asb/log.h"
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Error codes of the client side of libsandbox, beside libk8s' ASB_E*
 * (which keep their meaning: ASB_ETIMEOUT a wait ran out, ASB_ENOTFOUND an
 * object is gone, ASB_EINVAL a bad argument, ASB_ECANCELED a cancelled
 * wait). The claim's terminal reasons (docs/api.md#claim-conditions) each have their
 * own code, so a caller can tell them apart without parsing messages; for
 * those, asb_error_last()->reason is the condition's reason and the
 * message carries the condition's message.
 */
typedef enum {
	SBX_ETEMPLATENOTFOUND = -100,  /**< Ready=False, reason TemplateNotFound */
	SBX_EWARMPOOLNOTFOUND = -101,  /**< a condition with reason WarmPoolNotFound */
	SBX_EINVALIDMETADATA = -102,   /**< Ready=False, reason InvalidMetadata */
	SBX_EENVREJECTED = -103,       /**< Ready=False, reason EnvVarsInjectionRejected */
	SBX_EVOLUMECLAIMTEMPLATES = -104, /**< Ready=False, reason VolumeClaimTemplatesError */
	SBX_ECLAIMEXPIRED = -105,      /**< Ready=False, reason ClaimExpired */
	SBX_ESANDBOXEXPIRED = -106,    /**< Ready=False, reason SandboxExpired */
	SBX_ECLAIMDELETED = -107,      /**< the claim was deleted while waiting */
	SBX_EREQUEST = -110,           /**< the router or the sandbox answered an
	                                *   error status (asb_error_last()->http_status)
	                                *   or could not be reached (http_status 0) */
	SBX_EPORTFORWARD = -111,       /**< the local tunnel (kubectl port-forward)
	                                *   could not start or died */
	SBX_ECLOSED = -112,            /**< the handle was closed or terminated */
	SBX_EUNSUPPORTED = -113,       /**< not offered by the sandbox's runtime */
	SBX_ERESPONSE = -114,          /**< the sandbox's answer is not what the
	                                *   runtime API defines (bad JSON, fields) */
	SBX_ENOSERVICE = -115,         /**< in-cluster by Service: the Sandbox has
	                                *   no status.serviceFQDN */
	SBX_ENOPODIP = -116            /**< in-cluster by pod IP: the Sandbox's
	                                *   status has no pod IP yet */
} sbx_error_code;

/**
 * A static, human-readable name for `code`: SBX_E* codes here, any other
 * value as asb_strerror(). Never NULL; pure; thread-safe.
 */
SBX_EXTERN const char *sbx_strerror(int code);

/**
 * True for the codes of a claim that failed for good
 * (docs/upstream.md#readiness-wait "terminal reasons": SBX_EINVALIDMETADATA, SBX_EENVREJECTED,
 * SBX_EVOLUMECLAIMTEMPLATES, SBX_ECLAIMEXPIRED, SBX_ESANDBOXEXPIRED),
 * which upstream reports as SandboxClaimFailedError. TemplateNotFound and
 * WarmPoolNotFound have exceptions of their own and are not in this set.
 * Pure; thread-safe.
 */
SBX_EXTERN bool sbx_error_is_claim_failure(int code);

/**
 * Initialises what libsandbox's client builds on: k8s_global_init()
 * (libcurl). Call once before the first sbx_client_new(), before other
 * threads start; pair with sbx_global_cleanup(). Calls nest. Returns >= 1
 * or ASB_ERROR (recorded).
 */
SBX_EXTERN int sbx_global_init(void);

/** Undoes one sbx_global_init() (k8s_global_cleanup()). */
SBX_EXTERN void sbx_global_cleanup(void);

/** Opaque connection to one cluster. Free with sbx_client_free(). */
typedef struct sbx_client sbx_client;

#define SBX_CLIENT_OPTIONS_VERSION 1

/**
 * Options of sbx_client_new(); initialise with SBX_CLIENT_OPTIONS_INIT or
 * sbx_client_options_init(). All strings are copied.
 */
typedef struct {
	unsigned int version;        /**< SBX_CLIENT_OPTIONS_VERSION */
	const char *kubeconfig;      /**< kubeconfig file (kubectl's --kubeconfig);
	                              *   NULL or "": in-cluster config when this
	                              *   runs in a pod, else $KUBECONFIG (merged),
	                              *   else ~/.kube/config, as the upstream
	                              *   SDKs and kubectl do */
	const char *context;         /**< context name; NULL: current-context */
	bool in_cluster;             /**< use the in-cluster config only */
	long request_timeout_ms;     /**< each API request, per try (default 30000) */
	int api_connections;         /**< API connection shards, 1..64 (default 2:
	                              *   watches of concurrent creates share the
	                              *   streams of HTTP/2 connections) */
	double qps;                  /**< client-side API rate limit; <= 0: none
	                              *   (default -1) */
	int burst;                   /**< with qps > 0 (default 10) */
	asb_logger *logger;          /**< borrowed; NULL: silent */
	const char *user_agent;      /**< NULL: "agent-sandbox-client/<version>" */
	int api_max_retries;         /**< tries after the first of an API request
	                              *   that failed retryably (k8s_client_options'
	                              *   max_retries); < 0: libk8s' default (4) */
} sbx_client_options;

#define SBX_CLIENT_OPTIONS_INIT { .version = SBX_CLIENT_OPTIONS_VERSION, \
	.request_timeout_ms = 30000, .api_connections = 2, .qps = -1, .burst = 10, \
	.api_max_retries = -1 }

/** Fills `opts` with the defaults (ASB_EINVAL for an unknown version). */
SBX_EXTERN int sbx_client_options_init(sbx_client_options *opts, unsigned int version);

/**
 * Connects to a cluster (builds the libk8s config and client; no request
 * is sent yet). The application must have called sbx_global_init().
 *
 * @param out   receives the client; free it with sbx_client_free().
 * @param opts  NULL for defaults.
 * @return 0; ASB_EINVAL (bad options); ASB_ECONFIG (no usable kubeconfig
 *         or in-cluster config: the message says which file or variable);
 *         ASB_ENOMEM; ASB_ERROR.
 */
SBX_EXTERN int sbx_client_new(sbx_client **out, const sbx_client_options *opts);

/**
 * Releases the caller's reference. The client goes when its last handle
 * (sbx_handle_free()) has gone too; no call may be in flight on it from
 * the caller. NULL is accepted.
 */
SBX_EXTERN void sbx_client_free(sbx_client *c);

/** The kubeconfig context's namespace ("default" when unset). Owned by `c`. */
SBX_EXTERN const char *sbx_client_namespace(const sbx_client *c);

/**
 * The kubeconfig file the client was built from, or "" (in-cluster, or
 * $KUBECONFIG / ~/.kube/config). Owned by `c`. For tools the client
 * starts (kubectl port-forward) that must reach the same cluster.
 */
SBX_EXTERN const char *sbx_client_kubeconfig(const sbx_client *c);

/** The context the client was built with, or "". Owned by `c`. */
SBX_EXTERN const char *sbx_client_context(const sbx_client *c);

/** The libk8s client underneath (borrowed), for calls of k8s/client.h. */
SBX_EXTERN k8s_client *sbx_client_k8s(sbx_client *c);

/** A label or annotation of a claim: both strings borrowed. */
typedef struct {
	const char *key;
	const char *value;
} sbx_kv;

#define SBX_CLAIM_OPTIONS_VERSION 1

/**
 * What to ask for: the SandboxClaim (docs/upstream.md#claim-manifest) and how long to
 * wait for it. Initialise with SBX_CLAIM_OPTIONS_INIT or
 * sbx_claim_options_init(). Strings and arrays are borrowed for the call.
 */
typedef struct {
	unsigned int version;        /**< SBX_CLAIM_OPTIONS_VERSION */
	const char *warm_pool;       /**< required: spec.warmPoolRef.name (the
	                              *   pool's template serves cold starts) */
	const char *ns;              /**< namespace; NULL: the client's */
	const char *name;            /**< claim name; NULL: sandbox-claim-<8 random
	                              *   hex digits>, as upstream */
	const sbx_kv *labels;        /**< claim labels (validated here) */
	size_t nlabels;
	const sbx_kv *annotations;   /**< extra claim annotations */
	size_t nannotations;
	int64_t shutdown_after_seconds; /**< > 0: spec.lifecycle.shutdownTime =
	                              *   now + N s, shutdownPolicy below; 0: no
	                              *   lifecycle; < 0 is ASB_EINVAL */
	const char *shutdown_policy; /**< NULL: "Delete" (what the SDKs write) */
	const char *volume_claim_templates_json; /**< NULL, or a JSON array of
	                              *   PVC templates {metadata:{name},spec:{...}}
	                              *   for spec.volumeClaimTemplates */
	const sbx_kv *pod_labels;    /**< spec.additionalPodMetadata.labels */
	size_t npod_labels;
	const sbx_kv *pod_annotations; /**< spec.additionalPodMetadata.annotations */
	size_t npod_annotations;
	const sbx_kv *env;           /**< spec.env: {name, value} for the first
	                              *   main container; forces a cold start and
	                              *   needs a template that allows it (docs/api.md#env-injection) */
	size_t nenv;
	const char *created_by;      /**< label agents.x-k8s.io/created-by; NULL:
	                              *   "python-client", one of the values the
	                              *   controller keeps on the Pod (docs/api.md#labels) */
	long ready_timeout_ms;       /**< sbx_client_create(): the whole wait for
	                              *   Ready (default 180000, upstream's
	                              *   sandbox_ready_timeout), counted in whole
	                              *   seconds as upstream does */
	bool keep_on_failure;        /**< sbx_client_create(): leave the claim in
	                              *   place when the wait fails (default false:
	                              *   it is deleted, as upstream always does) */
	const atomic_int *cancel;    /**< NULL, or a flag that, once non-zero,
	                              *   ends the wait with ASB_ECANCELED (seen
	                              *   within a second; the claim is then
	                              *   deleted unless keep_on_failure) */
} sbx_claim_options;

#define SBX_CLAIM_OPTIONS_INIT { .version = SBX_CLAIM_OPTIONS_VERSION, .ready_timeout_ms = 180000 }

/** Fills `opts` with the defaults (ASB_EINVAL for an unknown version). */
SBX_EXTERN int sbx_claim_options_init(sbx_claim_options *opts, unsigned int version);

/** What a Ready claim resolved to. Free with sbx_claim_info_free(). */
typedef struct {
	char *ns;                    /**< namespace of the claim */
	char *claim_name;            /**< the SandboxClaim */
	char *sandbox_name;          /**< status.sandbox.name: the Sandbox, also
	                              *   the router's X-Sandbox-ID */
	char *pod_ip;                /**< from status.sandbox.podIPs (IPv4
	                              *   preferred), or NULL */
	char *resource_version;      /**< of the claim when it was read */
	double created_at;           /**< sbx_client_create(): when the API server
	                              *   answered the claim's create, POSIX
	                              *   seconds (the wait began then; tracing
	                              *   splits the call there); else 0 */
} sbx_claim_info;

/** Frees an sbx_claim_info and its strings; NULL is accepted. */
SBX_EXTERN void sbx_claim_info_free(sbx_claim_info *info);

/**
 * Creates a SandboxClaim and waits until it is Ready
 * (docs/upstream.md#sandboxclient to #readiness-wait): the claim of sbx_claim_build() is POSTed, then one watch on it
 * (fieldSelector metadata.name, from the create's resourceVersion; resumed
 * where it stopped, from "0" after 410 Gone) runs until `status.sandbox.name`
 * is set and the Ready condition is True. It fails fast, as soon as the
 * controller reports it, on TemplateNotFound, WarmPoolNotFound and the
 * terminal reasons (sbx_claim_outcome()), never polling. On any failure
 * the claim is deleted (unless `opts->keep_on_failure`).
 *
 * @param out   receives the resolved claim; free with sbx_claim_info_free().
 * @return 0;
 *   ASB_EINVAL: no warm pool, an invalid label or annotation key or label
 *     value (the message quotes apimachinery), shutdown_after_seconds < 0,
 *     volume_claim_templates_json not a JSON array;
 *   SBX_ETEMPLATENOTFOUND, SBX_EWARMPOOLNOTFOUND, SBX_EINVALIDMETADATA,
 *     SBX_EENVREJECTED, SBX_EVOLUMECLAIMTEMPLATES, SBX_ECLAIMEXPIRED,
 *     SBX_ESANDBOXEXPIRED: the claim failed (reason and message recorded);
 *   SBX_ECLAIMDELETED: someone deleted the claim meanwhile;
 *   ASB_ETIMEOUT: not Ready within ready_timeout_ms (message "Could not
 *     resolve claim readiness from claim '<c>' within <n> seconds.");
 *   ASB_ECANCELED: `opts->cancel` was set;
 *   any API or transport code of the create or the watch (the claim is
 *     still deleted when it had been created).
 * Thread-safe.
 */
SBX_EXTERN int sbx_client_create(sbx_client *c, const sbx_claim_options *opts,
                                 sbx_claim_info **out);

/**
 * Creates the claim only (no wait): what sbx_client_create() sends.
 * `*out` (may be NULL) receives the claim the API server returned; free it
 * with cJSON_Delete(). Returns 0, ASB_EINVAL as above, or the API code
 * (ASB_EALREADYEXISTS for a taken name). Thread-safe.
 */
SBX_EXTERN int sbx_client_create_claim(sbx_client *c, const sbx_claim_options *opts,
                                       cJSON **out);

/**
 * Waits on one watch until claim `ns`/`name` resolves, as in
 * sbx_client_create() but without creating or deleting anything. With
 * `need_ready` false it returns as soon as `status.sandbox.name` is set
 * (upstream's resolve-only mode); the fail-fast reasons apply either way.
 * The claim is read first, so a claim that does not exist is ASB_ENOTFOUND
 * at once rather than a timeout; `cancel` may be NULL. `timeout_ms` is
 * counted in whole seconds (less than one left: ASB_ETIMEOUT); the timeout
 * message says "claim readiness" or, with need_ready false, "sandbox
 * name". Returns as sbx_client_create(), plus ASB_ENOTFOUND. Thread-safe.
 */
SBX_EXTERN int sbx_client_wait_claim(sbx_client *c, const char *ns, const char *name,
                                     bool need_ready, long timeout_ms,
                                     const atomic_int *cancel, sbx_claim_info **out);

/**
 * Deletes claim `ns`/`name` (background propagation: the garbage
 * collector then removes its Sandbox, Pod and Service). Returns 0,
 * ASB_ENOTFOUND when it is already gone (callers that tolerate it, like
 * upstream's terminate(), ignore that code), or an API/transport code.
 * Thread-safe.
 */
SBX_EXTERN int sbx_client_delete_claim(sbx_client *c, const char *ns, const char *name);

/**
 * The names of the SandboxClaims in `ns` (NULL: the client's namespace)
 * that match `label_selector` (NULL or "": all), in the API server's
 * order (upstream's list_all_sandboxes()). `*names` is a NULL-terminated
 * array the caller frees with sbx_strv_free(); `*count` (may be NULL) gets
 * its length. Returns 0 or an API/transport code. Thread-safe.
 */
SBX_EXTERN int sbx_client_list_claims(sbx_client *c, const char *ns, const char *label_selector,
                                      char ***names, size_t *count);

/**
 * The warm pool claim `ns`/`name` refers to (`spec.warmPoolRef.name`) into
 * `*out`, a new string the caller frees with free(). ASB_ENOTFOUND when
 * the claim does not exist; ASB_EDECODE when it names no pool.
 */
SBX_EXTERN int sbx_client_claim_warm_pool(sbx_client *c, const char *ns, const char *name,
                                          char **out);

/** Frees a NULL-terminated string array of this library; NULL is accepted. */
SBX_EXTERN void sbx_strv_free(char **v);

/** Frees memory this library handed out (strings, buffers); NULL is accepted. */
SBX_EXTERN void sbx_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
