/*
 * buf.h - a growable byte buffer (rt_buf) for the heads the router writes.
 * Always NUL-terminated after the `len` bytes. Not thread-safe.
 */
#ifndef RT_BUF_H
#define RT_BUF_H

#include <stddef.h>

typedef struct {
	char *p;      /* NULL until the first append */
	size_t len;
	size_t cap;
	int oom;      /* an append failed: the content is incomplete */
} rt_buf;

/** Appends `n` bytes; returns 0 or -1 (out of memory: `oom` set). */
int rt_buf_add(rt_buf *b, const void *data, size_t n);
/** Appends a NUL-terminated string; as rt_buf_add(). */
int rt_buf_str(rt_buf *b, const char *s);
/** Appends printf-style; as rt_buf_add(). */
int rt_buf_fmt(rt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Frees the storage and resets to empty. */
void rt_buf_free(rt_buf *b);

#endif
