/*
 * httpserver.c - HTTP/1.1 server on libuv and http-parser (see httpserver.h).
 *
 * One loop thread per server owns everything below the public API: the
 * listener, the connections, their parsers and timers. Other threads talk
 * to it through one uv_async_t (shutdown) only; options and routes are
 * fixed before the thread starts.
 *
 * A connection (struct conn) goes through:
 *   idle -> receiving a request (parser callbacks fill conn->req) ->
 *   handler -> response queued -> idle again (keep-alive), or
 *   -> closing. An answer that closes the connection (errors, Connection:
 *   close, shutdown) is followed by a "lingering close": the write side is
 *   shut down and what the client still sends is read and dropped for a
 *   moment, so that a client still sending a body gets our answer instead
 *   of a TCP reset (the same reason Go's server lingers).
 *
 * Bytes move through a `transport`: plain TCP, or TLS (httpserver_tls.c),
 * which decrypts in on_read and encrypts in write.
 */
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>
#include <http_parser.h>
#include "k8s/httpserver.h"
#include "httpserver_internal.h"
#include "strbuf.h"

#define READ_BUFFER_BYTES 65536
#define LINGER_MS 500

typedef struct route {
	char *method;                  /* NULL: any */
	char *path;                    /* without the trailing '*' of a prefix */
	size_t path_len;
	bool prefix;
	k8s_http_handler_fn fn;
	void *userdata;
	void (*free_userdata)(void *);  /* NULL: the caller owns userdata */
} route;


typedef struct conn conn;

/* How bytes move between a connection and its socket. */
typedef struct {
	/* bytes arrived from the socket */
	void (*on_read)(conn *c, const char *data, size_t len);
	/* sends `len` bytes of `data` (malloc'd; the transport frees it) */
	int (*write)(conn *c, char *data, size_t len);
} transport;

typedef enum { CONN_OPEN, CONN_LINGER, CONN_CLOSING } conn_state;

struct conn {
	uv_tcp_t tcp;                  /* tcp.data == this */
	uv_timer_t timer;              /* idle / read / linger deadline */
	uv_shutdown_t shutdown_req;
	k8s_http_server *srv;
	const transport *tp;
	http_parser parser;
	conn *prev, *next;
	conn_state state;
	int open_handles;              /* tcp + timer; freed at 0 */

	k8s_http_request req;
	bool in_request;               /* bytes of a request received, not answered */
	size_t header_bytes;
	int reject_status;             /* 413/431 decided in a callback */
	bool close_after;              /* answer with Connection: close, then close */
	int pending_writes;
	k8s__tls_conn *tls;            /* NULL on plain HTTP */
};

struct k8s_http_server {
	char *name;
	char *host;                    /* "" : every interface */
	int port;
	bool disabled;
	size_t max_header_bytes, max_body_bytes;
	unsigned int max_connections;
	long idle_timeout_ms, read_timeout_ms;
	k8s_logger *log;
	k8s__tls_server *tls;          /* NULL: plain HTTP */
	route *routes;
	size_t nroutes;

	uv_loop_t loop;
	uv_tcp_t listener;
	uv_async_t wake;
	uv_timer_t deadline;
	pthread_t thread;
	bool started, joined;
	int bound_port;
	atomic_long shutdown_timeout_ms;
	atomic_int shutdown_rc;

	/* loop thread only */
	http_parser_settings settings;
	char read_buffer[READ_BUFFER_BYTES];
	conn *conns;
	unsigned int nconns;
	bool accept_pending;           /* the listener holds a connection we did not take */
	bool draining;
	bool finished;                 /* the last handles are closing */
};

static void conn_close(conn *c);
static void conn_feed(conn *c, const char *data, size_t len);
static void conn_finish(conn *c);
static void maybe_accept_or_finish(k8s_http_server *s);

/* --- options and addresses -------------------------------------------------- */

int k8s_http_server_options_init(k8s_http_server_options *opts, unsigned int version)
{
	k8s_http_server_options def = K8S_HTTP_SERVER_OPTIONS_INIT;
	if (!opts || version < 1 || version > K8S_HTTP_SERVER_OPTIONS_VERSION)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http server options: unknown version %u", version);
	/* a version 1 caller's struct ends before the TLS fields */
	def.version = version;
	memcpy(opts, &def, version == 1 ? offsetof(k8s_http_server_options, tls_cert_file) : sizeof(def));
	return 0;
}

bool k8s_http_address_disabled(const char *address)
{
	return address && strcmp(address, "0") == 0;
}

/* Go's net.SplitHostPort: "host:port", "[v6]:port", ":port"; numeric ports. */
static int split_host_port(const char *addr, char **host, int *port)
{
	const char *colon = strrchr(addr, ':');
	if (!colon)
		return -1;
	const char *h = addr;
	size_t hlen = (size_t)(colon - addr);
	if (hlen > 0 && addr[0] == '[') {
		if (addr[hlen - 1] != ']')
			return -1;
		h = addr + 1;
		hlen -= 2;
	} else if (memchr(addr, ':', hlen) || memchr(addr, '[', hlen) || memchr(addr, ']', hlen)) {
		return -1;  /* "::1:80": IPv6 needs brackets */
	}
	const char *p = colon + 1;
	if (!*p || strlen(p) > 5)
		return -1;
	long v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (v > 65535)
		return -1;
	if (!(*host = strndup(h, hlen)))
		return -2;
	*port = (int)v;
	return 0;
}

/* --- connections ---------------------------------------------------------------- */

typedef struct {
	uv_write_t req;
	conn *c;
	char *data;
} write_req;

static void on_write(uv_write_t *w, int status)
{
	write_req *wr = (write_req *)w;
	conn *c = wr->c;
	free(wr->data);
	free(wr);
	c->pending_writes--;
	if (status < 0) {
		k8s_log(c->srv->log, K8S_LOG_DEBUG, "http write failed", "server", c->srv->name,
		        "error", uv_strerror(status), NULL);
		conn_close(c);
	}
}

static int plain_write(conn *c, char *data, size_t len)
{
	write_req *wr = malloc(sizeof(*wr));
	if (!wr) {
		free(data);
		return -1;
	}
	wr->c = c;
	wr->data = data;
	uv_buf_t buf = uv_buf_init(data, (unsigned int)len);
	int rc = uv_write(&wr->req, (uv_stream_t *)&c->tcp, &buf, 1, on_write);
	if (rc < 0) {
		free(data);
		free(wr);
		return -1;
	}
	c->pending_writes++;
	return 0;
}

static const transport plain_transport = { conn_feed, plain_write };

/* TLS: ciphertext out through plain_write, plaintext in through conn_feed. */
static int tls_send_raw(void *owner, char *data, size_t len)
{
	return plain_write(owner, data, len);
}

static bool tls_deliver(void *owner, const char *data, size_t len)
{
	conn *c = owner;
	conn_feed(c, data, len);
	return c->state == CONN_OPEN && HTTP_PARSER_ERRNO(&c->parser) != HPE_PAUSED;
}

static void tls_on_read(conn *c, const char *data, size_t len)
{
	int rc = k8s__tls_conn_input(c->tls, data, len);
	if (rc < 0) {
		conn_close(c);
	} else if (rc > 0 && c->state == CONN_OPEN) {
		/* close_notify from the client: as a TCP EOF */
		if (c->pending_writes > 0) {
			c->close_after = true;
			conn_finish(c);
		} else {
			conn_close(c);
		}
	}
}

static int tls_write(conn *c, char *data, size_t len)
{
	return k8s__tls_conn_write(c->tls, data, len);
}

static const transport tls_transport = { tls_on_read, tls_write };

static void on_conn_handle_closed(uv_handle_t *h)
{
	conn *c = h->data;
	if (--c->open_handles > 0)
		return;
	k8s_http_server *s = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	k8s__http_request_reset(&c->req);
	k8s__tls_conn_free(c->tls);
	free(c);
	maybe_accept_or_finish(s);
}

/* Closes at once: no more reads or writes; pending writes are cancelled. */
static void conn_close(conn *c)
{
	if (c->state == CONN_CLOSING)
		return;
	c->state = CONN_CLOSING;
	uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

static void on_timer(uv_timer_t *t)
{
	conn *c = t->data;
	if (c->state == CONN_OPEN)
		k8s_log(c->srv->log, K8S_LOG_DEBUG,
		        c->in_request ? "http request not received in time; closing"
		                      : "http connection idle; closing",
		        "server", c->srv->name, NULL);
	conn_close(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	conn *c = req->data;
	if (c->state != CONN_LINGER)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	/* the answer is out: drop what the client still sends, briefly */
	uv_timer_start(&c->timer, on_timer, LINGER_MS, 0);
}

/* After the last queued answer: shut the write side down, then linger. */
static void conn_finish(conn *c)
{
	if (c->state != CONN_OPEN)
		return;
	c->state = CONN_LINGER;
	uv_timer_stop(&c->timer);
	if (c->tls)
		k8s__tls_conn_close_notify(c->tls);
	c->shutdown_req.data = c;
	if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
		conn_close(c);
}

/* Serialises and queues a response. */
static void send_response(conn *c, k8s_http_response *res, bool head_only, bool keep_alive_10)
{
	k8s_strbuf out = K8S_STRBUF_INIT;
	char date[64];
	k8s__http_date(date, sizeof(date));
	k8s_strbuf_addf(&out, "HTTP/1.1 %d %s\r\n", res->status, k8s__http_reason_phrase(res->status));
	k8s_strbuf_add(&out, res->headers.data ? res->headers.data : "", res->headers.len);
	if (!res->has_content_type)
		k8s_strbuf_adds(&out, "Content-Type: text/plain; charset=utf-8\r\n");
	bool no_body = res->status == 204 || res->status == 304 || res->status < 200;
	if (!no_body)
		k8s_strbuf_addf(&out, "Content-Length: %zu\r\n", res->body.len);
	k8s_strbuf_addf(&out, "Date: %s\r\n", date);
	if (c->close_after)
		k8s_strbuf_adds(&out, "Connection: close\r\n");
	else if (keep_alive_10)
		k8s_strbuf_adds(&out, "Connection: keep-alive\r\n");
	k8s_strbuf_add(&out, "\r\n", 2);
	if (!head_only && !no_body && res->body.len)
		k8s_strbuf_add(&out, res->body.data, res->body.len);
	if (out.failed) {
		k8s_strbuf_free(&out);
		conn_close(c);
		return;
	}
	size_t len;
	char *data = k8s_strbuf_detach(&out, &len);
	if (c->tp->write(c, data, len) < 0)
		conn_close(c);
}

/* An error answer (400, 413, 431, ...) that closes the connection. */
static void send_error(conn *c, int status)
{
	if (c->state != CONN_OPEN)
		return;
	k8s_http_response res = { .status = status };
	char body[96];
	snprintf(body, sizeof(body), "%d %s\n", status, k8s__http_reason_phrase(status));
	k8s_strbuf_adds(&res.body, body);
	c->close_after = true;
	send_response(c, &res, false, false);
	k8s__http_response_free(&res);
	c->in_request = false;
	conn_finish(c);
}

/* --- routing -------------------------------------------------------------------- */

/* Which routes match `path`: the exact ones, else those of the longest prefix. */
static size_t route_specificity(const route *r, const char *path)
{
	if (!r->prefix)
		return strcmp(r->path, path) == 0 ? (size_t)-1 : 0;
	return strncmp(r->path, path, r->path_len) == 0 ? r->path_len + 1 : 0;
}

static void dispatch(conn *c, const k8s_http_request *req, k8s_http_response *res, bool *head_only)
{
	k8s_http_server *s = c->srv;
	size_t best = 0;
	for (size_t i = 0; i < s->nroutes; i++) {
		size_t sp = route_specificity(&s->routes[i], req->path);
		if (sp > best)
			best = sp;
	}
	*head_only = strcmp(req->method, "HEAD") == 0;
	if (best == 0) {
		res->status = 404;
		k8s_strbuf_adds(&res->body, "404 page not found\n");
		return;
	}
	const route *match = NULL, *get = NULL;
	k8s_strbuf allow = K8S_STRBUF_INIT;
	for (size_t i = 0; i < s->nroutes; i++) {
		const route *r = &s->routes[i];
		if (route_specificity(r, req->path) != best)
			continue;
		if (!r->method || strcmp(r->method, req->method) == 0) {
			match = r;
			break;
		}
		if (strcmp(r->method, "GET") == 0)
			get = r;
		if (allow.len)
			k8s_strbuf_add(&allow, ", ", 2);
		k8s_strbuf_adds(&allow, r->method);
		if (strcmp(r->method, "GET") == 0)
			k8s_strbuf_adds(&allow, ", HEAD");
	}
	if (!match && *head_only && get)
		match = get;
	if (match) {
		match->fn(req, res, match->userdata);
	} else {
		res->status = 405;
		if (allow.data && !allow.failed)
			k8s_http_response_add_header(res, "Allow", allow.data);
		k8s_strbuf_adds(&res->body, "Method Not Allowed\n");
	}
	k8s_strbuf_free(&allow);
}

/* --- parser callbacks --------------------------------------------------------------- */

static int count_header_bytes(conn *c, size_t n)
{
	c->header_bytes += n;
	if (c->header_bytes > c->srv->max_header_bytes) {
		c->reject_status = 431;
		return -1;
	}
	return 0;
}

static int on_message_begin(http_parser *p)
{
	conn *c = p->data;
	k8s__http_request_reset(&c->req);
	c->in_request = true;
	c->header_bytes = 0;
	c->reject_status = 0;
	uv_timer_start(&c->timer, on_timer, (uint64_t)c->srv->read_timeout_ms, 0);
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	conn *c = p->data;
	if (count_header_bytes(c, len) < 0)
		return -1;
	return k8s_strbuf_add(&c->req.url, at, len);
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	conn *c = p->data;
	/* 4 bytes of ": " and CRLF per field, as a server counting raw bytes would */
	if (count_header_bytes(c, len + (c->req.in_value || !c->req.field.data ? 4 : 0)) < 0)
		return -1;
	if (c->req.in_value && k8s__http_request_end_header(&c->req) < 0)
		return -1;
	return k8s_strbuf_add(&c->req.field, at, len);
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	conn *c = p->data;
	if (count_header_bytes(c, len) < 0)
		return -1;
	c->req.in_value = true;
	return k8s_strbuf_add(&c->req.value, at, len);
}

static int on_headers_complete(http_parser *p)
{
	conn *c = p->data;
	k8s_http_request *r = &c->req;
	if (k8s__http_request_end_header(r) < 0 || k8s_strbuf_add(&r->url, "", 0) < 0)
		return -1;
	r->method = http_method_str((enum http_method)p->method);
	struct http_parser_url u;
	http_parser_url_init(&u);
	if (http_parser_parse_url(r->url.data, r->url.len, p->method == HTTP_CONNECT, &u) != 0) {
		c->reject_status = 400;
		return -1;
	}
	if (u.field_set & (1 << UF_PATH))
		r->path = strndup(r->url.data + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
	else
		r->path = strdup("/");
	if (u.field_set & (1 << UF_QUERY))
		r->query = strndup(r->url.data + u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len);
	else
		r->query = strdup("");
	if (!r->path || !r->query)
		return -1;
	/* A declared body over the limit is refused before it is read. */
	bool has_length = (p->flags & F_CONTENTLENGTH) != 0;
	if (has_length && p->content_length > c->srv->max_body_bytes) {
		c->reject_status = 413;
		return -1;
	}
	const char *expect = k8s_http_request_header(r, "Expect");
	if (expect && strcasecmp(expect, "100-continue") == 0 && p->http_minor >= 1 &&
	    (p->flags & F_CHUNKED || (has_length && p->content_length > 0))) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		char *data = malloc(sizeof(cont) - 1);
		if (!data)
			return -1;
		memcpy(data, cont, sizeof(cont) - 1);
		if (c->tp->write(c, data, sizeof(cont) - 1) < 0)
			return -1;
	}
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	conn *c = p->data;
	if (c->req.body.len + len > c->srv->max_body_bytes) {
		c->reject_status = 413;
		return -1;
	}
	return k8s_strbuf_add(&c->req.body, at, len);
}

static int on_message_complete(http_parser *p)
{
	conn *c = p->data;
	k8s_http_server *s = c->srv;
	if (k8s_strbuf_add(&c->req.body, "", 0) < 0)
		return -1;
	bool keep_alive = http_should_keep_alive(p) && !p->upgrade;
	c->close_after = !keep_alive || s->draining;

	k8s_http_response res = { .status = 200 };
	bool head_only = false;
	dispatch(c, &c->req, &res, &head_only);
	send_response(c, &res, head_only, keep_alive && p->http_minor == 0);
	k8s__http_response_free(&res);
	k8s__http_request_reset(&c->req);
	c->in_request = false;
	if (c->state != CONN_OPEN)
		return -1;  /* the answer could not be queued: stop parsing */
	if (c->close_after) {
		conn_finish(c);
		/* nothing pipelined after this one is served */
		http_parser_pause(p, 1);
		return 0;
	}
	uv_timer_start(&c->timer, on_timer, (uint64_t)s->idle_timeout_ms, 0);
	return 0;
}

/* Feeds received bytes to the parser (the plain transport's on_read). */
static void conn_feed(conn *c, const char *data, size_t len)
{
	size_t off = 0;
	while (off < len && c->state == CONN_OPEN) {
		size_t n = http_parser_execute(&c->parser, &c->srv->settings, data + off, len - off);
		off += n;
		enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
		if (e == HPE_PAUSED)
			return;
		if (e != HPE_OK) {
			int status = c->reject_status ? c->reject_status
				: e == HPE_HEADER_OVERFLOW ? 431 : 400;
			k8s_log(c->srv->log, K8S_LOG_DEBUG, "http request rejected",
			        "server", c->srv->name, "error", http_errno_name(e), NULL);
			send_error(c, status);
			return;
		}
		if (c->parser.upgrade || n == 0)
			return;  /* upgraded connections are answered and closed */
	}
}

/* --- sockets ---------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	conn *c = h->data;
	/* reads are consumed before the next one: one buffer per server */
	*buf = uv_buf_init(c->srv->read_buffer, READ_BUFFER_BYTES);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	conn *c = stream->data;
	if (nread < 0) {
		if (c->state == CONN_OPEN && c->pending_writes > 0 && nread == UV_EOF) {
			/* half-closed client still gets the answers queued for it */
			c->close_after = true;
			conn_finish(c);
			return;
		}
		conn_close(c);
		return;
	}
	if (nread == 0 || c->state != CONN_OPEN)
		return;  /* lingering: drop */
	c->tp->on_read(c, buf->base, (size_t)nread);
}

static void accept_one(k8s_http_server *s)
{
	conn *c = calloc(1, sizeof(*c));
	if (!c) {
		k8s_log(s->log, K8S_LOG_ERROR, "http: out of memory accepting a connection",
		        "server", s->name, NULL);
		s->accept_pending = true;  /* retried when a connection closes */
		return;
	}
	c->srv = s;
	c->tp = &plain_transport;
	uv_tcp_init(&s->loop, &c->tcp);
	uv_timer_init(&s->loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->open_handles = 2;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->tcp) < 0) {
		conn_close(c);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	if (s->tls) {
		c->tp = &tls_transport;
		if (k8s__tls_conn_new(&c->tls, s->tls, uv_now(&s->loop), c, tls_send_raw, tls_deliver) < 0) {
			conn_close(c);
			return;
		}
	}
	/* the handshake must also finish within the idle time */
	uv_timer_start(&c->timer, on_timer, (uint64_t)s->idle_timeout_ms, 0);
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		conn_close(c);
}

static void on_connection(uv_stream_t *listener, int status)
{
	k8s_http_server *s = listener->data;
	if (status < 0) {
		k8s_log(s->log, K8S_LOG_WARN, "http accept failed", "server", s->name,
		        "error", uv_strerror(status), NULL);
		return;
	}
	if (s->nconns >= s->max_connections) {
		/* Not accepting leaves the connection with libuv, which stops
		 * watching the listener until we take it: the rest queue in the
		 * kernel's backlog. */
		s->accept_pending = true;
		return;
	}
	accept_one(s);
}

static void on_server_handle_closed(uv_handle_t *h)
{
	(void)h;
}

/* Called whenever a connection goes away. */
static void maybe_accept_or_finish(k8s_http_server *s)
{
	if (s->draining) {
		if (s->nconns == 0 && !s->finished) {
			s->finished = true;
			uv_close((uv_handle_t *)&s->deadline, on_server_handle_closed);
			uv_close((uv_handle_t *)&s->wake, on_server_handle_closed);
		}
		return;
	}
	if (s->accept_pending && s->nconns < s->max_connections) {
		s->accept_pending = false;
		accept_one(s);
	}
}

static void on_deadline(uv_timer_t *t)
{
	k8s_http_server *s = t->data;
	if (s->nconns > 0) {
		atomic_store(&s->shutdown_rc, K8S_ETIMEOUT);
		k8s_log(s->log, K8S_LOG_WARN, "http shutdown deadline passed; closing connections",
		        "server", s->name, NULL);
	}
	for (conn *c = s->conns; c; c = c->next)
		conn_close(c);
}

/* The shutdown request, on the loop thread. */
static void on_wake(uv_async_t *a)
{
	k8s_http_server *s = a->data;
	if (s->draining)
		return;
	s->draining = true;
	uv_close((uv_handle_t *)&s->listener, on_server_handle_closed);
	for (conn *c = s->conns; c; c = c->next) {
		if (c->state != CONN_OPEN)
			continue;          /* already on its way out */
		if (!c->in_request && c->pending_writes == 0)
			conn_close(c);     /* idle */
		else
			c->close_after = true;
	}
	/* answers already queued on a keep-alive connection: close after them */
	for (conn *c = s->conns; c; c = c->next)
		if (c->state == CONN_OPEN && !c->in_request)
			conn_finish(c);
	long timeout = atomic_load(&s->shutdown_timeout_ms);
	uv_timer_start(&s->deadline, on_deadline, (uint64_t)(timeout > 0 ? timeout : 0), 0);
	if (s->nconns == 0)
		maybe_accept_or_finish(s);
}

static void *loop_thread(void *arg)
{
	k8s_http_server *s = arg;
	/* A client that hangs up while we write must cost an EPIPE, not the
	 * process: SIGPIPE from a write is sent to the writing thread, and
	 * blocking it here leaves the process's signal dispositions alone. */
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	return NULL;
}

/* --- lifecycle ---------------------------------------------------------------------- */

int k8s_http_server_new(k8s_http_server **out, const k8s_http_server_options *o)
{
	if (!out || !o)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http server: out and options are required");
	*out = NULL;
	if (o->version < 1 || o->version > K8S_HTTP_SERVER_OPTIONS_VERSION)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http server: unknown options version %u", o->version);
	/* version 1 callers have no TLS fields */
	const char *cert = o->version >= 2 ? o->tls_cert_file : NULL;
	const char *key = o->version >= 2 ? o->tls_key_file : NULL;
	if ((cert && *cert) != (key && *key))
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http server %s: TLS needs both a certificate and a key file",
		                     o->name ? o->name : "http");
	if (!o->address || !*o->address)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http server: an address is required (\"0\" disables)");
	k8s_http_server *s = calloc(1, sizeof(*s));
	if (!s)
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http server: out of memory");
	s->name = strdup(o->name ? o->name : "http");
	if (!s->name) {
		free(s);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http server: out of memory");
	}
	s->disabled = k8s_http_address_disabled(o->address);
	if (!s->disabled) {
		int rc = split_host_port(o->address, &s->host, &s->port);
		if (rc < 0) {
			k8s_http_server_free(s);
			return rc == -2 ? k8s_error_set(K8S_ENOMEM, 0, NULL, "http server: out of memory")
				: k8s_error_set(K8S_EINVAL, 0, NULL,
				                "http server %s: invalid address \"%s\": want host:port, :port or 0",
				                o->name ? o->name : "http", o->address);
		}
	}
	s->max_header_bytes = o->max_header_bytes ? o->max_header_bytes : 64 * 1024;
	s->max_body_bytes = o->max_body_bytes ? o->max_body_bytes : 1024 * 1024;
	s->max_connections = o->max_connections ? o->max_connections : 1024;
	s->idle_timeout_ms = o->idle_timeout_ms > 0 ? o->idle_timeout_ms : 60000;
	s->read_timeout_ms = o->read_timeout_ms > 0 ? o->read_timeout_ms : 30000;
	s->log = o->logger;
	if (cert && *cert && !s->disabled) {
		int rc = k8s__tls_server_new(&s->tls, s->name, cert, key, o->logger);
		if (rc < 0) {
			k8s_http_server_free(s);
			return rc;
		}
	}
	http_parser_settings_init(&s->settings);
	s->settings.on_message_begin = on_message_begin;
	s->settings.on_url = on_url;
	s->settings.on_header_field = on_header_field;
	s->settings.on_header_value = on_header_value;
	s->settings.on_headers_complete = on_headers_complete;
	s->settings.on_body = on_body;
	s->settings.on_message_complete = on_message_complete;
	*out = s;
	return 0;
}

int k8s__http_server_route_owned(k8s_http_server *s, const char *method, const char *path,
                                 k8s_http_handler_fn fn, void *userdata,
                                 void (*free_userdata)(void *))
{
	if (!s || !path || path[0] != '/' || !fn || s->started) {
		if (free_userdata)
			free_userdata(userdata);
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "http route %s: needs a path starting with '/', a handler, and a server not started",
		                     path ? path : "(null)");
	}
	route *r = realloc(s->routes, (s->nroutes + 1) * sizeof(*r));
	if (!r) {
		if (free_userdata)
			free_userdata(userdata);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http route: out of memory");
	}
	s->routes = r;
	r = &s->routes[s->nroutes];
	memset(r, 0, sizeof(*r));
	size_t len = strlen(path);
	r->prefix = path[len - 1] == '*';
	r->path_len = r->prefix ? len - 1 : len;
	r->path = strndup(path, r->path_len);
	r->method = method ? strdup(method) : NULL;
	r->fn = fn;
	r->userdata = userdata;
	r->free_userdata = free_userdata;
	if (!r->path || (method && !r->method)) {
		free(r->path);
		free(r->method);
		if (free_userdata)
			free_userdata(userdata);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http route: out of memory");
	}
	s->nroutes++;
	return 0;
}

int k8s_http_server_route(k8s_http_server *s, const char *method, const char *path,
                          k8s_http_handler_fn fn, void *userdata)
{
	return k8s__http_server_route_owned(s, method, path, fn, userdata, NULL);
}

/* Resolves host into `ss`: "" is every interface (IPv6 any, dual-stack). */
static int resolve(const k8s_http_server *s, const char *host, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (!*host) {
		uv_ip6_addr("::", s->port, (struct sockaddr_in6 *)ss);
		return 0;
	}
	if (uv_ip4_addr(host, s->port, (struct sockaddr_in *)ss) == 0 ||
	    uv_ip6_addr(host, s->port, (struct sockaddr_in6 *)ss) == 0)
		return 0;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0)
		return k8s_error_set(K8S_ETRANSPORT, 0, NULL, "http server %s: cannot resolve \"%s\": %s",
		                     s->name, host, gai_strerror(rc));
	const struct addrinfo *pick = res;
	for (const struct addrinfo *a = res; a; a = a->ai_next)
		if (a->ai_family == AF_INET) {
			pick = a;
			break;
		}
	memcpy(ss, pick->ai_addr, pick->ai_addrlen);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)s->port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)s->port);
	freeaddrinfo(res);
	return 0;
}

static int bind_and_listen(k8s_http_server *s)
{
	struct sockaddr_storage ss;
	int rc = resolve(s, s->host, &ss);
	if (rc < 0)
		return rc;
	uv_tcp_init(&s->loop, &s->listener);
	s->listener.data = s;
	int err = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
	if (err == UV_EAFNOSUPPORT && !*s->host) {
		/* no IPv6 on this host: every IPv4 interface then */
		uv_ip4_addr("0.0.0.0", s->port, (struct sockaddr_in *)&ss);
		err = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
	}
	if (err == 0)
		err = uv_listen((uv_stream_t *)&s->listener, 511, on_connection);
	if (err < 0)
		return k8s_error_set(K8S_ETRANSPORT, 0, NULL, "http server %s: cannot listen on %s:%d: %s",
		                     s->name, *s->host ? s->host : "*", s->port, uv_strerror(err));
	struct sockaddr_storage bound;
	int len = sizeof(bound);
	if (uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &len) == 0)
		s->bound_port = ntohs(bound.ss_family == AF_INET
		                      ? ((struct sockaddr_in *)&bound)->sin_port
		                      : ((struct sockaddr_in6 *)&bound)->sin6_port);
	return 0;
}

/* Closes every handle of a loop that will not run (a failed start). */
static void close_all_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int k8s_http_server_start(k8s_http_server *s)
{
	if (!s || s->started)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http server: already started");
	if (s->disabled)
		return 0;
	int err = uv_loop_init(&s->loop);
	if (err < 0)
		return k8s_error_set(K8S_ERROR, 0, NULL, "http server %s: %s", s->name, uv_strerror(err));
	/* The loop is set up here, on the caller's thread, before the loop
	 * thread exists: bind errors come back to the caller. */
	uv_async_init(&s->loop, &s->wake, on_wake);
	s->wake.data = s;
	uv_timer_init(&s->loop, &s->deadline);
	s->deadline.data = s;
	int rc = bind_and_listen(s);
	if (rc == 0 && pthread_create(&s->thread, NULL, loop_thread, s) != 0)
		rc = k8s_error_set(K8S_ERROR, 0, NULL, "http server %s: cannot start its thread", s->name);
	if (rc < 0) {
		uv_walk(&s->loop, close_all_walk, NULL);
		uv_run(&s->loop, UV_RUN_DEFAULT);
		uv_loop_close(&s->loop);
		return rc;
	}
	s->started = true;
	char port[16];
	snprintf(port, sizeof(port), "%d", s->bound_port);
	k8s_log(s->log, K8S_LOG_INFO, s->tls ? "serving HTTPS" : "serving HTTP", "server", s->name,
	        "host", *s->host ? s->host : "*", "port", port, NULL);
	return 0;
}

int k8s_http_server_port(const k8s_http_server *s)
{
	return s && s->started ? s->bound_port : 0;
}

int k8s_http_server_shutdown(k8s_http_server *s, long timeout_ms)
{
	if (!s || !s->started || s->joined)
		return 0;
	atomic_store(&s->shutdown_timeout_ms, timeout_ms > 0 ? timeout_ms : 0);
	uv_async_send(&s->wake);
	pthread_join(s->thread, NULL);
	s->joined = true;
	uv_loop_close(&s->loop);
	int rc = atomic_load(&s->shutdown_rc);
	if (rc < 0)
		return k8s_error_set(rc, 0, NULL, "http server %s: connections cut at the shutdown deadline",
		                     s->name);
	return 0;
}

void k8s_http_server_free(k8s_http_server *s)
{
	if (!s)
		return;
	k8s_http_server_shutdown(s, 0);
	for (size_t i = 0; i < s->nroutes; i++) {
		free(s->routes[i].method);
		free(s->routes[i].path);
		if (s->routes[i].free_userdata)
			s->routes[i].free_userdata(s->routes[i].userdata);
	}
	free(s->routes);
	k8s__tls_server_free(s->tls);
	free(s->host);
	free(s->name);
	free(s);
}
