/*
 * common.h - libk8s's export macro, the mapping of a Kubernetes Status to
 * an error code, and the library's global initialisation.
 *
 * The error codes (ASB_E*) and the thread-local last error (asb_error_last())
 * are libasb's (asb/common.h), included here: every libk8s function that can
 * fail returns 0 (ASB_OK) or one of those codes and records its detail there;
 * the detail always names the object or file involved and, for API errors,
 * the server's reason.
 */
#ifndef K8S_COMMON_H
#define K8S_COMMON_H

#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a symbol as part of the public ABI of libk8s. */
#define K8S_EXTERN __attribute__((visibility("default")))

/**
 * Maps a Kubernetes Status reason (e.g. "AlreadyExists") and HTTP status
 * code to an asb_error_code. The reason wins when it is known; otherwise the
 * HTTP status decides (409 without reason => ASB_ECONFLICT). Returns ASB_OK
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
 *         ASB_ERROR when libcurl could not be initialised (recorded).
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
