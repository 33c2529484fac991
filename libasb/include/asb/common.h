/*
 * common.h - export macro, error codes and the thread-local last error of
 * libasb, the base every library of agent-sandbox builds on (libk8s,
 * libhttpd, libsandbox, libwarmpool) and the executables use.
 *
 * Every function of these libraries that can fail returns an int: 0 (ASB_OK) on success
 * or one of the negative ASB_E* codes below. The human-readable detail of the
 * most recent failure on the calling thread is kept in a thread-local slot
 * (the libgit2 model) and read with asb_error_last(); it always names the
 * object or file involved and, for API errors, the server's reason.
 */
#ifndef ASB_COMMON_H
#define ASB_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a symbol as part of the public ABI of libasb. */
#define ASB_EXTERN __attribute__((visibility("default")))

/**
 * Error codes returned by the libraries' functions. API errors map the
 * `reason` of the Kubernetes `Status` object (meta/v1 StatusReason,
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#status-codes)
 * or, when the body has no reason, the HTTP status code.
 */
typedef enum {
	ASB_OK = 0,
	ASB_ERROR = -1,            /**< unclassified failure */
	ASB_ENOMEM = -2,           /**< allocation failed */
	ASB_EINVAL = -3,           /**< invalid argument from the caller */
	ASB_ECONFIG = -4,          /**< kubeconfig / in-cluster config unusable */
	ASB_ETRANSPORT = -5,       /**< connect, TLS or I/O failure (no HTTP answer) */
	ASB_EDECODE = -6,          /**< response or input is not the expected JSON/YAML */
	ASB_ESHUTDOWN = -7,        /**< the queue/informer/watch was shut down */
	ASB_ECANCELED = -8,        /**< the operation was cancelled by the caller */
	ASB_ETIMEOUT = -9,         /**< client-side timeout expired */
	ASB_ETOOLARGE = -10,       /**< input beyond a configured size limit */
	/* API errors (HTTP status in parentheses) */
	ASB_EBADREQUEST = -20,     /**< BadRequest (400) */
	ASB_EUNAUTHORIZED = -21,   /**< Unauthorized (401) */
	ASB_EFORBIDDEN = -22,      /**< Forbidden (403) */
	ASB_ENOTFOUND = -23,       /**< NotFound (404) */
	ASB_EMETHODNOTALLOWED = -24, /**< MethodNotAllowed (405) */
	ASB_ENOTACCEPTABLE = -25,  /**< NotAcceptable (406) */
	ASB_EALREADYEXISTS = -26,  /**< AlreadyExists (409) */
	ASB_ECONFLICT = -27,       /**< Conflict (409): stale resourceVersion */
	ASB_EGONE = -28,           /**< Gone / Expired (410): resourceVersion too old */
	ASB_EUNSUPPORTEDMEDIA = -29, /**< UnsupportedMediaType (415) */
	ASB_EINVALID = -30,        /**< Invalid (422): the object failed validation */
	ASB_ETOOMANYREQUESTS = -31, /**< TooManyRequests (429) */
	ASB_EINTERNAL = -32,       /**< InternalError (500) */
	ASB_ESERVICEUNAVAILABLE = -33, /**< ServiceUnavailable (503) */
	ASB_ESERVERTIMEOUT = -34,  /**< Timeout / ServerTimeout (504, or reason) */
	ASB_EAPI = -35             /**< any other non-2xx API answer */
} asb_error_code;

/**
 * Detail of the last error on the calling thread.
 *
 * `message` is never NULL (empty string when no error was recorded).
 * `reason` is the API Status reason (e.g. "NotFound") or "" for non-API
 * errors; `http_status` is 0 when no HTTP answer was received.
 */
typedef struct {
	int code;              /**< the asb_error_code */
	int http_status;       /**< HTTP status of the answer, or 0 */
	const char *reason;    /**< Status.reason, or "" */
	const char *message;   /**< human-readable message, never NULL */
} asb_error;

/**
 * Returns the last error recorded on the calling thread.
 *
 * The pointer and the strings it holds stay valid until the next
 * call on the same thread that records or clears an error. Thread-safe
 * (thread-local storage). Never returns NULL.
 */
ASB_EXTERN const asb_error *asb_error_last(void);

/**
 * Records an error on the calling thread (printf-style message) and
 * returns `code`, so callers can write `return asb_error_set(...)`.
 * `http_status` may be 0 and `reason` NULL. Thread-safe.
 */
ASB_EXTERN int asb_error_set(int code, int http_status, const char *reason,
                             const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** Clears the calling thread's last error. Thread-safe. */
ASB_EXTERN void asb_error_clear(void);

/**
 * Returns a static, human-readable name for an error code
 * (e.g. "not found" for ASB_ENOTFOUND). Never NULL; thread-safe.
 */
ASB_EXTERN const char *asb_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
