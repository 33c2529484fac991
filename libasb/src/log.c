/*
 * log.c - one event per line, as logfmt (`ts=... level=info msg="..." k=v`)
 * or as a JSON object. A mutex per logger keeps lines whole when several
 * threads log at once; the line is built in memory and written with one
 * fwrite.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "asb/log.h"

struct asb_logger {
	FILE *stream;
	asb_log_format format;
	asb_log_level min_level;
	pthread_mutex_t lock;
};

static const char *level_names[] = { "error", "warn", "info", "debug" };

int asb_logger_new(asb_logger **out, FILE *stream, asb_log_format format,
                   asb_log_level min_level)
{
	asb_logger *l = calloc(1, sizeof(*l));
	if (!l)
		return ASB_ENOMEM;
	l->stream = stream;
	l->format = format;
	l->min_level = min_level;
	pthread_mutex_init(&l->lock, NULL);
	*out = l;
	return 0;
}

void asb_logger_free(asb_logger *log)
{
	if (!log)
		return;
	pthread_mutex_destroy(&log->lock);
	free(log);
}

bool asb_log_enabled(const asb_logger *log, asb_log_level level)
{
	return log && level <= log->min_level;
}

int asb_log_level_parse(const char *s)
{
	for (int i = 0; s && i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	if (s && strcmp(s, "warning") == 0)
		return ASB_LOG_WARN;
	return -1;
}

/* A growable buffer, enough for building one line. */
typedef struct {
	char *p;
	size_t len, cap;
	int oom;
} linebuf;

static void lb_put(linebuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void lb_str(linebuf *b, const char *s)
{
	lb_put(b, s, strlen(s));
}

/* logfmt value: bare when it has no space, quote, '=' or control char. */
static void lb_logfmt_value(linebuf *b, const char *v)
{
	int bare = *v != '\0';
	for (const char *p = v; *p && bare; p++)
		if ((unsigned char)*p <= ' ' || *p == '"' || *p == '=' || *p == '\\')
			bare = 0;
	if (bare) {
		lb_str(b, v);
		return;
	}
	lb_put(b, "\"", 1);
	for (const char *p = v; *p; p++) {
		char esc[8];
		switch (*p) {
		case '"': lb_put(b, "\\\"", 2); break;
		case '\\': lb_put(b, "\\\\", 2); break;
		case '\n': lb_put(b, "\\n", 2); break;
		case '\r': lb_put(b, "\\r", 2); break;
		case '\t': lb_put(b, "\\t", 2); break;
		default:
			if ((unsigned char)*p < 0x20) {
				snprintf(esc, sizeof(esc), "\\x%02x", (unsigned char)*p);
				lb_str(b, esc);
			} else {
				lb_put(b, p, 1);
			}
		}
	}
	lb_put(b, "\"", 1);
}

static void timestamp(char *buf, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

void asb_log(asb_logger *log, asb_log_level level, const char *msg, ...)
{
	if (!asb_log_enabled(log, level))
		return;
	char ts[40];
	timestamp(ts, sizeof(ts));
	va_list ap;
	va_start(ap, msg);
	linebuf b = { 0 };

	if (log->format == ASB_LOG_JSON) {
		cJSON *o = cJSON_CreateObject();
		if (o) {
			cJSON_AddStringToObject(o, "ts", ts);
			cJSON_AddStringToObject(o, "level", level_names[level]);
			cJSON_AddStringToObject(o, "msg", msg ? msg : "");
			const char *k;
			while ((k = va_arg(ap, const char *)) != NULL) {
				const char *v = va_arg(ap, const char *);
				cJSON_DeleteItemFromObjectCaseSensitive(o, k);
				cJSON_AddStringToObject(o, k, v ? v : "");
			}
			char *s = cJSON_PrintUnformatted(o);
			if (s) {
				lb_str(&b, s);
				free(s);
			}
			cJSON_Delete(o);
		}
	} else {
		lb_str(&b, "ts=");
		lb_str(&b, ts);
		lb_str(&b, " level=");
		lb_str(&b, level_names[level]);
		lb_str(&b, " msg=");
		lb_logfmt_value(&b, msg ? msg : "");
		const char *k;
		while ((k = va_arg(ap, const char *)) != NULL) {
			const char *v = va_arg(ap, const char *);
			lb_put(&b, " ", 1);
			lb_str(&b, k);
			lb_put(&b, "=", 1);
			lb_logfmt_value(&b, v ? v : "");
		}
	}
	va_end(ap);
	lb_put(&b, "\n", 1);
	if (!b.oom && b.p) {
		pthread_mutex_lock(&log->lock);
		fwrite(b.p, 1, b.len, log->stream);
		fflush(log->stream);
		pthread_mutex_unlock(&log->lock);
	}
	free(b.p);
}
