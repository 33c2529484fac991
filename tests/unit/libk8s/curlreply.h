/*
 * curlreply.h - for the HTTP server tests: a libcurl reply captured in
 * fixed buffers (status, header lines, body; what does not fit is dropped,
 * the buffers stay NUL-terminated). Header-only, test code.
 */
#ifndef TESTS_CURLREPLY_H
#define TESTS_CURLREPLY_H

#include <curl/curl.h>
#include <string.h>

typedef struct {
	long status;
	char body[16384];
	size_t len;
	char headers[4096];
	size_t hlen;
	CURLcode rc;
} reply;

/* CURLOPT_WRITEFUNCTION, with CURLOPT_WRITEDATA a reply */
static inline size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	reply *r = ud;
	size_t len = size * n;
	if (r->len + len < sizeof(r->body)) {
		memcpy(r->body + r->len, p, len);
		r->len += len;
		r->body[r->len] = '\0';
	}
	return len;
}

/* CURLOPT_HEADERFUNCTION, with CURLOPT_HEADERDATA a reply */
static inline size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	reply *r = ud;
	size_t len = size * n;
	if (r->hlen + len < sizeof(r->headers)) {
		memcpy(r->headers + r->hlen, p, len);
		r->hlen += len;
		r->headers[r->hlen] = '\0';
	}
	return len;
}

#endif
