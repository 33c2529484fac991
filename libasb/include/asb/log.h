/*
 * log.h - one-line structured logs (JSON or logfmt text) to a stream.
 *
 * Libraries never print on their own: they log through an asb_logger the
 * application hands them (NULL means silent). One event is one line.
 *
 * The JSON lines have the shape of controller-runtime's production zap
 * logger, which upstream's Go binaries write by default:
 *
 *   {"level":"info","ts":"2026-01-02T03:04:05.678Z","logger":"setup","msg":"...","workers":100}
 *
 * `level`, `ts` (RFC 3339 in UTC with milliseconds; asb_logger_set_time()
 * picks another of zap's encodings), `logger` (only when the logger has a name,
 * see asb_logger_named()), `msg`, then the event's fields in order, each as
 * its JSON type: strings from asb_log(), and numbers or booleans from
 * asb_log_typed(). The text format carries the same keys as logfmt:
 *
 *   ts=2026-01-02T03:04:05.678Z level=info logger=setup msg="..." workers=100
 */
#ifndef ASB_LOG_H
#define ASB_LOG_H

#include <stdio.h>
#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Severity, most severe first; written as "error", "warn", "info", "debug"
 *  (zap's names). */
typedef enum {
	ASB_LOG_ERROR = 0,
	ASB_LOG_WARN = 1,
	ASB_LOG_INFO = 2,
	ASB_LOG_DEBUG = 3
} asb_log_level;

/** Line format: logfmt (`ts=... level=info msg="..." k=v`) or one JSON
 *  object a line. */
typedef enum { ASB_LOG_TEXT = 0, ASB_LOG_JSON = 1 } asb_log_format;

/**
 * How `ts` is written: controller-runtime's --zap-time-encoding values.
 * Always UTC. Strings in JSON unless said otherwise.
 */
typedef enum {
	ASB_LOG_TIME_RFC3339_MS = 0, /**< ours, the default: 2026-01-02T03:04:05.678Z */
	ASB_LOG_TIME_RFC3339,        /**< whole seconds, upstream's default: 2026-01-02T03:04:05Z */
	ASB_LOG_TIME_RFC3339NANO,    /**< up to 9 digits, trailing zeros dropped */
	ASB_LOG_TIME_ISO8601,        /**< zap's ISO 8601: milliseconds, as RFC3339_MS */
	ASB_LOG_TIME_EPOCH,          /**< seconds since 1970 as a JSON number: 1767323045.678 */
	ASB_LOG_TIME_MILLIS,         /**< milliseconds since 1970 as a number */
	ASB_LOG_TIME_NANOS           /**< nanoseconds since 1970 as an integer */
} asb_log_time;

/** Opaque logger; thread-safe. */
typedef struct asb_logger asb_logger;

/**
 * Creates a logger without a name writing to `stream` (not closed by the
 * logger) every event at `min_level` or more severe.
 * @return 0, or ASB_ENOMEM.
 */
ASB_EXTERN int asb_logger_new(asb_logger **out, FILE *stream,
                              asb_log_format format, asb_log_level min_level);

/**
 * Creates a logger writing through `parent`'s stream, format and level,
 * whose lines carry the key `logger`: `parent`'s name, a dot, and `name`
 * (`name` alone when `parent` has none), as logr's WithName() does. The two
 * share the stream and its lock: lines of both never interleave. Either may
 * be freed first. A NULL `parent` gives a NULL (silent) logger and 0.
 * @return 0, or ASB_ENOMEM (`*out` NULL).
 */
ASB_EXTERN int asb_logger_named(asb_logger **out, asb_logger *parent, const char *name);

/**
 * Sets how `ts` is written by `log` and every logger sharing its stream
 * (asb_logger_named()). Thread-safe; lines being written meanwhile may
 * have either. NULL `log`: no-op.
 */
ASB_EXTERN void asb_logger_set_time(asb_logger *log, asb_log_time time);

/** The logger's name, "" when it has none (or `log` is NULL). Borrowed:
 *  valid while `log` is. */
ASB_EXTERN const char *asb_logger_name(const asb_logger *log);

/** Frees a logger; NULL is accepted. */
ASB_EXTERN void asb_logger_free(asb_logger *log);

/** True when an event at `level` would be written (NULL logger: false). */
ASB_EXTERN bool asb_log_enabled(const asb_logger *log, asb_log_level level);

/**
 * Writes one event: `msg`, then alternating key and value strings ended
 * by a NULL key. A NULL value is written as empty. Values are quoted or
 * JSON-escaped as needed; a later key replaces an earlier equal one. Never
 * log secrets. `log` may be NULL (no-op). For numbers and booleans, use
 * asb_log_typed().
 * Thread-safe: lines from several threads never interleave.
 */
ASB_EXTERN void asb_log(asb_logger *log, asb_log_level level,
                        const char *msg, ...) __attribute__((sentinel));

/** The JSON type of a typed field's value. */
typedef enum {
	ASB_LOG_FIELD_STR = 0,  /**< string; NULL is written as "" */
	ASB_LOG_FIELD_INT,      /**< integer, exact to 64 bits */
	ASB_LOG_FIELD_FLOAT,    /**< number; NaN and infinities as the strings
	                             "NaN", "+Inf", "-Inf" (as zap writes them) */
	ASB_LOG_FIELD_BOOL      /**< true or false */
} asb_log_field_type;

/** One field of an event: a key (NULL: the field is skipped) and a typed
 *  value. Build them with ASB_LOG_STR() and its siblings. */
typedef struct {
	const char *key;
	asb_log_field_type type;
	union {
		const char *s;
		int64_t i;
		double f;
		bool b;
	} v;
} asb_log_field;

/** A string field. */
#define ASB_LOG_STR(key_, val_) \
	((asb_log_field){ .key = (key_), .type = ASB_LOG_FIELD_STR, .v.s = (val_) })
/** An integer field (any integer type, converted to int64_t). */
#define ASB_LOG_INT(key_, val_) \
	((asb_log_field){ .key = (key_), .type = ASB_LOG_FIELD_INT, .v.i = (val_) })
/** A floating-point field. */
#define ASB_LOG_FLOAT(key_, val_) \
	((asb_log_field){ .key = (key_), .type = ASB_LOG_FIELD_FLOAT, .v.f = (val_) })
/** A boolean field. */
#define ASB_LOG_BOOL(key_, val_) \
	((asb_log_field){ .key = (key_), .type = ASB_LOG_FIELD_BOOL, .v.b = (val_) })

/**
 * Writes one event: `msg`, then the `n` fields of `fields` in order, each
 * as its type (see asb_log_field_type); otherwise as asb_log(). `fields`
 * is borrowed for the call. Thread-safe; `log` may be NULL (no-op).
 */
ASB_EXTERN void asb_log_fields(asb_logger *log, asb_log_level level, const char *msg,
                               const asb_log_field *fields, size_t n);

/**
 * asb_log_fields() with the fields listed in place (one at least):
 *
 *   asb_log_typed(log, ASB_LOG_INFO, "starting workers",
 *                 ASB_LOG_STR("controller", "sandbox"), ASB_LOG_INT("worker count", n),
 *                 ASB_LOG_BOOL("leaderElection", true));
 *
 * Each argument is evaluated once (the second use is inside sizeof).
 */
#define asb_log_typed(log_, level_, msg_, ...) \
	asb_log_fields((log_), (level_), (msg_), (const asb_log_field[]){ __VA_ARGS__ }, \
	               sizeof((const asb_log_field[]){ __VA_ARGS__ }) / sizeof(asb_log_field))

/** Parses "error", "warn", "info", "debug"; returns -1 if unknown. */
ASB_EXTERN int asb_log_level_parse(const char *s);

#ifdef __cplusplus
}
#endif
#endif
