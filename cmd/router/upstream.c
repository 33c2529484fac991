/*
 * upstream.c - HTTP/1.1 client connections to sandboxes and their
 * keep-alive pool (upstream.h). Responses are parsed through httpd/parser.h.
 */
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "httpd/parser.h"
#include "asb/map.h"
#include "asb/strbuf.h"
#include "headers.h"
#include "upstream.h"

#define READ_BUF (64 * 1024)
#define MAX_RESPONSE_HEAD (64 * 1024)
#define MAX_RESPONSE_FIELDS 256

typedef enum { C_CONNECTING, C_ACTIVE, C_IDLE, C_CLOSING } conn_state;

typedef struct host {
	rt_upconn *idle;           /* most recent first */
	int nidle;
} host;

struct rt_pool {
	uv_loop_t *loop;
	int max_idle;
	long idle_timeout_ms;
	rt_metrics *metrics;
	asb_map hosts;             /* key -> host *, only hosts with idle connections */
	size_t nconns;             /* connections not yet freed */
	bool closed;
	char readbuf[READ_BUF];
	bool readbuf_busy;
};

struct rt_upconn {
	rt_pool *pool;
	char *key;
	conn_state state;
	const char *metric_state;  /* "active", "idle" or NULL */
	uv_tcp_t tcp;
	uv_timer_t timer;          /* connect timeout, then idle timeout */
	uv_connect_t connect;
	int open_handles;          /* tcp + timer until both closed */
	void (*connect_cb)(rt_upconn *c, int status, void *ud);
	void *connect_ud;
	bool timed_out, cancelled;
	/* the exchange */
	const rt_up_callbacks *cb;
	void *ud;
	httpd_parser parser;
	bool head_request, interim, complete, extra, tunnel, got_bytes, was_idle, paused;
	asb_strbuf fields;             /* name\0value\0 pairs of the response head */
	size_t nfields;
	bool in_value;
	int in_execute;
	bool release_pending, release_reuse;
	size_t queued;
	bool above_low;
	/* idle list */
	rt_upconn *idle_prev, *idle_next;
	host *host;
};

typedef struct {
	uv_write_t req;
	rt_upconn *c;
	size_t len;
	char data[];
} write_req;

static void set_metric(rt_upconn *c, const char *state)
{
	if (!c->pool->metrics || c->metric_state == state)
		return;
	if (c->metric_state)
		rt_metrics_upstream_conn(c->pool->metrics, c->metric_state, -1);
	if (state)
		rt_metrics_upstream_conn(c->pool->metrics, state, 1);
	c->metric_state = state;
}

rt_pool *rt_pool_new(uv_loop_t *loop, int max_idle_per_host, long idle_timeout_ms,
                     rt_metrics *m)
{
	rt_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->loop = loop;
	p->max_idle = max_idle_per_host;
	p->idle_timeout_ms = idle_timeout_ms > 0 ? idle_timeout_ms : 90000;
	p->metrics = m;
	asb_map_init(&p->hosts);
	return p;
}

void rt_pool_free(rt_pool *p)
{
	if (!p)
		return;
	asb_map_clear(&p->hosts, free);
	free(p);
}

/* ---- idle list ---- */

static host *host_get(rt_pool *p, const char *key, bool create)
{
	host *h = asb_map_get(&p->hosts, key);
	if (h || !create)
		return h;
	h = calloc(1, sizeof(*h));
	if (!h || asb_map_set(&p->hosts, key, h, NULL) < 0) {
		free(h);
		return NULL;
	}
	return h;
}

static void host_drop_if_empty(rt_pool *p, host *h, const char *key)
{
	if (h->nidle)
		return;
	asb_map_remove(&p->hosts, key, NULL);
	free(h);
}

static void idle_remove(rt_upconn *c)
{
	host *h = c->host;
	if (!h)
		return;
	if (c->idle_prev)
		c->idle_prev->idle_next = c->idle_next;
	else
		h->idle = c->idle_next;
	if (c->idle_next)
		c->idle_next->idle_prev = c->idle_prev;
	c->idle_prev = c->idle_next = NULL;
	c->host = NULL;
	h->nidle--;
	host_drop_if_empty(c->pool, h, c->key);
}

/* ---- closing ---- */

static void on_handle_closed(uv_handle_t *h)
{
	rt_upconn *c = h->data;
	if (--c->open_handles > 0)
		return;
	rt_pool *p = c->pool;
	asb_strbuf_free(&c->fields);
	free(c->key);
	free(c);
	p->nconns--;
}

static void conn_close(rt_upconn *c)
{
	if (c->state == C_CLOSING)
		return;
	if (c->state == C_IDLE)
		idle_remove(c);
	c->state = C_CLOSING;
	c->cb = NULL;
	set_metric(c, NULL);
	uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
	uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

void rt_pool_close(rt_pool *p)
{
	p->closed = true;
	/* Closing a host's last idle connection removes it from the map, so
	 * the walk starts again after each host (this runs once, at shutdown). */
	for (;;) {
		size_t b = 0;
		asb_map_entry *it = NULL;
		host *h = NULL;
		while (!h && asb_map_next(&p->hosts, &b, &it))
			if (((host *)it->value)->idle)
				h = it->value;
		if (!h)
			break;
		for (int n = h->nidle; n > 0; n--)
			conn_close(h->idle);  /* the last one drops the host */
	}
}

size_t rt_pool_connections(const rt_pool *p)
{
	return p->nconns;
}

/* ---- reading ---- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	rt_upconn *c = h->data;
	rt_pool *p = c->pool;
	/* one read at a time per loop: the bytes are consumed (copied) in the
	 * read callback, so one buffer per pool is enough */
	if (!p->readbuf_busy) {
		p->readbuf_busy = true;
		*buf = uv_buf_init(p->readbuf, READ_BUF);
	} else {
		char *b = malloc(READ_BUF);
		*buf = uv_buf_init(b, b ? READ_BUF : 0);
	}
}

static void free_readbuf(rt_pool *p, const uv_buf_t *buf)
{
	if (buf->base == p->readbuf)
		p->readbuf_busy = false;
	else
		free(buf->base);
}

static void idle_timeout(uv_timer_t *t)
{
	conn_close(t->data);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* Ends the exchange now (after a callback asked while the parser ran). */
static void do_release(rt_upconn *c, bool reuse)
{
	rt_pool *p = c->pool;
	c->cb = NULL;
	c->ud = NULL;
	c->release_pending = false;
	if (!reuse || !c->complete || c->extra || p->closed || p->max_idle <= 0 || c->tunnel ||
	    c->state != C_ACTIVE) {
		conn_close(c);
		return;
	}
	host *h = host_get(p, c->key, true);
	if (!h || h->nidle >= p->max_idle) {
		conn_close(c);
		return;
	}
	c->state = C_IDLE;
	c->host = h;
	c->idle_next = h->idle;
	if (h->idle)
		h->idle->idle_prev = c;
	h->idle = c;
	h->nidle++;
	set_metric(c, "idle");
	uv_timer_start(&c->timer, idle_timeout, (uint64_t)p->idle_timeout_ms, 0);
	/* read on while idle: a close by the sandbox is seen at once. Reading
	 * may have been paused by the last exchange (back-pressure at its last
	 * bytes): restarted here, or a dead connection would stay pooled. */
	c->paused = false;
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, on_read);
}

void rt_upconn_release(rt_upconn *c, bool reuse)
{
	if (!c || c->state == C_CLOSING)
		return;
	if (c->state == C_CONNECTING) {
		rt_upconn_cancel(c);
		return;
	}
	c->cb = NULL;
	if (c->in_execute) {
		c->release_pending = true;
		c->release_reuse = reuse;
		return;
	}
	do_release(c, reuse);
}

static void fail(rt_upconn *c, int err, const char *reason)
{
	const rt_up_callbacks *cb = c->cb;
	void *ud = c->ud;
	c->cb = NULL;
	if (cb && cb->on_error)
		cb->on_error(c, err, reason, ud);
	if (c->state != C_CLOSING)
		conn_close(c);
}

static int p_begin(httpd_parser *hp)
{
	rt_upconn *c = httpd_parser_data(hp);
	if (c->complete) {
		c->extra = true;  /* bytes after the response: never reused */
		return -1;
	}
	c->fields.len = 0;
	c->nfields = 0;
	c->in_value = false;
	c->interim = false;
	return 0;
}

static int p_field(httpd_parser *hp, const char *at, size_t len)
{
	rt_upconn *c = httpd_parser_data(hp);
	if (c->in_value || !c->nfields) {
		if (!c->nfields && asb_strbuf_reserve(&c->fields, RT_HEAD_ROOM) < 0)
			return -1;
		if (c->nfields && asb_strbuf_add(&c->fields, "", 1) < 0)  /* ends the value */
			return -1;
		if (++c->nfields > MAX_RESPONSE_FIELDS)
			return -1;
		c->in_value = false;
	}
	if (c->fields.len + len > MAX_RESPONSE_HEAD)
		return -1;
	return asb_strbuf_add(&c->fields, at, len);
}

static int p_value(httpd_parser *hp, const char *at, size_t len)
{
	rt_upconn *c = httpd_parser_data(hp);
	if (!c->in_value) {
		if (asb_strbuf_add(&c->fields, "", 1) < 0)  /* ends the name */
			return -1;
		c->in_value = true;
	}
	if (c->fields.len + len > MAX_RESPONSE_HEAD)
		return -1;
	return asb_strbuf_add(&c->fields, at, len);
}

/* Trims the blanks http-parser leaves at the end of a value. */
static char *trim(char *v)
{
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		v[--n] = '\0';
	return v;
}

static int p_headers_complete(httpd_parser *hp)
{
	rt_upconn *c = httpd_parser_data(hp);
	if (c->nfields) {
		if (!c->in_value && asb_strbuf_add(&c->fields, "", 1) < 0)  /* name without value */
			return -1;
		if (asb_strbuf_add(&c->fields, "", 1) < 0)
			return -1;
	}
	int status = httpd_parser_status_code(hp);
	if (status / 100 == 1 && status != 101) {
		c->interim = true;  /* 100 Continue, 103 Early Hints: not relayed */
		return 0;
	}
	rt_header hs[MAX_RESPONSE_FIELDS];
	char *p = c->fields.data;
	for (size_t i = 0; i < c->nfields; i++) {
		hs[i].name = p;
		p += strlen(p) + 1;
		hs[i].value = trim(p);
		p += strlen(p) + 1;
	}
	uint64_t length = 0;
	bool has_length = httpd_parser_content_length(hp, &length);
	rt_up_head h = {
		.status = httpd_parser_status_code(hp),
		.headers = hs,
		.nheaders = c->nfields,
		.content_length = has_length ? (int64_t)length : -1,
		.chunked = httpd_parser_chunked(hp),
		.keep_alive = httpd_parser_keep_alive(hp),
		.upgrade = httpd_parser_upgrade(hp),
	};
	if (!c->cb || c->cb->on_head(c, &h, c->ud) < 0 || !c->cb)
		return -1;
	/* a HEAD response has no body whatever its Content-Length says */
	return c->head_request ? 1 : 0;
}

static int p_body(httpd_parser *hp, const char *at, size_t len)
{
	rt_upconn *c = httpd_parser_data(hp);
	if (c->cb && c->cb->on_body)
		c->cb->on_body(c, at, len, c->ud);
	return c->cb ? 0 : -1;
}

static int p_complete(httpd_parser *hp)
{
	rt_upconn *c = httpd_parser_data(hp);
	if (c->interim) {
		c->interim = false;
		return 0;  /* the final response follows */
	}
	if (httpd_parser_status_code(hp) == 101)
		return 0;  /* the tunnel starts after this */
	c->complete = true;
	if (c->cb && c->cb->on_complete)
		c->cb->on_complete(c, c->ud);
	return 0;
}

static const httpd_parser_callbacks settings = {
	.on_message_begin = p_begin,
	.on_header_field = p_field,
	.on_header_value = p_value,
	.on_headers_complete = p_headers_complete,
	.on_body = p_body,
	.on_message_complete = p_complete,
};

/* Feeds response bytes to the parser; len 0 signals EOF. */
static void feed(rt_upconn *c, const char *data, size_t len)
{
	c->in_execute++;
	size_t n = 0;
	httpd_parser_error e = httpd_parser_execute(&c->parser, data, len, &n);
	c->in_execute--;
	if (c->release_pending) {
		do_release(c, c->release_reuse);
		return;
	}
	if (!c->cb || c->complete)
		return;  /* released, or done: the owner releases it */
	if (httpd_parser_upgrade(&c->parser) && httpd_parser_status_code(&c->parser) == 101) {
		c->tunnel = true;
		if (n < len && c->cb->on_tunnel)
			c->cb->on_tunnel(c, data + n, len - n, c->ud);
		return;
	}
	if (e != HTTPD_PARSER_OK)
		fail(c, 0, "other");
	else if (len == 0)
		fail(c, UV_EOF, "eof");
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	rt_upconn *c = s->data;
	rt_pool *p = c->pool;
	if (nread > 0)
		c->got_bytes = true;
	if (c->state == C_IDLE) {
		/* an idle connection must stay silent: data or EOF ends it */
		if (nread != 0)
			conn_close(c);
	} else if (c->state == C_ACTIVE && c->cb) {
		if (nread > 0) {
			if (c->tunnel) {
				if (c->cb->on_tunnel)
					c->cb->on_tunnel(c, buf->base, (size_t)nread, c->ud);
			} else {
				feed(c, buf->base, (size_t)nread);
			}
		} else if (nread < 0) {
			if (c->tunnel)
				fail(c, (int)nread, "eof");
			else if (nread == UV_EOF)
				feed(c, NULL, 0);  /* ends a body delimited by the close */
			else
				fail(c, (int)nread, uv_err_name((int)nread));
		}
	} else if (nread < 0 && c->state == C_ACTIVE) {
		uv_read_stop(s);
	}
	if (buf->base)
		free_readbuf(p, buf);
}

/* ---- connecting ---- */

/* Ends a connect in progress: closing the socket makes libuv call
 * on_connect with UV_ECANCELED, which closes the timer and reports. */
static void abort_connect(rt_upconn *c)
{
	c->state = C_CLOSING;
	set_metric(c, NULL);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

static void on_connect_timeout(uv_timer_t *t)
{
	rt_upconn *c = t->data;
	c->timed_out = true;
	abort_connect(c);
}

static void on_connect(uv_connect_t *req, int status)
{
	rt_upconn *c = req->data;
	void (*cb)(rt_upconn *, int, void *) = c->connect_cb;
	void *ud = c->connect_ud;
	if (c->timed_out || c->cancelled) {
		uv_close((uv_handle_t *)&c->timer, on_handle_closed);
		cb(NULL, c->cancelled ? UV_ECANCELED : UV_ETIMEDOUT, ud);
		return;
	}
	uv_timer_stop(&c->timer);
	if (status == 0) {
		c->state = C_ACTIVE;
		uv_tcp_nodelay(&c->tcp, 1);
		cb(c, 0, ud);
		return;
	}
	conn_close(c);
	cb(NULL, status, ud);
}

int rt_upconn_connect(rt_pool *p, const char *key, const struct sockaddr *addr, long timeout_ms,
                      void (*cb)(rt_upconn *c, int status, void *ud), void *ud,
                      rt_upconn **out)
{
	rt_upconn *c = calloc(1, sizeof(*c));
	if (!c || !(c->key = strdup(key))) {
		free(c);
		return UV_ENOMEM;
	}
	c->pool = p;
	c->state = C_CONNECTING;
	c->connect_cb = cb;
	c->connect_ud = ud;
	int rc = uv_tcp_init(p->loop, &c->tcp);
	if (rc < 0) {
		free(c->key);
		free(c);
		return rc;
	}
	uv_timer_init(p->loop, &c->timer);
	c->tcp.data = c->timer.data = c->connect.data = c;
	c->open_handles = 2;
	p->nconns++;
	set_metric(c, "active");
	if ((rc = uv_tcp_connect(&c->connect, &c->tcp, addr, on_connect)) < 0) {
		conn_close(c);
		return rc;
	}
	uv_timer_start(&c->timer, on_connect_timeout, (uint64_t)(timeout_ms > 0 ? timeout_ms : 30000), 0);
	*out = c;
	return 0;
}

void rt_upconn_cancel(rt_upconn *c)
{
	if (!c)
		return;
	bool connecting = c->state == C_CONNECTING;
	c->cancelled = true;
	if (connecting)
		abort_connect(c);
	else
		conn_close(c);
}

rt_upconn *rt_pool_take(rt_pool *p, const char *key)
{
	host *h = p->closed ? NULL : host_get(p, key, false);
	if (!h || !h->idle)
		return NULL;
	rt_upconn *c = h->idle;
	idle_remove(c);
	uv_timer_stop(&c->timer);
	c->state = C_ACTIVE;
	c->was_idle = true;
	set_metric(c, "active");
	return c;
}

void rt_upconn_begin(rt_upconn *c, const rt_up_callbacks *cb, void *ud, bool head_request)
{
	c->cb = cb;
	c->ud = ud;
	c->head_request = head_request;
	c->complete = c->extra = c->tunnel = c->got_bytes = false;
	c->release_pending = false;
	httpd_parser_init(&c->parser, HTTPD_PARSER_RESPONSE, &settings, c);
	c->paused = false;
	uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, on_read);
}

/* ---- writing ---- */

static void on_write(uv_write_t *w, int status)
{
	write_req *r = w->data;
	rt_upconn *c = r->c;
	c->queued -= r->len;
	free(r);
	if (c->state != C_ACTIVE || !c->cb)
		return;
	if (status < 0) {
		fail(c, status, uv_err_name(status));
		return;
	}
	if (c->above_low && c->queued < RT_UP_LOW_WATER) {
		c->above_low = false;
		if (c->cb->on_drain)
			c->cb->on_drain(c, c->ud);
	}
}

int rt_upconn_write(rt_upconn *c, const void *data, size_t len, bool chunk)
{
	if (c->state != C_ACTIVE)
		return UV_ENOTCONN;
	char frame[24];
	uv_buf_t bufs[3];
	unsigned n = 0;
	size_t total = len;
	if (chunk) {
		int fl = snprintf(frame, sizeof(frame), "%zx\r\n", len);
		bufs[n++] = uv_buf_init(frame, (unsigned)fl);
		total += (size_t)fl + 2;
	}
	bufs[n++] = uv_buf_init((char *)data, (unsigned)len);
	if (chunk)
		bufs[n++] = uv_buf_init((char *)"\r\n", 2);
	/* What the socket takes now needs no copy and no write request (a
	 * uv_write also costs an epoll_ctl when it completes); nothing queued
	 * is passed, as uv_try_write refuses while libuv holds writes. */
	ssize_t w = total <= INT_MAX ? uv_try_write((uv_stream_t *)&c->tcp, bufs, n) : 0;
	if (w == (ssize_t)total)
		return 0;
	size_t skip = w > 0 ? (size_t)w : 0, rest = total - skip;
	write_req *r = malloc(sizeof(*r) + rest);
	if (!r)
		return UV_ENOMEM;
	r->c = c;
	r->req.data = r;
	size_t off = 0;
	for (unsigned i = 0; i < n; i++) {
		size_t from = skip < bufs[i].len ? skip : bufs[i].len;
		skip -= from;
		memcpy(r->data + off, bufs[i].base + from, bufs[i].len - from);
		off += bufs[i].len - from;
	}
	r->len = rest;
	uv_buf_t b = uv_buf_init(r->data, (unsigned)rest);
	int rc = uv_write(&r->req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
	if (rc < 0) {
		free(r);
		return rc;
	}
	c->queued += rest;
	if (c->queued >= RT_UP_LOW_WATER)
		c->above_low = true;
	return 0;
}

int rt_upconn_write_last_chunk(rt_upconn *c)
{
	static const char last[] = "0\r\n\r\n";
	return rt_upconn_write(c, last, sizeof(last) - 1, false);
}

size_t rt_upconn_queued(const rt_upconn *c)
{
	return c->queued;
}

void rt_upconn_read_pause(rt_upconn *c)
{
	if (c->state == C_ACTIVE && !c->paused) {
		c->paused = true;
		uv_read_stop((uv_stream_t *)&c->tcp);
	}
}

void rt_upconn_read_resume(rt_upconn *c)
{
	if (c->state == C_ACTIVE && c->paused) {
		c->paused = false;
		uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, on_read);
	}
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	free(req);
}

void rt_upconn_shutdown_write(rt_upconn *c)
{
	if (c->state != C_ACTIVE)
		return;
	uv_shutdown_t *req = malloc(sizeof(*req));
	if (req && uv_shutdown(req, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
		free(req);
}

bool rt_upconn_was_idle(const rt_upconn *c)
{
	return c->was_idle;
}

bool rt_upconn_got_bytes(const rt_upconn *c)
{
	return c->got_bytes;
}
