/*
 * log.c - one event per line, as logfmt (`ts=... level=info msg="..." k=v`)
 * or as a JSON object in controller-runtime's zap shape (asb/log.h). Named
 * loggers share one sink: the stream, and a mutex that keeps lines whole
 * when several threads log at once; the line is built in memory and
 * written with one fwrite. asb_log()'s string pairs become typed fields, so
 * both entry points format alike.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "asb/log.h"
#include "asb/strbuf.h"

/* What a logger and the loggers named after it share: the stream, its
 * lock, the format and the level. Freed with the last logger. */
typedef struct {
	FILE *stream;
	asb_log_format format;
	asb_log_level min_level;
	atomic_int time;   /* asb_log_time */
	pthread_mutex_t lock;
	atomic_int refs;
} sink;

struct asb_logger {
	sink *sink;
	char *name;   /* NULL: no `logger` key */
};

static const char *level_names[] = { "error", "warn", "info", "debug" };

int asb_logger_new(asb_logger **out, FILE *stream, asb_log_format format,
                   asb_log_level min_level)
{
	asb_logger *l = calloc(1, sizeof(*l));
	sink *s = calloc(1, sizeof(*s));
	if (!l || !s) {
		free(l);
		free(s);
		return ASB_ENOMEM;
	}
	s->stream = stream;
	s->format = format;
	s->min_level = min_level;
	pthread_mutex_init(&s->lock, NULL);
	atomic_init(&s->refs, 1);
	atomic_init(&s->time, ASB_LOG_TIME_RFC3339_MS);
	l->sink = s;
	*out = l;
	return 0;
}

int asb_logger_named(asb_logger **out, asb_logger *parent, const char *name)
{
	*out = NULL;
	if (!parent)
		return 0;
	asb_logger *l = calloc(1, sizeof(*l));
	const char *pn = parent->name;
	size_t n = (pn ? strlen(pn) + 1 : 0) + strlen(name ? name : "") + 1;
	char *full = malloc(n);
	if (!l || !full) {
		free(l);
		free(full);
		return ASB_ENOMEM;
	}
	snprintf(full, n, "%s%s%s", pn ? pn : "", pn ? "." : "", name ? name : "");
	l->name = full;
	l->sink = parent->sink;
	atomic_fetch_add(&l->sink->refs, 1);
	*out = l;
	return 0;
}

void asb_logger_set_time(asb_logger *log, asb_log_time time)
{
	if (log)
		atomic_store(&log->sink->time, (int)time);
}

const char *asb_logger_name(const asb_logger *log)
{
	return log && log->name ? log->name : "";
}

void asb_logger_free(asb_logger *log)
{
	if (!log)
		return;
	if (atomic_fetch_sub(&log->sink->refs, 1) == 1) {
		pthread_mutex_destroy(&log->sink->lock);
		free(log->sink);
	}
	free(log->name);
	free(log);
}

bool asb_log_enabled(const asb_logger *log, asb_log_level level)
{
	return log && level <= log->sink->min_level;
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

/* `frac` as `digits` decimals after a dot, trailing zeros dropped (and the
 * dot with them when nothing is left). */
static void put_fraction(char *out, size_t cap, long frac, int digits)
{
	char d[16];
	snprintf(d, sizeof(d), "%0*ld", digits, frac);
	int n = digits;
	while (n > 0 && d[n - 1] == '0')
		n--;
	if (n)
		snprintf(out, cap, ".%.*s", n, d);
	else
		out[0] = '\0';
}

/* Now as `how` writes it; true when it is a number (for JSON). */
static bool timestamp(char *buf, size_t cap, asb_log_time how)
{
	struct timespec ts;
	struct tm tm;
	char frac[16];
	clock_gettime(CLOCK_REALTIME, &ts);
	switch (how) {
	case ASB_LOG_TIME_EPOCH:
	case ASB_LOG_TIME_MILLIS:
		/* exact decimals of the nanoseconds, where zap prints a float64 */
		if (how == ASB_LOG_TIME_EPOCH) {
			put_fraction(frac, sizeof(frac), ts.tv_nsec, 9);
			snprintf(buf, cap, "%lld%s", (long long)ts.tv_sec, frac);
		} else {
			put_fraction(frac, sizeof(frac), ts.tv_nsec % 1000000, 6);
			snprintf(buf, cap, "%lld%s", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
			         frac);
		}
		return true;
	case ASB_LOG_TIME_NANOS:
		snprintf(buf, cap, "%lld", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
		return true;
	default:
		break;
	}
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	if (how == ASB_LOG_TIME_RFC3339)
		frac[0] = '\0';
	else if (how == ASB_LOG_TIME_RFC3339NANO)
		put_fraction(frac, sizeof(frac), ts.tv_nsec, 9);
	else  /* ours and ISO 8601: always three digits */
		snprintf(frac, sizeof(frac), ".%03ld", ts.tv_nsec / 1000000);
	snprintf(buf + n, cap - n, "%sZ", frac);
	return false;
}

/* A number as JSON (and logfmt) writes it: the shortest of 15 or 17
 * significant digits that reads back the same, as cJSON prints; NaN and the
 * infinities are no JSON numbers, so they are spelled as zap spells them
 * (the caller writes those as strings). */
static bool format_double(char out[32], double d)
{
	if (isnan(d) || isinf(d)) {
		snprintf(out, 32, "%s", isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf");
		return false;
	}
	snprintf(out, 32, "%1.15g", d);
	if (strtod(out, NULL) != d)
		snprintf(out, 32, "%1.17g", d);
	return true;
}

/* `s` as JSON text must be: UTF-8 (RFC 8259), each byte that starts no
 * valid sequence written as U+FFFD, as zap does (asb_strbuf_add_utf8).
 * Returns `s` itself when it is valid, else a copy in *copy (the caller
 * frees it); NULL when out of memory. */
static const char *utf8_clean(const char *s, char **copy)
{
	*copy = NULL;
	if (asb_utf8_valid(s))
		return s;
	asb_strbuf b = ASB_STRBUF_INIT;
	if (asb_strbuf_add_utf8(&b, s) < 0) {
		asb_strbuf_free(&b);
		return NULL;
	}
	return *copy = asb_strbuf_detach(&b, NULL);
}

/* A JSON string node of `s`, made valid UTF-8; NULL when out of memory. */
static cJSON *json_string(const char *s)
{
	char *copy;
	const char *v = utf8_clean(s, &copy);
	cJSON *node = v ? cJSON_CreateString(v) : NULL;
	free(copy);
	return node;
}

/* The JSON node of a field's value, or NULL when out of memory. */
static cJSON *json_value(const asb_log_field *f)
{
	char num[32];
	switch (f->type) {
	case ASB_LOG_FIELD_INT:
		snprintf(num, sizeof(num), "%" PRId64, f->v.i);
		return cJSON_CreateRaw(num);
	case ASB_LOG_FIELD_FLOAT:
		return format_double(num, f->v.f) ? cJSON_CreateRaw(num) : cJSON_CreateString(num);
	case ASB_LOG_FIELD_BOOL:
		return cJSON_CreateBool(f->v.b);
	case ASB_LOG_FIELD_STR:
	default:
		return json_string(f->v.s ? f->v.s : "");
	}
}

static void json_line(linebuf *b, const asb_logger *log, asb_log_level level, const char *ts,
                      bool ts_number, const char *msg, const asb_log_field *fields, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	if (!o) {
		b->oom = 1;
		return;
	}
	cJSON_AddStringToObject(o, "level", level_names[level]);
	if (ts_number)
		cJSON_AddRawToObject(o, "ts", ts);
	else
		cJSON_AddStringToObject(o, "ts", ts);
	if (log->name)
		cJSON_AddItemToObject(o, "logger", json_string(log->name));
	cJSON_AddItemToObject(o, "msg", json_string(msg ? msg : ""));
	for (size_t i = 0; i < n; i++) {
		if (!fields[i].key)
			continue;
		char *copy;
		const char *key = utf8_clean(fields[i].key, &copy);
		cJSON *v = key ? json_value(&fields[i]) : NULL;
		if (!v) {
			free(copy);
			b->oom = 1;
			break;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(o, key);
		cJSON_AddItemToObject(o, key, v);
		free(copy);
	}
	char *s = b->oom ? NULL : cJSON_PrintUnformatted(o);
	if (s)
		lb_str(b, s);
	else
		b->oom = 1;
	free(s);
	cJSON_Delete(o);
}

static void text_line(linebuf *b, const asb_logger *log, asb_log_level level, const char *ts,
                      const char *msg, const asb_log_field *fields, size_t n)
{
	lb_str(b, "ts=");
	lb_str(b, ts);
	lb_str(b, " level=");
	lb_str(b, level_names[level]);
	if (log->name) {
		lb_str(b, " logger=");
		lb_logfmt_value(b, log->name);
	}
	lb_str(b, " msg=");
	lb_logfmt_value(b, msg ? msg : "");
	for (size_t i = 0; i < n; i++) {
		const asb_log_field *f = &fields[i];
		char num[32];
		if (!f->key)
			continue;
		lb_put(b, " ", 1);
		lb_str(b, f->key);
		lb_put(b, "=", 1);
		switch (f->type) {
		case ASB_LOG_FIELD_INT:
			snprintf(num, sizeof(num), "%" PRId64, f->v.i);
			lb_str(b, num);
			break;
		case ASB_LOG_FIELD_FLOAT:
			format_double(num, f->v.f);
			lb_str(b, num);
			break;
		case ASB_LOG_FIELD_BOOL:
			lb_str(b, f->v.b ? "true" : "false");
			break;
		case ASB_LOG_FIELD_STR:
		default:
			lb_logfmt_value(b, f->v.s ? f->v.s : "");
		}
	}
}

void asb_log_fields(asb_logger *log, asb_log_level level, const char *msg,
                    const asb_log_field *fields, size_t n)
{
	if (!asb_log_enabled(log, level))
		return;
	char ts[48];
	bool ts_number = timestamp(ts, sizeof(ts), (asb_log_time)atomic_load(&log->sink->time));
	linebuf b = { 0 };
	if (log->sink->format == ASB_LOG_JSON)
		json_line(&b, log, level, ts, ts_number, msg, fields, n);
	else
		text_line(&b, log, level, ts, msg, fields, n);
	lb_put(&b, "\n", 1);
	if (!b.oom && b.p) {
		pthread_mutex_lock(&log->sink->lock);
		fwrite(b.p, 1, b.len, log->sink->stream);
		fflush(log->sink->stream);
		pthread_mutex_unlock(&log->sink->lock);
	}
	free(b.p);
}

void asb_log(asb_logger *log, asb_log_level level, const char *msg, ...)
{
	if (!asb_log_enabled(log, level))
		return;
	/* the pairs as string fields: on the stack for the usual few */
	va_list ap;
	size_t n = 0;
	va_start(ap, msg);
	while (va_arg(ap, const char *) != NULL) {
		(void)va_arg(ap, const char *);
		n++;
	}
	va_end(ap);
	asb_log_field stack[16];
	asb_log_field *f = n <= 16 ? stack : malloc(n * sizeof(*f));
	if (!f)
		return;
	va_start(ap, msg);
	for (size_t i = 0; i < n; i++) {
		const char *k = va_arg(ap, const char *);
		f[i] = ASB_LOG_STR(k, va_arg(ap, const char *));
	}
	va_end(ap);
	asb_log_fields(log, level, msg, f, n);
	if (f != stack)
		free(f);
}
