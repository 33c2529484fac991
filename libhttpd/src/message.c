/*
 * message.c - HTTP requests as handlers read them and responses as
 * handlers fill them (see httpd/server.h); the server (server.c) fills
 * requests from the parser's callbacks and serialises responses.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "server_internal.h"

void httpd__request_reset(httpd_request *r)
{
	asb_strbuf_free(&r->head);
	free(r->headers);
	asb_strbuf_free(&r->body);
	memset(r, 0, sizeof(*r));
}

/* Usual heads fit in this without a reallocation. */
#define HEAD_ROOM 1000  /* with the NUL, a 1 KiB block: in malloc's per-thread cache */

static int head_add(httpd_request *r, const char *at, size_t len)
{
	if (!r->head.data)
		asb_strbuf_reserve(&r->head, HEAD_ROOM);
	return asb_strbuf_add(&r->head, at, len);
}

static int end_url(httpd_request *r)
{
	if (r->url_done)
		return 0;
	r->url_done = true;
	return head_add(r, "", 1);
}

int httpd__request_add_url(httpd_request *r, const char *at, size_t len)
{
	r->url_len += len;
	return head_add(r, at, len);
}

int httpd__request_add_field(httpd_request *r, const char *at, size_t len)
{
	if (r->head_done)
		return 0;
	if (r->in_value && httpd__request_end_header(r) < 0)
		return -1;
	if (!r->in_field) {
		if (end_url(r) < 0)
			return -1;
		r->in_field = true;
		r->field_off = r->head.len;
	}
	return head_add(r, at, len);
}

/* The name is whole: its NUL, and the value starts. */
static int begin_value(httpd_request *r)
{
	if (r->in_value)
		return 0;
	r->in_value = true;
	if (head_add(r, "", 1) < 0)
		return -1;
	r->value_off = r->head.len;
	return 0;
}

int httpd__request_add_value(httpd_request *r, const char *at, size_t len)
{
	if (r->head_done || !r->in_field)
		return 0;
	if (begin_value(r) < 0)
		return -1;
	return head_add(r, at, len);
}

/* Moves the header being received into the list. */
int httpd__request_end_header(httpd_request *r)
{
	if (!r->in_field)
		return 0;
	if (r->nheaders == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		httpd__header *h = realloc(r->headers, cap * sizeof(*h));
		if (!h)
			return -1;
		r->headers = h;
		r->cap = cap;
	}
	if (begin_value(r) < 0)
		return -1;
	/* http-parser strips leading blanks of a value, not trailing ones */
	while (r->head.len > r->value_off && (r->head.data[r->head.len - 1] == ' ' ||
	                                      r->head.data[r->head.len - 1] == '\t'))
		r->head.len--;
	if (head_add(r, "", 1) < 0)
		return -1;
	r->headers[r->nheaders++] = (httpd__header){ .name_off = r->field_off,
	                                            .value_off = r->value_off };
	r->in_field = r->in_value = false;
	return 0;
}

int httpd__request_head_done(httpd_request *r, long path_off, size_t path_len,
                             long query_off, size_t query_len)
{
	if (httpd__request_end_header(r) < 0 || end_url(r) < 0)
		return -1;
	/* the path and the query are copies from the target, with their NULs */
	if (path_off < 0)
		path_len = 1;
	if (query_off < 0)
		query_len = 0;
	if (asb_strbuf_reserve(&r->head, path_len + query_len + 2) < 0)
		return -1;
	size_t p = r->head.len;
	asb_strbuf_add(&r->head, path_off < 0 ? "/" : r->head.data + path_off, path_len);
	asb_strbuf_add(&r->head, "", 1);
	size_t q = r->head.len;
	asb_strbuf_add(&r->head, query_off < 0 ? "" : r->head.data + query_off, query_len);
	asb_strbuf_add(&r->head, "", 1);
	if (r->head.failed)
		return -1;
	char *d = r->head.data;
	r->path = d + p;
	r->query = d + q;
	for (size_t i = 0; i < r->nheaders; i++) {
		r->headers[i].name = d + r->headers[i].name_off;
		r->headers[i].value = d + r->headers[i].value_off;
	}
	r->head_done = true;
	return 0;
}

const char *httpd_request_method(const httpd_request *req)
{
	return req && req->method ? req->method : "";
}

const char *httpd_request_path(const httpd_request *req)
{
	return req && req->path ? req->path : "";
}

const char *httpd_request_query(const httpd_request *req)
{
	return req && req->query ? req->query : "";
}

const char *httpd_request_header(const httpd_request *req, const char *name)
{
	if (!req || !name)
		return NULL;
	for (size_t i = 0; i < req->nheaders; i++)
		if (strcasecmp(req->headers[i].name, name) == 0)
			return req->headers[i].value;
	return NULL;
}

size_t httpd_request_header_count(const httpd_request *req)
{
	return req ? req->nheaders : 0;
}

int httpd_request_header_at(const httpd_request *req, size_t i,
                               const char **name, const char **value)
{
	if (!req || i >= req->nheaders)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http request: no header %zu", i);
	if (name)
		*name = req->headers[i].name;
	if (value)
		*value = req->headers[i].value;
	return 0;
}

const char *httpd_request_body(const httpd_request *req, size_t *len)
{
	if (len)
		*len = req && req->body.data ? req->body.len : 0;
	return req && req->body.data ? req->body.data : "";
}

int httpd_response_set_status(httpd_response *res, int status)
{
	if (!res || status < 100 || status > 599)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http response: invalid status %d", status);
	res->status = status;
	return 0;
}

/* RFC 9110 token characters. */
static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c > 127 || !(isalnum(c) || strchr("!#$%&'*+-.^_`|~", c)))
			return false;
	}
	return true;
}

int httpd_response_add_header(httpd_response *res, const char *name, const char *value)
{
	if (!res || !name || !value || !is_token(name) || strpbrk(value, "\r\n"))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http response: invalid header \"%s\"", name ? name : "(null)");
	static const char *const owned[] = { "Content-Length", "Date", "Connection",
	                                     "Transfer-Encoding", NULL };
	/* first letters (ASCII case folded) before strcasecmp: a proxy adds
	 * every field of every answer here */
	unsigned char c0 = (unsigned char)name[0] | 0x20;
	for (size_t i = 0; owned[i]; i++)
		if (((unsigned char)owned[i][0] | 0x20) == c0 && strcasecmp(name, owned[i]) == 0)
			return asb_error_set(ASB_EINVAL, 0, NULL,
			                     "http response: the server writes %s itself", owned[i]);
	if (c0 == 'c' && strcasecmp(name, "Content-Type") == 0)
		res->has_content_type = true;
	if (!res->headers.data)
		asb_strbuf_reserve(&res->headers, 512);  /* once, for the usual head */
	asb_strbuf_adds(&res->headers, name);
	asb_strbuf_add(&res->headers, ": ", 2);
	asb_strbuf_adds(&res->headers, value);
	asb_strbuf_add(&res->headers, "\r\n", 2);
	return res->headers.failed
		? asb_error_set(ASB_ENOMEM, 0, NULL, "http response: out of memory") : 0;
}

int httpd_response_write(httpd_response *res, const void *data, size_t len)
{
	if (!res || (!data && len))
		return asb_error_set(ASB_EINVAL, 0, NULL, "http response: no data");
	asb_strbuf_add(&res->body, data, len);
	return res->body.failed
		? asb_error_set(ASB_ENOMEM, 0, NULL, "http response: out of memory") : 0;
}

/* Reason phrases as Go's net/http.StatusText writes them. */
const char *httpd__reason_phrase(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 203: return "Non-Authoritative Information";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 413: return "Request Entity Too Large";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Status";
	}
}

/* RFC 9110 IMF-fixdate, without the locale's day and month names;
 * formatted once a second per thread (every answer carries it). */
void httpd__date(char *buf, size_t cap)
{
	static const char *const days[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	static __thread time_t last = -1;
	static __thread char text[40];
	time_t now = time(NULL);
	if (now != last) {
		struct tm tm;
		gmtime_r(&now, &tm);
		snprintf(text, sizeof(text), "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday],
		         tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
		         tm.tm_min, tm.tm_sec);
		last = now;
	}
	size_t n = strlen(text);
	if (!cap)
		return;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, text, n);
	buf[n] = '\0';
}

void httpd__add_status_line(asb_strbuf *out, int status)
{
	asb_strbuf_add(out, "HTTP/1.1 ", 9);
	asb_strbuf_add_int(out, status);
	asb_strbuf_addc(out, ' ');
	asb_strbuf_adds(out, httpd__reason_phrase(status));
	asb_strbuf_add(out, "\r\n", 2);
}

void httpd__add_date(asb_strbuf *out)
{
	char date[40];
	httpd__date(date, sizeof(date));
	asb_strbuf_add(out, "Date: ", 6);
	asb_strbuf_adds(out, date);
	asb_strbuf_add(out, "\r\n", 2);
}

void httpd__response_free(httpd_response *res)
{
	asb_strbuf_free(&res->headers);
	asb_strbuf_free(&res->body);
}
