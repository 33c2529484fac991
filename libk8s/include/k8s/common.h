/*
 * common.h - export macro, error codes and the thread-local last error.
 *
 * Every libk8s function that can fail returns an int: 0 (K8S_OK) on success
 * or one of the negative K8S_E* codes below. The human-readable detail of the
 * most recent failure on the calling thread is kept in a thread-local slot
 * (the libgit2 model) and read with k8s_error_last(); it always names the
 * object or file involved and, for API errors, the server's reason.
 */
#ifndef K8S_COMMON_H
#define K8S_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a symbol as part of the public ABI of libk8s. */
#define K8S_EXTERN __attribute__((visibility("default")))

/**
 * Error codes returned by libk8s functions. API errors map the
 * `reason` of the Kubernetes `Status` object (meta/v1 StatusReason,
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#status-codes)
 * or, when the body has no reason, the HTTP status code.
 */
typedef enum {
	K8S_OK = 0,
	K8S_ERROR = -1,            /**< unclassified failure */
	K8S_ENOMEM = -2,           /**< allocation failed */
	K8S_EINVAL = -3,           /**< invalid argument from the caller */
	K8S_ECONFIG = -4,          /**< kubeconfig / in-cluster config unusable */
	K8S_ETRANSPORT = -5,       /**< connect, TLS or I/O failure (no HTTP answer) */
	K8S_EDECODE = -6,          /**< response or input is not the expected JSON/YAML */
	K8S_ESHUTDOWN = -7,        /**< the queue/informer/watch was shut down */
	K8S_ECANCELED = -8,        /**< the operation was cancelled by the caller */
	K8S_ETIMEOUT = -9,         /**< client-side timeout expired */
	K8S_ETOOLARGE = -10,       /**< input beyond a configured size limit */
	/* API errors (HTTP status in parentheses) */
	K8S_EBADREQUEST = -20,     /**< BadRequest (400) */
	K8S_EUNAUTHORIZED = -21,   /**< Unauthorized (401) */
	K8S_EFORBIDDEN = -22,      /**< Forbidden (403) */
	K8S_ENOTFOUND = -23,       /**< NotFound (404) */
	K8S_EMETHODNOTALLOWED = -24, /**< MethodNotAllowed (405) */
	K8S_ENOTACCEPTABLE = -25,  /**< NotAcceptable (406) */
	K8S_EALREADYEXISTS = -26,  /**< AlreadyExists (409) */
	K8S_ECONFLICT = -27,       /**< Conflict (409): stale resourceVersion */
	K8S_EGONE = -28,           /**< Gone / Expired (410): resourceVersion too old */
	K8S_EUNSUPPORTEDMEDIA = -29, /**< UnsupportedMediaType (415) */
	K8S_EINVALID = -30,        /**< Invalid (422): the object failed validation */
	K8S_ETOOMANYREQUESTS = -31, /**< TooManyRequests (429) */
	K8S_EINTERNAL = -32,       /**< InternalError (500) */
	K8S_ESERVICEUNAVAILABLE = -33, /**< ServiceUnavailable (503) */
	K8S_ESERVERTIMEOUT = -34,  /**< Timeout / ServerTimeout (504, or reason) */
	K8S_EAPI = -35             /**< any other non-2xx API answer */
} k8s_error_code;

/**
 * Detail of the last error on the calling thread.
 *
 * `message` is never NULL (empty string when no error was recorded).
 * `reason` is the API Status reason (e.g. "NotFound") or "" for non-API
 * errors; `http_status` is 0 when no HTTP answer was received.
 */
typedef struct {
	int code;              /**< the k8s_error_code */
	int http_status;       /**< HTTP status of the answer, or 0 */
	const char *reason;    /**< Status.reason, or "" */
	const char *message;   /**< human-readable message, never NULL */
} k8s_error;

/**
 * Returns the last error recorded on the calling thread.
 *
 * The pointer and the strings it holds stay valid until the next libk8s
 * call on the same thread that records or clears an error. Thread-safe
 * (thread-local storage). Never returns NULL.
 */
K8S_EXTERN const k8s_error *k8s_error_last(void);

/**
 * Records an error on the calling thread (printf-style message) and
 * returns `code`, so callers can write `return k8s_error_set(...)`.
 * `http_status` may be 0 and `reason` NULL. Thread-safe.
 */
K8S_EXTERN int k8s_error_set(int code, int http_status, const char *reason,
                             const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** Clears the calling thread's last error. Thread-safe. */
K8S_EXTERN void k8s_error_clear(void);

/**
 * Returns a static, human-readable name for an error code
 * (e.g. "not found" for K8S_ENOTFOUND). Never NULL; thread-safe.
 */
K8S_EXTERN const char *k8s_strerror(int code);

/**
 * Maps a Kubernetes Status reason (e.g. "AlreadyExists") and HTTP status
 * code to a k8s_error_code. The reason wins when it is known; otherwise the
 * HTTP status decides (409 without reason => K8S_ECONFLICT). Returns K8S_OK
 * for 2xx with no reason. Pure; thread-safe.
 */
K8S_EXTERN int k8s_error_code_from_status(const char *reason, int http_status);

/**
 * Initialises the libraries libk8s builds on (libcurl's global state).
 *
 * Call once from the application before creating any k8s_client, and
 * before starting threads, and pair it with k8s_global_cleanup(). Calls
 * nest (a counter, as in libgit2): only the first initialises and only the
 * last cleanup releases. Thread-safe, but libcurl's own global init is only
 * safe while no other thread uses libcurl, hence "before starting threads".
 *
 * @return the number of nested initialisations (>= 1) on success, or
 *         K8S_ERROR when libcurl could not be initialised (recorded).
 */
K8S_EXTERN int k8s_global_init(void);

/**
 * Undoes one k8s_global_init(); the last one releases libcurl's global
 * state, after which no k8s_client may exist. A call without a matching
 * init does nothing. Thread-safe, with the same caveat as k8s_global_init().
 */
K8S_EXTERN void k8s_global_cleanup(void);

#ifdef __cplusplus
}
#endif
#endif
