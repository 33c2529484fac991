/*
 * log_flags.c - the shared logging flags (asb/log_flags.h): one setter for
 * logging rows, told apart by name, so the controller, the router and
 * sandboxd accept the same spellings.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "asb/log_flags.h"

/* The index of `s` in the NULL-terminated `set`, or -1. */
static int word_index(const char *s, const char *const *set, bool any_case)
{
	for (int i = 0; set[i]; i++)
		if (any_case ? strcasecmp(s, set[i]) == 0 : strcmp(s, set[i]) == 0)
			return i;
	return -1;
}

static int want(char *why, size_t cap, const char *msg)
{
	snprintf(why, cap, "%s", msg);
	return -1;
}

/* --zap-log-level: a name (any case) or a zap verbosity N > 0 (Go integer
 * syntax), which is our debug. An asb_log_level, or -1. */
static int zap_level(const char *s)
{
	static const int levels[] = { ASB_LOG_DEBUG, ASB_LOG_INFO, ASB_LOG_WARN, ASB_LOG_ERROR,
	                              ASB_LOG_ERROR };
	int i = word_index(s, (const char *const[]){ "debug", "info", "warn", "error", "panic", NULL },
	                   true);
	if (i >= 0)
		return levels[i];
	const asb_flag as_int = { .name = "zap-log-level", .kind = ASB_FLAG_I64 };
	int64_t n;
	char scratch[8];
	return asb_flags_set(&as_int, &n, s, scratch, sizeof(scratch)) == 0 && n > 0 ? ASB_LOG_DEBUG
	                                                                             : -1;
}

int asb_log_flags_set(void *opts, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	asb_log_flags *lf = (asb_log_flags *)((char *)opts + fl->off);
	const char *n = fl->name;
	if (!strcmp(n, "log-format") || !strcmp(n, "zap-encoder")) {
		bool zap = n[0] == 'z';
		int i = word_index(v, (const char *const[]){ "json", zap ? "console" : "text", NULL }, zap);
		if (i < 0)
			return want(why, cap, zap ? "use json or console" : "use json or text");
		lf->format = i == 0 ? ASB_LOG_JSON : ASB_LOG_TEXT;
		lf->format_set = true;
		return 0;
	}
	if (!strcmp(n, "log-level") || !strcmp(n, "zap-log-level")) {
		bool zap = n[0] == 'z';
		int l = zap ? zap_level(v) : asb_log_level_parse(v);
		if (l < 0)
			return want(why, cap, zap ? "use debug, info, warn, error, panic or an integer > 0"
			                          : "use error, warn, info or debug");
		lf->level = (asb_log_level)l;
		lf->level_set = true;
		return 0;
	}
	if (!strcmp(n, "zap-stacktrace-level")) {
		if (word_index(v, (const char *const[]){ "info", "error", "panic", NULL }, true) < 0)
			return want(why, cap, "use info, error or panic");
		return 0;
	}
	if (!strcmp(n, "zap-time-encoding")) {
		/* controller-runtime takes "nanos"; its help text says "nano": both */
		static const char *const enc[] = { "epoch", "millis", "nano", "nanos", "iso8601",
		                                   "rfc3339", "rfc3339nano", NULL };
		static const asb_log_time times[] = { ASB_LOG_TIME_EPOCH, ASB_LOG_TIME_MILLIS,
		                                      ASB_LOG_TIME_NANOS, ASB_LOG_TIME_NANOS,
		                                      ASB_LOG_TIME_ISO8601, ASB_LOG_TIME_RFC3339,
		                                      ASB_LOG_TIME_RFC3339NANO };
		int i = word_index(v, enc, true);
		if (i < 0)
			return want(why, cap, "use epoch, millis, nanos, iso8601, rfc3339 or rfc3339nano");
		lf->time = times[i];
		return 0;
	}
	return want(why, cap, "not a logging flag");
}

void asb_log_flags_finish(asb_log_flags *lf)
{
	if (!lf->devel)
		return;
	if (!lf->level_set)
		lf->level = ASB_LOG_DEBUG;
	if (!lf->format_set)
		lf->format = ASB_LOG_TEXT;
}

int asb_log_flags_logger(asb_logger **out, const asb_log_flags *lf, FILE *stream)
{
	int rc = asb_logger_new(out, stream, lf->format, lf->level);
	if (rc == 0)
		asb_logger_set_time(*out, lf->time);
	return rc;
}
