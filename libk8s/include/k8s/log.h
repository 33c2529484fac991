/*
 * log.h - one-line structured logs (key=value or JSON) to a stream.
 *
 * Libraries never print on their own: they log through a k8s_logger the
 * application hands them (NULL means silent). One event is one line.
 */
#ifndef K8S_LOG_H
#define K8S_LOG_H

#include <stdio.h>
#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Severity, most severe first. */
typedef enum {
	K8S_LOG_ERROR = 0,
	K8S_LOG_WARN = 1,
	K8S_LOG_INFO = 2,
	K8S_LOG_DEBUG = 3
} k8s_log_level;

/** Line format: `ts=... level=info msg="..." k=v` or one JSON object. */
typedef enum { K8S_LOG_TEXT = 0, K8S_LOG_JSON = 1 } k8s_log_format;

/** Opaque logger; thread-safe. */
typedef struct k8s_logger k8s_logger;

/**
 * Creates a logger writing to `stream` (not closed by the logger) every
 * event at `min_level` or more severe. Returns 0 or K8S_ENOMEM.
 */
K8S_EXTERN int k8s_logger_new(k8s_logger **out, FILE *stream,
                              k8s_log_format format, k8s_log_level min_level);

/** Frees a logger; NULL is accepted. */
K8S_EXTERN void k8s_logger_free(k8s_logger *log);

/** True when an event at `level` would be written (NULL logger: false). */
K8S_EXTERN bool k8s_log_enabled(const k8s_logger *log, k8s_log_level level);

/**
 * Writes one event: `msg`, then alternating key and value strings ended
 * by a NULL key. A NULL value is written as empty. Values are quoted or
 * JSON-escaped as needed. Never log secrets. `log` may be NULL (no-op).
 * Thread-safe: lines from several threads never interleave.
 */
K8S_EXTERN void k8s_log(k8s_logger *log, k8s_log_level level,
                        const char *msg, ...) __attribute__((sentinel));

/** Parses "error", "warn", "info", "debug"; returns -1 if unknown. */
K8S_EXTERN int k8s_log_level_parse(const char *s);

#ifdef __cplusplus
}
#endif
#endif
