/*
 * strbuf.h - a growable byte string (redis' sds, reduced). Internal to
 * libk8s: the metrics exposition and the HTTP server build their output
 * with it. An allocation failure is sticky: later appends do nothing and
 * `failed` stays set, so callers check once at the end.
 * Not thread-safe: one owner at a time.
 */
#ifndef K8S_STRBUF_H
#define K8S_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	char *data;     /* NUL-terminated when not NULL */
	size_t len;     /* bytes used, not counting the NUL */
	size_t cap;     /* bytes allocated */
	bool failed;    /* an append ran out of memory */
} k8s_strbuf;

#define K8S_STRBUF_INIT { NULL, 0, 0, false }

/** Appends `n` bytes of `s`. Returns 0, or -1 once out of memory. */
int k8s_strbuf_add(k8s_strbuf *b, const char *s, size_t n);

/** Appends a NUL-terminated string. */
int k8s_strbuf_adds(k8s_strbuf *b, const char *s);

/** Appends one byte. */
int k8s_strbuf_addc(k8s_strbuf *b, char c);

/** Appends printf-style formatted text. */
int k8s_strbuf_addf(k8s_strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** Hands the data to the caller (who frees it) and resets the buffer. */
char *k8s_strbuf_detach(k8s_strbuf *b, size_t *len);

/** Frees the data and resets the buffer. */
void k8s_strbuf_free(k8s_strbuf *b);

#endif
