/*
 * libFuzzer target: the router's request path. The input is a raw HTTP
 * request; httpd/parser.h (as the server uses it) reads its head, then the
 * router's pure steps run on it: framing checks, routing headers, target
 * resolution over a small fake cache, authorization of a scoped token,
 * and the request head written for the sandbox. Oracle: whenever the
 * router accepts the request, the head it writes must parse back with
 * httpd/parser.h as exactly one request, to the same target, with every field
 * a token name and a value without CR, LF or NUL (no injection, no
 * smuggling), and the response filter must keep only valid fields.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "httpd/parser.h"
#include "authz.h"
#include "contract.h"
#include "headers.h"
#include "resolve.h"

#define MAX_FIELDS 64             /* of the input */
#define MAX_OUT_FIELDS (MAX_FIELDS + 8)  /* the router adds Host, X-Forwarded-* */

typedef struct {
	char *names[MAX_OUT_FIELDS], *values[MAX_OUT_FIELDS];
	size_t n, max;
	bool in_value, done, bad;
	char *url;
	const char *method;  /* of the first head */
	size_t requests;
} head_state;

static char *append(char *s, const char *at, size_t len)
{
	size_t old = s ? strlen(s) : 0;
	char *p = realloc(s, old + len + 1);
	if (!p)
		abort();
	memcpy(p + old, at, len);
	p[old + len] = '\0';
	return p;
}

static int on_url(httpd_parser *p, const char *at, size_t len)
{
	head_state *h = httpd_parser_data(p);
	if (h->done)
		return 0;  /* a second message in the input: the first head is the request */
	h->url = append(h->url, at, len);
	return 0;
}

static int on_field(httpd_parser *p, const char *at, size_t len)
{
	head_state *h = httpd_parser_data(p);
	if (h->done)
		return 0;
	if (h->in_value || !h->n) {
		if (h->n == h->max) {
			h->bad = true;
			return -1;
		}
		h->names[h->n] = append(NULL, "", 0);
		h->values[h->n] = append(NULL, "", 0);
		h->n++;
		h->in_value = false;
	}
	h->names[h->n - 1] = append(h->names[h->n - 1], at, len);
	return 0;
}

static int on_value(httpd_parser *p, const char *at, size_t len)
{
	head_state *h = httpd_parser_data(p);
	if (h->done)
		return 0;
	h->in_value = true;
	h->values[h->n - 1] = append(h->values[h->n - 1], at, len);
	return 0;
}

static int on_headers(httpd_parser *p)
{
	head_state *h = httpd_parser_data(p);
	if (!h->done)
		h->method = httpd_parser_method(p);
	h->done = true;
	h->requests++;
	return 1;  /* no body: the head is what matters */
}

static const httpd_parser_callbacks settings = {
	.on_url = on_url, .on_header_field = on_field, .on_header_value = on_value,
	.on_headers_complete = on_headers,
};

static void state_free(head_state *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->names[i]);
		free(h->values[i]);
	}
	free(h->url);
	memset(h, 0, sizeof(*h));
}

/* ---- a fake cache: sandbox "alpha" in "team" on 10.0.0.1 ---- */

static bool v_auth(void *ud, const char *ns) { return strcmp(ns, "team") == 0; }
static bool v_synced(void *ud) { return true; }
static int v_sandbox(void *ud, const char *ns, const char *name, rt_sandbox_info *out)
{
	if (strcmp(ns, "team") || strcmp(name, "alpha"))
		return -1;
	memset(out, 0, sizeof(*out));
	strcpy(out->uid, "u1");
	strcpy(out->pod_name, "alpha");
	return 0;
}
static int pod(rt_pod_info *out)
{
	memset(out, 0, sizeof(*out));
	strcpy(out->ns, "team");
	strcpy(out->name, "alpha");
	strcpy(out->owner_uid, "u1");
	strcpy(out->owner_name, "alpha");
	strcpy(out->ips[0], "10.0.0.1");
	out->nips = 1;
	out->ready = true;
	return 0;
}
static int v_pod(void *ud, const char *ns, const char *name, rt_pod_info *out)
{
	return strcmp(ns, "team") || strcmp(name, "alpha") ? -1 : pod(out);
}
static int v_owned(void *ud, const char *uid, rt_pod_info *out, int cap)
{
	return strcmp(uid, "u1") || cap < 1 ? 0 : (pod(out), 1);
}
static int v_with_ip(void *ud, const char *ip, rt_pod_info *out, int cap)
{
	return strcmp(ip, "10.0.0.1") || cap < 1 ? 0 : (pod(out), 1);
}
static const rt_cache_view view = { v_auth, v_synced, v_sandbox, v_pod, v_owned, v_with_ip, NULL };

static void check_field(const char *name, const char *value, void *ud)
{
	if (!rt_header_name_valid(name) || !rt_header_value_valid(value))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	head_state h = { .max = MAX_FIELDS };
	httpd_parser p;
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &settings, &h);
	httpd_parser_execute(&p, (const char *)data, size, NULL);
	if (!h.done || h.bad || !h.url) {
		state_free(&h);
		return 0;
	}
	rt_header hs[MAX_FIELDS];
	for (size_t i = 0; i < h.n; i++)
		hs[i] = (rt_header){ h.names[i], h.values[i] };
	const char *q = strchr(h.url, '?');
	char *path = q ? strndup(h.url, (size_t)(q - h.url)) : strdup(h.url);
	rt_head head = { .method = h.method, .target = h.url,
	                 .path = path, .headers = hs, .nheaders = h.n, .peer_ip = "10.9.9.9",
	                 .tls = size & 1 };
	rt_reject rej;
	rt_route route;
	rt_target target;
	if (rt_contract_framing(&head, &rej) == 0 &&
	    rt_contract_route(&head, size & 2, &route, &rej) == 0) {
		static const unsigned char key[32] = "0123456789abcdef0123456789abcde";
		size_t tl = 0;
		const char *tok = rt_bearer(rt_head_get(&head, "Authorization"), &tl);
		rt_scoped_claims claims;
		if (tok)
			rt_scoped_token_verify(key, 32, tok, tl, 1700000000, &claims);
		if (rt_resolve(&route, (size & 4) ? &view : NULL, "cluster.local", size & 2, &target,
		               &rej) == 0) {
			rt_outbound o = { .host = target.host, .port = target.port,
			                  .upgrade = rt_headers_wants_upgrade(&head) };
			rt_headers_framing(&head, &o.framing);
			asb_strbuf out = ASB_STRBUF_INIT;
			if (rt_headers_request(&head, &o, &out, &rej) == 0) {
				/* the oracle: one well-formed request to the same target */
				head_state back = { .max = MAX_OUT_FIELDS };
				httpd_parser bp;
				httpd_parser_init(&bp, HTTPD_PARSER_REQUEST, &settings, &back);
				size_t n = 0;
				httpd_parser_execute(&bp, out.data, out.len, &n);
				if (!back.done || back.requests != 1 || n != out.len ||
				    strcmp(back.url, h.url) != 0) {
					if (getenv("FUZZ_DEBUG"))
						fprintf(stderr, "done=%d requests=%zu n=%zu len=%zu errno=%s\n---\n%s---\n",
						        back.done, back.requests, n, out.len,
						        httpd_parser_error_name(&bp), out.data);
					abort();
				}
				for (size_t i = 0; i < back.n; i++)
					check_field(back.names[i], back.values[i], NULL);
				state_free(&back);
			}
			asb_strbuf_free(&out);
		}
	}
	rt_headers_response(hs, h.n, size & 8, check_field, NULL);
	free(path);
	state_free(&h);
	return 0;
}
