/*
 * strbuf.c - growable byte string (see strbuf.h). Capacity doubles, so
 * appending n bytes one at a time costs O(n) in total.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/strbuf.h"

static int reserve(asb_strbuf *b, size_t extra)
{
	if (b->failed)
		return -1;
	if (extra >= (size_t)-1 - b->len) {
		b->failed = true;
		return -1;
	}
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > (size_t)-1 / 2 ? need : cap * 2;
	char *d = realloc(b->data, cap);
	if (!d) {
		b->failed = true;
		return -1;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

int asb_strbuf_reserve(asb_strbuf *b, size_t n)
{
	return reserve(b, n);
}

int asb_strbuf_add(asb_strbuf *b, const char *s, size_t n)
{
	/* the usual case, room for n bytes and the NUL, without the call
	 * (len < cap whenever cap > 0) */
	if ((b->failed || n >= b->cap - b->len) && reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int asb_strbuf_adds(asb_strbuf *b, const char *s)
{
	return asb_strbuf_add(b, s, strlen(s));
}

/* The length of the well-formed UTF-8 sequence (RFC 3629) at `p`, or 0:
 * no overlongs, surrogates or code points above U+10FFFF. */
static size_t utf8_seq(const unsigned char *p)
{
	unsigned c = p[0], lo = 0x80, hi = 0xbf;
	size_t n;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (p[1] < lo || p[1] > hi)   /* a NUL ends the check here */
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

bool asb_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t n; *p; p += n)
		if (!(n = utf8_seq(p)))
			return false;
	return true;
}

int asb_strbuf_add_utf8(asb_strbuf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		/* the longest valid run in one append */
		size_t run = 0, n;
		while (p[run] && (n = utf8_seq(p + run)))
			run += n;
		asb_strbuf_add(b, (const char *)p, run);
		p += run;
		if (*p) {
			asb_strbuf_add(b, "\xef\xbf\xbd", 3);
			p++;
		}
	}
	return b->failed ? -1 : 0;
}

int asb_strbuf_addc(asb_strbuf *b, char c)
{
	return asb_strbuf_add(b, &c, 1);
}

size_t asb_format_int(char *out, long long v)
{
	char tmp[24];
	size_t n = 0;
	/* as unsigned, so that LLONG_MIN negates without overflow */
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	size_t k = 0;
	if (v < 0)
		out[k++] = '-';
	while (n)
		out[k++] = tmp[--n];
	return k;
}

int asb_strbuf_add_int(asb_strbuf *b, long long v)
{
	char d[24];
	return asb_strbuf_add(b, d, asb_format_int(d, v));
}

int asb_strbuf_addf(asb_strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(b, (size_t)n) < 0) {
		b->failed = true;
		return -1;
	}
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *asb_strbuf_detach(asb_strbuf *b, size_t *len)
{
	char *d = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	b->failed = false;
	return d;
}

void asb_strbuf_free(asb_strbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->failed = false;
}
