/*
 * buf.c - growable byte buffer (buf.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"

static int reserve(rt_buf *b, size_t extra)
{
	if (b->oom)
		return -1;
	if (b->len + extra + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

int rt_buf_add(rt_buf *b, const void *data, size_t n)
{
	if (reserve(b, n) < 0)
		return -1;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int rt_buf_str(rt_buf *b, const char *s)
{
	return rt_buf_add(b, s, strlen(s));
}

int rt_buf_fmt(rt_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(b, (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void rt_buf_free(rt_buf *b)
{
	free(b->p);
	*b = (rt_buf){ 0 };
}
