/*
 * log.h - one-line structured logs (key=value or JSON) to a stream.
 *
 * Libraries never print on their own: they log through an asb_logger the
 * application hands them (NULL means silent). One event is one line.
 */
#ifndef ASB_LOG_H
#define ASB_LOG_H

#include <stdio.h>
#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Severity, most severe first. */
typedef enum {
	ASB_LOG_ERROR = 0,
	ASB_LOG_WARN = 1,
	ASB_LOG_INFO = 2,
	ASB_LOG_DEBUG = 3
} asb_log_level;

/** Line format: `ts=... level=info msg="..." k=v` or one JSON object. */
typedef enum { ASB_LOG_TEXT = 0, ASB_LOG_JSON = 1 } asb_log_format;

/** Opaque logger; thread-safe. */
typedef struct asb_logger asb_logger;

/**
 * Creates a logger writing to `stream` (not closed by the logger) every
 * event at `min_level` or more severe. Returns 0 or ASB_ENOMEM.
 */
ASB_EXTERN int asb_logger_new(asb_logger **out, FILE *stream,
                              asb_log_format format, asb_log_level min_level);

/** Frees a logger; NULL is accepted. */
ASB_EXTERN void asb_logger_free(asb_logger *log);

/** True when an event at `level` would be written (NULL logger: false). */
ASB_EXTERN bool asb_log_enabled(const asb_logger *log, asb_log_level level);

/**
 * Writes one event: `msg`, then alternating key and value strings ended
 * by a NULL key. A NULL value is written as empty. Values are quoted or
 * JSON-escaped as needed. Never log secrets. `log` may be NULL (no-op).
 * Thread-safe: lines from several threads never interleave.
 */
ASB_EXTERN void asb_log(asb_logger *log, asb_log_level level,
                        const char *msg, ...) __attribute__((sentinel));

/** Parses "error", "warn", "info", "debug"; returns -1 if unknown. */
ASB_EXTERN int asb_log_level_parse(const char *s);

#ifdef __cplusplus
}
#endif
#endif
