/*
 * accesslog.c - JSON access log lines (accesslog.h).
 *
 * A line is written for every proxied request, so it is built without an
 * allocation: cJSON nodes on the stack (string references and constant
 * keys, numbers as raw text formatted here) printed by cJSON into a stack
 * buffer. cJSON still does every escape.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "asb/strbuf.h"
#include "accesslog.h"

enum { NFIELDS = 13 };

bool rt_access_skip(const char *path)
{
	return !strcmp(path, "/healthz") || !strcmp(path, "/readyz") || !strcmp(path, "/metrics");
}

/* `ms` with at most three decimals, trailing zeros dropped (as cJSON
 * prints the double the log used to carry: 2.119, 1.5, 12). */
static void format_ms(char *out, double ms)
{
	long long us = ms > 0 ? (long long)(ms * 1000) : 0;
	size_t n = asb_format_int(out, us / 1000);
	int frac = (int)(us % 1000);
	if (frac) {
		out[n++] = '.';
		out[n++] = (char)('0' + frac / 100);
		out[n++] = (char)('0' + frac / 10 % 10);
		out[n++] = (char)('0' + frac % 10);
		while (out[n - 1] == '0')
			n--;
	}
	out[n] = '\0';
}

static void field(cJSON *f, const char *key, int type, const char *value)
{
	f->string = (char *)key;
	f->type = type | cJSON_IsReference | cJSON_StringIsConst;
	f->valuestring = (char *)(value ? value : "");
}

/* Prints the line for `e` into buf (cap bytes) with its newline and NUL;
 * its length, or 0 when it does not fit. */
static size_t format_line(const rt_access_entry *e, const char *ts, char *buf, size_t cap)
{
	char status[24], dur[32], bytes[24];
	status[asb_format_int(status, e->status)] = '\0';
	format_ms(dur, e->duration_ms);
	bytes[asb_format_int(bytes, (long long)e->bytes_out)] = '\0';
	cJSON f[NFIELDS];
	memset(f, 0, sizeof(f));
	field(&f[0], "level", cJSON_String, "info");  /* zap's key order, as asb/log.h */
	field(&f[1], "ts", cJSON_String, ts);
	field(&f[2], "logger", cJSON_String, "sandbox-router.access");
	field(&f[3], "msg", cJSON_String, "request");
	field(&f[4], "method", cJSON_String, e->method);
	field(&f[5], "path", cJSON_String, e->path);
	field(&f[6], "status", cJSON_Raw, status);
	field(&f[7], "duration_ms", cJSON_Raw, dur);
	field(&f[8], "client_ip", cJSON_String, e->client_ip);
	field(&f[9], "sandbox_id", cJSON_String, e->sandbox_id);
	field(&f[10], "sandbox_namespace", cJSON_String, e->sandbox_namespace);
	field(&f[11], "bytes_out", cJSON_Raw, bytes);
	field(&f[12], "user_agent", cJSON_String, e->user_agent);
	/* the request's bytes may be any bytes: JSON must be UTF-8, so a value
	 * that is not gets a copy with U+FFFD for each stray byte (rare: an
	 * allocation only then) */
	asb_strbuf clean[NFIELDS] = { 0 };
	bool ok = true;
	for (int i = 0; i < NFIELDS; i++) {
		f[i].next = i + 1 < NFIELDS ? &f[i + 1] : NULL;
		f[i].prev = i ? &f[i - 1] : &f[NFIELDS - 1];
		if (cJSON_IsString(&f[i]) && !asb_utf8_valid(f[i].valuestring)) {
			ok &= asb_strbuf_add_utf8(&clean[i], f[i].valuestring) == 0;
			f[i].valuestring = clean[i].data ? clean[i].data : "";
		}
	}
	cJSON root = { .type = cJSON_Object, .child = &f[0] };
	/* cJSON asks for 5 bytes more than it prints; one more for the newline */
	ok = ok && cap >= 8 && cap <= (size_t)INT32_MAX &&
	     cJSON_PrintPreallocated(&root, buf, (int)cap - 1, 0);
	for (int i = 0; i < NFIELDS; i++)
		asb_strbuf_free(&clean[i]);
	if (!ok)
		return 0;
	size_t n = strlen(buf);
	buf[n++] = '\n';
	buf[n] = '\0';
	return n;
}

char *rt_access_line(const rt_access_entry *e, const char *ts)
{
	for (size_t cap = 1024;; cap *= 4) {
		char *buf = malloc(cap);
		if (!buf)
			return NULL;
		if (format_line(e, ts, buf, cap))
			return buf;
		free(buf);
		if (cap > ((size_t)1 << 28))
			return NULL;
	}
}

/* The RFC 3339 stamp of now, in milliseconds: the seconds part is
 * formatted once a second per thread. */
static void stamp(char ts[40])
{
	static __thread time_t last_sec = -1;
	static __thread char prefix[32];
	static __thread size_t prefix_len;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	if (now.tv_sec != last_sec) {
		struct tm tm;
		gmtime_r(&now.tv_sec, &tm);
		prefix_len = strftime(prefix, sizeof(prefix), "%Y-%m-%dT%H:%M:%S", &tm);
		last_sec = now.tv_sec;
	}
	memcpy(ts, prefix, prefix_len);
	int ms = (int)(now.tv_nsec / 1000000);
	char *p = ts + prefix_len;
	*p++ = '.';
	*p++ = (char)('0' + ms / 100);
	*p++ = (char)('0' + ms / 10 % 10);
	*p++ = (char)('0' + ms % 10);
	*p++ = 'Z';
	*p = '\0';
}

/* Writes the whole line. With nothing pending in the stream's buffer (an
 * unbuffered stderr, as deployed) it goes straight to the descriptor: one
 * write(2) a line, which keeps lines whole among the other logs, without
 * the stream lock that the loop threads would otherwise contend for on
 * every request. */
/* A line up to PIPE_BUF is one atomic write(2) even into a pipe, so the
 * loop threads write theirs side by side (shared); a longer one (a long
 * path or user agent) might be split there, and goes alone (exclusive). */
static pthread_rwlock_t line_lock = PTHREAD_RWLOCK_INITIALIZER;

static void write_all(int fd, const char *line, size_t n);

static void put_line(FILE *out, const char *line, size_t n)
{
	int fd = fileno(out);
	if (fd < 0 || __fpending(out) > 0) {
		fwrite(line, 1, n, out);
		fflush(out);
		return;
	}
	bool alone = n > PIPE_BUF;
	if (alone)
		pthread_rwlock_wrlock(&line_lock);
	else
		pthread_rwlock_rdlock(&line_lock);
	write_all(fd, line, n);
	pthread_rwlock_unlock(&line_lock);
}

static void write_all(int fd, const char *line, size_t n)
{
	while (n) {
		ssize_t w = write(fd, line, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;  /* a log that cannot be written is dropped */
		line += w;
		n -= (size_t)w;
	}
}

void rt_access_log(FILE *out, const rt_access_entry *e)
{
	char ts[40], buf[2048];
	stamp(ts);
	size_t n = format_line(e, ts, buf, sizeof(buf));
	if (n) {
		put_line(out, buf, n);
		return;
	}
	char *line = rt_access_line(e, ts);  /* a long path or user agent */
	if (!line)
		return;
	put_line(out, line, strlen(line));
	free(line);
}
