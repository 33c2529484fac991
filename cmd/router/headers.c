/*
 * headers.c - request and response head rewriting (headers.h).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "headers.h"

static const char *const hop_by_hop[] = {
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", NULL,
};

/* Dropped from requests besides the hop-by-hop fields: the router sets
 * Host, X-Forwarded-* and the framing itself, never forwards credentials,
 * and the client's Expect was answered by the server already. */
static const char *const request_drop[] = {
	"Host", "Authorization", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host",
	"X-Forwarded-Proto", "Content-Length", "Expect", NULL,
};

/* Dropped from responses besides the hop-by-hop fields: the server writes
 * the framing and the date of the message it sends. */
static const char *const response_drop[] = { "Content-Length", "Date", NULL };

/* The lists' names start with a letter: comparing first letters (ASCII
 * case folded) rules most out before strcasecmp, which ran ~150 times a
 * proxied request. */
static bool in_list(const char *name, const char *const *list)
{
	unsigned char c = (unsigned char)name[0] | 0x20;
	for (; *list; list++)
		if (((unsigned char)(*list)[0] | 0x20) == c && strcasecmp(name, *list) == 0)
			return true;
	return false;
}

bool rt_headers_hop_by_hop(const char *name)
{
	return in_list(name, hop_by_hop);
}

/* The next element of the comma-separated list at *v, without its
 * surrounding blanks: its start, its length in *len (0 for an empty
 * element); *v moves past it. NULL at the end of the list. */
static const char *list_next(const char **v, size_t *len)
{
	const char *p = *v;
	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	if (!*p) {
		*v = p;
		return NULL;
	}
	const char *s = p;
	while (*p && *p != ',')
		p++;
	const char *e = p;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*v = p;
	*len = (size_t)(e - s);
	return s;
}

/* True when the comma-separated list `v` holds `token` (case-insensitive). */
static bool list_has(const char *v, const char *token)
{
	size_t tn = strlen(token), len;
	for (const char *s; (s = list_next(&v, &len));)
		if (len == tn && strncasecmp(s, token, tn) == 0)
			return true;
	return false;
}

bool rt_headers_connection_names(const rt_header *hs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(hs[i].name, "Connection") == 0 && list_has(hs[i].value, name))
			return true;
	return false;
}

/* The names listed by a head's Connection fields, sorted, so that each
 * field is looked up in O(log n): checking every field against every
 * list was quadratic in the field count, seconds of a loop thread for one
 * 64 KiB head. */
typedef struct {
	const char *p;
	size_t n;
} conn_token;

typedef struct {
	conn_token *t;
	size_t n;
} conn_set;

static int token_cmp(const void *a, const void *b)
{
	const conn_token *x = a, *y = b;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return strncasecmp(x->p, y->p, x->n);
}

/* Stores the tokens of hs's Connection fields in out (when not NULL); their count. */
static size_t each_token(const rt_header *hs, size_t n, conn_token *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (((unsigned char)hs[i].name[0] | 0x20) != 'c' || strcasecmp(hs[i].name, "Connection") != 0)
			continue;
		const char *v = hs[i].value;
		size_t len;
		for (const char *s; (s = list_next(&v, &len));) {
			if (len) {
				if (out)
					out[k] = (conn_token){ s, len };
				k++;
			}
		}
	}
	return k;
}

/* 0, or -1 when out of memory. */
static int conn_set_build(conn_set *cs, const rt_header *hs, size_t n)
{
	cs->t = NULL;
	cs->n = each_token(hs, n, NULL);
	if (!cs->n)
		return 0;
	cs->t = malloc(cs->n * sizeof(*cs->t));
	if (!cs->t)
		return -1;
	each_token(hs, n, cs->t);
	qsort(cs->t, cs->n, sizeof(*cs->t), token_cmp);
	return 0;
}

static bool conn_set_has(const conn_set *cs, const char *name)
{
	conn_token key = { name, strlen(name) };
	return cs->n && bsearch(&key, cs->t, cs->n, sizeof(*cs->t), token_cmp) != NULL;
}

bool rt_header_name_valid(const char *name)
{
	/* tchar of RFC 9110 §5.6.2 */
	static const char extra[] = "!#$%&'*+-.^_`|~";
	if (!*name)
		return false;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr(extra, *p)))
			return false;
	return true;
}

bool rt_header_value_valid(const char *value)
{
	for (const unsigned char *p = (const unsigned char *)value; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	return true;
}

bool rt_headers_wants_upgrade(const rt_head *h)
{
	bool conn = false;
	for (size_t i = 0; i < h->nheaders; i++)
		if (strcasecmp(h->headers[i].name, "Connection") == 0 &&
		    list_has(h->headers[i].value, "upgrade"))
			conn = true;
	const char *up = rt_head_get(h, "Upgrade");
	return conn && up && *up;
}

void rt_headers_framing(const rt_head *h, rt_framing *out)
{
	*out = (rt_framing){ .content_length = -1 };
	if (rt_head_get(h, "Transfer-Encoding")) {
		out->chunked = true;
		out->has_body = true;
		return;
	}
	const char *cl = rt_head_get(h, "Content-Length");
	if (cl) {
		out->content_length = strtoll(cl, NULL, 10);
		out->has_body = out->content_length > 0;
	}
}

static bool target_valid(const char *t)
{
	if (t[0] != '/')
		return false;
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

int rt_headers_request(const rt_head *h, const rt_outbound *o, asb_strbuf *out, rt_reject *rej)
{
	if (!target_valid(h->target))
		return rt_reject_set(rej, 400, "Invalid request target.");
	conn_set cs;
	if (conn_set_build(&cs, h->headers, h->nheaders) < 0)
		return rt_reject_set(rej, 500, "Out of memory.");
	bool v6 = strchr(o->host, ':') != NULL;
	asb_strbuf_reserve(out, RT_HEAD_ROOM);
	/* no printf here: this head is built for every proxied request */
	asb_strbuf_adds(out, h->method);
	asb_strbuf_addc(out, ' ');
	asb_strbuf_adds(out, h->target);
	asb_strbuf_adds(out, v6 ? " HTTP/1.1\r\nHost: [" : " HTTP/1.1\r\nHost: ");
	asb_strbuf_adds(out, o->host);
	asb_strbuf_adds(out, v6 ? "]:" : ":");
	asb_strbuf_add_int(out, o->port);
	asb_strbuf_add(out, "\r\n", 2);
	for (size_t i = 0; i < h->nheaders; i++) {
		const rt_header *f = &h->headers[i];
		if (!rt_header_name_valid(f->name)) {
			free(cs.t);
			return rt_reject_set(rej, 400, "Invalid header field name.");
		}
		if (!rt_header_value_valid(f->value)) {
			free(cs.t);
			return rt_reject_set(rej, 400, "Invalid value in header field %s.", f->name);
		}
		if (in_list(f->name, hop_by_hop) || in_list(f->name, request_drop) ||
		    conn_set_has(&cs, f->name))
			continue;
		if (o->upgrade && strcasecmp(f->name, "Origin") == 0)
			continue;
		asb_strbuf_adds(out, f->name);
		asb_strbuf_add(out, ": ", 2);
		asb_strbuf_adds(out, f->value);
		asb_strbuf_add(out, "\r\n", 2);
	}
	free(cs.t);
	/* client-supplied forwarding fields are never trusted or chained */
	if (h->peer_ip && *h->peer_ip) {
		asb_strbuf_adds(out, "X-Forwarded-For: ");
		asb_strbuf_adds(out, h->peer_ip);
		asb_strbuf_add(out, "\r\n", 2);
	}
	const char *host = rt_head_get(h, "Host");
	if (host && *host) {
		asb_strbuf_adds(out, "X-Forwarded-Host: ");
		asb_strbuf_adds(out, host);
		asb_strbuf_add(out, "\r\n", 2);
	}
	asb_strbuf_adds(out, h->tls ? "X-Forwarded-Proto: https\r\n" : "X-Forwarded-Proto: http\r\n");
	/* RFC 9110 §7.6.3; also how a request that loops back is caught */
	asb_strbuf_adds(out, "Via: 1.1 " RT_VIA_PSEUDONYM "\r\n");
	if (o->upgrade) {
		const char *up = rt_head_get(h, "Upgrade");
		asb_strbuf_adds(out, "Connection: Upgrade\r\nUpgrade: ");
		asb_strbuf_adds(out, up ? up : "(null)");
		asb_strbuf_add(out, "\r\n", 2);
	}
	if (o->framing.chunked) {
		asb_strbuf_adds(out, "Transfer-Encoding: chunked\r\n");
	} else if (o->framing.content_length >= 0) {
		asb_strbuf_adds(out, "Content-Length: ");
		asb_strbuf_add_int(out, o->framing.content_length);
		asb_strbuf_add(out, "\r\n", 2);
	}
	asb_strbuf_add(out, "\r\n", 2);
	if (out->failed)
		return rt_reject_set(rej, 500, "Out of memory.");
	return 0;
}

void rt_headers_response(const rt_header *hs, size_t n, bool upgrade,
                         void (*emit)(const char *name, const char *value, void *ud), void *ud)
{
	conn_set cs;
	bool have_set = conn_set_build(&cs, hs, n) == 0;  /* else the slow lookup */
	for (size_t i = 0; i < n; i++) {
		const char *name = hs[i].name;
		if (!rt_header_name_valid(name) || !rt_header_value_valid(hs[i].value))
			continue;
		if (in_list(name, response_drop))
			continue;
		bool keep = upgrade && strcasecmp(name, "Upgrade") == 0;
		if (!keep && (in_list(name, hop_by_hop) ||
		              (have_set ? conn_set_has(&cs, name) : rt_headers_connection_names(hs, n, name))))
			continue;
		emit(name, hs[i].value, ud);
	}
	if (have_set)
		free(cs.t);
}
