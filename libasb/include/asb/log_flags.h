/*
 * log_flags.h - the logging flags the three programs share, as rows for
 * their asb_flag tables (asb/flags.h): controller-runtime's zap flags
 * (--zap-devel, --zap-encoder, --zap-log-level, --zap-stacktrace-level,
 * --zap-time-encoding), which upstream's Go binaries bind, and our own
 * --log-format and --log-level. Their values land in one asb_log_flags
 * embedded in the program's options struct.
 */
#ifndef ASB_LOG_FLAGS_H
#define ASB_LOG_FLAGS_H

#include <stddef.h>
#include "asb/flags.h"
#include "asb/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the logging flags set. Initialise with ASB_LOG_FLAGS_INIT. */
typedef struct {
	asb_log_format format;   /**< --log-format / --zap-encoder (default json, as upstream) */
	asb_log_level level;     /**< --log-level / --zap-log-level (default info) */
	bool format_set;         /**< a format flag was given */
	bool level_set;          /**< a level flag was given */
	bool devel;              /**< --zap-devel */
	asb_log_time time;       /**< --zap-time-encoding (default: RFC 3339 with ms) */
} asb_log_flags;

/** The defaults: JSON lines at info, controller-runtime's production mode. */
#define ASB_LOG_FLAGS_INIT { .format = ASB_LOG_JSON, .level = ASB_LOG_INFO }

/**
 * The setter (asb_flag_set_fn) of the rows below but zap-devel, a plain
 * boolean row: the asb_log_flags is at `fl->off` in `opts`, and the row's
 * name says which flag it is. Values:
 *  - log-format: text or json (exact case);
 *  - zap-encoder: console (our text) or json, any case (controller-runtime
 *    lower-cases them);
 *  - log-level: error, warn (or warning), info, debug (exact case);
 *  - zap-log-level: debug, info, warn, error, panic (our error: nothing of
 *    ours is more severe), any case, or an integer > 0 (a zap debug
 *    verbosity: our debug);
 *  - zap-time-encoding: epoch, millis, nano or nanos, iso8601, rfc3339,
 *    rfc3339nano (any case), as asb_log_time;
 *  - zap-stacktrace-level: info, error or panic (any case): checked, then
 *    ignored (no stack traces are logged).
 * The last format flag and the last level flag given win.
 * @return 0, or -1 with the reason ("use ...") in `why`.
 */
ASB_EXTERN int asb_log_flags_set(void *opts, const asb_flag *fl, const char *value, char *why,
                                 size_t cap);

/**
 * Applies --zap-devel once every flag is parsed, as controller-runtime's
 * development mode: level debug unless a level flag was given, text
 * (console) unless a format flag was given.
 */
ASB_EXTERN void asb_log_flags_finish(asb_log_flags *lf);

/**
 * Creates the logger the flags describe (format, level, time encoding),
 * writing to `stream`, without a name (asb_logger_new()).
 * @return 0, or ASB_ENOMEM.
 */
ASB_EXTERN int asb_log_flags_logger(asb_logger **out, const asb_log_flags *lf, FILE *stream);

/** A row of the logging flags: `name_` for the asb_log_flags at `off_`. */
#define ASB_LOG_FLAG_ROW(name_, off_, arg_, help_) \
	ASB_FLAG_FN(name_, ASB_FLAG_CUSTOM, off_, arg_, help_, asb_log_flags_set)

/** --log-format and --log-level (ours), for the asb_log_flags at `off_`. */
#define ASB_LOG_FLAG_ROWS(off_) \
	ASB_LOG_FLAG_ROW("log-format", off_, "json|text", \
	  "log line format on stderr: JSON, as upstream's zap, or\nlogfmt text (default json)"), \
	ASB_LOG_FLAG_ROW("log-level", off_, "error|warn|info|debug", \
	  "minimum level logged (default info)")

/** controller-runtime's five zap flags, for the asb_log_flags at `off_`. */
#define ASB_ZAP_FLAG_ROWS(off_) \
	ASB_FLAG("zap-devel", ASB_FLAG_BOOL, (off_) + offsetof(asb_log_flags, devel), "[=B]", \
	  "development mode: debug level and text lines unless\n" \
	  "a level or format flag is given (default false)"), \
	ASB_LOG_FLAG_ROW("zap-encoder", off_, "json|console", \
	  "JSON lines, or console: logfmt text (default json)"), \
	ASB_LOG_FLAG_ROW("zap-log-level", off_, "L", \
	  "minimum level: debug, info, warn, error, panic, or an\n" \
	  "integer N > 0 for debug (default info)"), \
	ASB_LOG_FLAG_ROW("zap-stacktrace-level", off_, "L", \
	  "info|error|panic: accepted and ignored, no stack traces\n(default error)"), \
	ASB_LOG_FLAG_ROW("zap-time-encoding", off_, "E", \
	  "ts as epoch, millis, nanos, iso8601, rfc3339 or\n" \
	  "rfc3339nano (default: RFC 3339 with milliseconds)")

#ifdef __cplusplus
}
#endif
#endif
