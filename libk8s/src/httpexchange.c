/*
 * httpexchange.c - streaming exchanges of the HTTP server (see
 * httpexchange.h): the handler's side of one request/response, driven by
 * the connection code of httpserver.c.
 *
 * Lifetime: an exchange is created when a stream route's request head is
 * parsed and holds one reference until its on_close has run; each queued
 * write holds one more (its done callback needs the exchange), and the
 * server holds one around every user callback, so that a handler may
 * finish or abort from inside any callback. Ending (k8s__http_exchange_end)
 * happens once: the exchange is detached from its connection at once and
 * on_error/on_close run from a call posted to the loop, never inside the
 * caller's stack.
 *
 * Everything here runs on the exchange's loop thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/httpexchange.h"
#include "httpserver_internal.h"
#include "strbuf.h"

/* --- lifetime (for httpserver.c) ----------------------------------------------- */

k8s_http_exchange *k8s__http_exchange_new(k8s__http_conn *c, k8s_http_stream_fn fn, void *ud)
{
	k8s_http_exchange *ex = calloc(1, sizeof(*ex));
	if (!ex)
		return NULL;
	ex->c = c;
	ex->lp = c->lp;
	ex->srv = c->srv;
	ex->refs = 1;
	ex->res.status = 200;
	ex->fn = fn;
	ex->fn_ud = ud;
	ex->remaining = -1;
	memcpy(ex->peer_ip, c->peer_ip, sizeof(ex->peer_ip));
	ex->peer_port = c->peer_port;
	ex->is_tls = c->tls != NULL;
	c->lp->nexchanges++;
	return ex;
}

void k8s__http_exchange_ref(k8s_http_exchange *ex)
{
	ex->refs++;
}

void k8s__http_exchange_unref(k8s_http_exchange *ex)
{
	if (--ex->refs > 0)
		return;
	k8s__http_request_reset(&ex->req);
	k8s__http_response_free(&ex->res);
	free(ex);
}

/* Posted by end: the reader's error, then on_close, then the last reference. */
static void run_close(void *ud)
{
	k8s_http_exchange *ex = ud;
	k8s__http_loop *lp = ex->lp;
	int reason = ex->end_reason;
	if (reason != 0 && reason != K8S_ECANCELED && ex->reading && !ex->end_delivered &&
	    ex->reader.on_error) {
		ex->end_delivered = true;
		ex->reader.on_error(ex, reason, ex->reader_ud);
	}
	if (ex->on_close)
		ex->on_close(ex, reason, ex->close_ud);
	k8s__http_exchange_unref(ex);
	k8s__http_loop_exchange_gone(lp);
}

void k8s__http_exchange_end(k8s_http_exchange *ex, int reason)
{
	if (ex->ended)
		return;
	ex->ended = true;
	ex->end_reason = reason;
	if (ex->c && ex->c->ex == ex)
		ex->c->ex = NULL;
	ex->c = NULL;
	/* The loop stays up while an exchange is left (nexchanges), so the
	 * post only fails without memory: then close here, as a last resort. */
	if (k8s__http_loop_post(ex->lp, run_close, ex) < 0)
		run_close(ex);
}

void k8s__http_exchange_start(k8s_http_exchange *ex)
{
	ex->started = true;
	k8s__http_exchange_ref(ex);
	ex->fn(ex, ex->fn_ud);
	k8s__http_exchange_unref(ex);
}

void k8s__http_exchange_deliver(k8s_http_exchange *ex, const char *data, size_t len)
{
	if (ex->ended || !ex->reading)
		return;
	if (ex->reader.on_data) {
		k8s__http_exchange_ref(ex);
		ex->reader.on_data(ex, data, len, ex->reader_ud);
		k8s__http_exchange_unref(ex);
	}
}

void k8s__http_exchange_deliver_end(k8s_http_exchange *ex)
{
	if (ex->ended || !ex->reading || ex->paused || ex->end_delivered)
		return;
	ex->end_delivered = true;
	if (ex->reader.on_end) {
		k8s__http_exchange_ref(ex);
		ex->reader.on_end(ex, ex->reader_ud);
		k8s__http_exchange_unref(ex);
	}
}

void k8s__http_exchange_write_done(k8s__http_write *wr, int status)
{
	k8s_http_exchange *ex = wr->ex;
	ex->writes_inflight--;
	ex->pending -= wr->plain_len;
	if (status < 0 && !ex->ended)
		k8s__http_exchange_end(ex, wr->c->close_reason ? wr->c->close_reason : K8S_ETRANSPORT);
	if (status == 0 && !ex->ended && wr->done)
		wr->done(ex, wr->done_ud);
	if (!ex->ended && ex->finished && ex->writes_inflight == 0)
		k8s__http_exchange_end(ex, 0);  /* the last byte of the answer is out */
	k8s__http_exchange_unref(ex);
}

/* --- helpers ---------------------------------------------------------------------- */

/* 0 while the exchange may be used; else the code it ended with, as the error. */
static int check_live(k8s_http_exchange *ex, const char *what)
{
	if (!ex)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http exchange %s: no exchange", what);
	if (ex->ended)
		return k8s_error_set(ex->end_reason ? ex->end_reason : K8S_EINVAL, 0, NULL,
		                     "http exchange %s: the exchange has ended (%s)", what,
		                     ex->end_reason ? k8s_strerror(ex->end_reason) : "finished");
	return 0;
}

/* The error a failed send leaves: the connection closed and ended the exchange. */
static int send_failed(k8s_http_exchange *ex, const char *what)
{
	k8s__http_exchange_end(ex, K8S_ETRANSPORT);
	return k8s_error_set(ex->end_reason, 0, NULL, "http exchange %s: the connection failed", what);
}

typedef struct {
	k8s_http_exchange *ex;
	void (*done)(k8s_http_exchange *, void *);
	void *ud;
} posted_done;

static void run_done(void *ud)
{
	posted_done *pd = ud;
	if (!pd->ex->ended)
		pd->done(pd->ex, pd->ud);
	k8s__http_exchange_unref(pd->ex);
	free(pd);
}

/* A write that sends nothing (HEAD) still reports done, later. */
static int post_done(k8s_http_exchange *ex, void (*done)(k8s_http_exchange *, void *), void *ud)
{
	if (!done)
		return 0;
	posted_done *pd = malloc(sizeof(*pd));
	if (!pd)
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http exchange write: out of memory");
	pd->ex = ex;
	pd->done = done;
	pd->ud = ud;
	k8s__http_exchange_ref(ex);
	int rc = k8s__http_loop_post(ex->lp, run_done, pd);
	if (rc < 0) {
		k8s__http_exchange_unref(ex);
		free(pd);
	}
	return rc;
}

/* --- the request ------------------------------------------------------------ */

const k8s_http_request *k8s_http_exchange_request(k8s_http_exchange *ex)
{
	return ex ? &ex->req : NULL;
}

k8s_http_server *k8s_http_exchange_server(k8s_http_exchange *ex)
{
	return ex ? ex->srv : NULL;
}

uv_loop_t *k8s_http_exchange_loop(k8s_http_exchange *ex)
{
	return ex ? &ex->lp->uv : NULL;
}

unsigned int k8s_http_exchange_loop_index(k8s_http_exchange *ex)
{
	return ex ? ex->lp->index : 0;
}

int k8s_http_exchange_peer(k8s_http_exchange *ex, char *ip, size_t cap, int *port)
{
	if (!ex || !ip || cap <= strlen(ex->peer_ip))
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http exchange peer: a buffer of 46 bytes is needed");
	memcpy(ip, ex->peer_ip, strlen(ex->peer_ip) + 1);
	if (port)
		*port = ex->peer_port;
	return 0;
}

bool k8s_http_exchange_is_tls(k8s_http_exchange *ex)
{
	return ex && ex->is_tls;
}

int64_t k8s_http_exchange_content_length(k8s_http_exchange *ex)
{
	return ex ? ex->content_length : 0;
}

bool k8s_http_exchange_wants_upgrade(k8s_http_exchange *ex)
{
	return ex && ex->wants_upgrade;
}

/* --- the request body --------------------------------------------------------- */

int k8s_http_exchange_read_start(k8s_http_exchange *ex, const k8s_http_body_reader *r, void *ud)
{
	int rc = check_live(ex, "read_start");
	if (rc < 0)
		return rc;
	if (!r || ex->reading || ex->finished)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "http exchange read_start: needs a reader, once, before finish");
	k8s__http_conn *c = ex->c;
	if (!ex->tunnel && ex->max_body && ex->content_length > 0 &&
	    (uint64_t)ex->content_length > ex->max_body) {
		/* refused before a byte is read, as the buffered routes do */
		uint64_t limit = ex->max_body;
		int64_t declared = ex->content_length;
		bool answer = !ex->head_sent && c->ex == ex;
		k8s__http_exchange_end(ex, K8S_ETOOLARGE);
		if (answer)
			k8s__http_conn_send_error(c, 413);
		else
			k8s__http_conn_close(c, K8S_ETOOLARGE);
		return k8s_error_set(K8S_ETOOLARGE, 0, NULL,
		                     "http exchange: a body of %" PRId64 " bytes is over the limit of %" PRIu64,
		                     declared, limit);
	}
	ex->reader = *r;
	ex->reader_ud = ud;
	ex->reading = true;
	if (ex->expect_continue && !ex->continue_sent && !ex->head_sent && !ex->body_done) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		char *data = malloc(sizeof(cont) - 1);
		if (!data)
			return k8s_error_set(K8S_ENOMEM, 0, NULL, "http exchange read_start: out of memory");
		memcpy(data, cont, sizeof(cont) - 1);
		ex->continue_sent = true;
		if (k8s__http_conn_send(c, NULL, data, sizeof(cont) - 1, NULL, NULL) < 0)
			return send_failed(ex, "read_start");
	}
	k8s__http_conn_kick(c);
	return 0;
}

void k8s_http_exchange_read_pause(k8s_http_exchange *ex)
{
	if (ex && !ex->ended)
		ex->paused = true;
}

void k8s_http_exchange_read_resume(k8s_http_exchange *ex)
{
	if (!ex || ex->ended || !ex->paused)
		return;
	ex->paused = false;
	k8s__http_conn_kick(ex->c);
}

void k8s_http_exchange_set_max_body(k8s_http_exchange *ex, uint64_t bytes)
{
	if (ex && !ex->reading)
		ex->max_body = bytes;
}

/* --- the response --------------------------------------------------------------- */

k8s_http_response *k8s_http_exchange_response(k8s_http_exchange *ex)
{
	return ex ? &ex->res : NULL;
}

int k8s_http_exchange_send_head(k8s_http_exchange *ex, int64_t content_length)
{
	int rc = check_live(ex, "send_head");
	if (rc < 0)
		return rc;
	int status = ex->res.status;
	bool upgrade = status == 101;
	bool no_body = status < 200 || status == 204 || status == 304;
	if (ex->head_sent || ex->finished || content_length < -1 || (no_body && content_length > 0) ||
	    (status < 200 && !upgrade) || (upgrade && !ex->wants_upgrade))
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "http exchange send_head: status %d with length %" PRId64
		                     " (head sent already, 101 without an upgrade request, or a length on a bodiless status)",
		                     status, content_length);
	k8s__http_conn *c = ex->c;
	if ((c->upgrade_req || c->parse_done) && !upgrade)
		c->close_after = true;  /* an upgrade refused: HTTP cannot go on after it */
	k8s_strbuf out = K8S_STRBUF_INIT;
	char date[64];
	k8s__http_date(date, sizeof(date));
	k8s_strbuf_addf(&out, "HTTP/1.1 %d %s\r\n", status, k8s__http_reason_phrase(status));
	k8s_strbuf_add(&out, ex->res.headers.data ? ex->res.headers.data : "", ex->res.headers.len);
	if (upgrade) {
		k8s_strbuf_adds(&out, "Connection: Upgrade\r\n");
	} else if (!no_body) {
		if (content_length >= 0) {
			k8s_strbuf_addf(&out, "Content-Length: %" PRId64 "\r\n", content_length);
		} else if (ex->http_minor >= 1) {
			k8s_strbuf_adds(&out, "Transfer-Encoding: chunked\r\n");
			ex->chunked = true;
		} else {
			ex->close_delimited = true;  /* HTTP/1.0: the body ends with the connection */
			c->close_after = true;
		}
	}
	k8s_strbuf_addf(&out, "Date: %s\r\n", date);
	if (!upgrade) {
		if (c->close_after)
			k8s_strbuf_adds(&out, "Connection: close\r\n");
		else if (ex->keep_alive_10)
			k8s_strbuf_adds(&out, "Connection: keep-alive\r\n");
	}
	k8s_strbuf_add(&out, "\r\n", 2);
	if (out.failed) {
		k8s_strbuf_free(&out);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http exchange send_head: out of memory");
	}
	size_t len;
	char *data = k8s_strbuf_detach(&out, &len);
	ex->head_sent = true;
	ex->no_body = no_body;
	ex->remaining = no_body ? 0 : content_length;
	if (upgrade) {
		ex->tunnel = true;
		ex->no_body = false;
		ex->remaining = -1;
		k8s__http_conn_set_timer(c, 0);  /* tunnels have no timeout unless set */
	}
	if (k8s__http_conn_send(c, ex, data, len, NULL, NULL) < 0)
		return send_failed(ex, "send_head");
	return 0;
}

int k8s_http_exchange_write(k8s_http_exchange *ex, const void *data, size_t len,
                            void (*done)(k8s_http_exchange *ex, void *ud), void *ud)
{
	int rc = check_live(ex, "write");
	if (rc < 0)
		return rc;
	if (!ex->head_sent || ex->finished || !data || len == 0 || ex->no_body)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "http exchange write: needs a head sent, a response with a body, not finished, and bytes");
	if (ex->remaining >= 0 && !ex->tunnel) {
		if ((uint64_t)ex->remaining < len)
			return k8s_error_set(K8S_EINVAL, 0, NULL,
			                     "http exchange write: %zu bytes, but only %" PRId64 " left of the Content-Length",
			                     len, ex->remaining);
		ex->remaining -= (int64_t)len;
	}
	if (ex->head_only)
		return post_done(ex, done, ud);  /* HEAD: the body is not sent */
	char *buf;
	size_t n;
	if (ex->chunked) {
		char size[24];
		int sl = snprintf(size, sizeof(size), "%zx\r\n", len);
		n = (size_t)sl + len + 2;
		buf = malloc(n);
		if (buf) {
			memcpy(buf, size, (size_t)sl);
			memcpy(buf + sl, data, len);
			memcpy(buf + sl + len, "\r\n", 2);
		}
	} else {
		n = len;
		buf = malloc(n);
		if (buf)
			memcpy(buf, data, len);
	}
	if (!buf)
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "http exchange write: out of memory");
	if (k8s__http_conn_send(ex->c, ex, buf, n, done, ud) < 0)
		return send_failed(ex, "write");
	return 0;
}

size_t k8s_http_exchange_pending(k8s_http_exchange *ex)
{
	return ex ? ex->pending : 0;
}

int k8s_http_exchange_finish(k8s_http_exchange *ex)
{
	int rc = check_live(ex, "finish");
	if (rc < 0)
		return rc;
	if (ex->finished)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http exchange finish: finished already");
	if (!ex->head_sent && (rc = k8s_http_exchange_send_head(ex, 0)) < 0)
		return rc;
	if (!ex->tunnel && !ex->head_only && ex->remaining > 0) {
		int64_t left = ex->remaining;
		k8s_http_exchange_abort(ex);
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "http exchange finish: %" PRId64 " bytes of the Content-Length unwritten; connection cut",
		                     left);
	}
	ex->finished = true;
	k8s__http_conn *c = ex->c;
	if (ex->chunked && !ex->head_only) {
		static const char last[] = "0\r\n\r\n";
		char *data = malloc(sizeof(last) - 1);
		if (!data) {
			k8s_http_exchange_abort(ex);
			return k8s_error_set(K8S_ENOMEM, 0, NULL, "http exchange finish: out of memory");
		}
		memcpy(data, last, sizeof(last) - 1);
		if (k8s__http_conn_send(c, ex, data, sizeof(last) - 1, NULL, NULL) < 0)
			return send_failed(ex, "finish");
	}
	k8s__http_conn_exchange_done(c, ex);
	if (!ex->ended && ex->writes_inflight == 0)
		k8s__http_exchange_end(ex, 0);
	return 0;
}

int k8s_http_exchange_respond(k8s_http_exchange *ex, int status, const char *content_type,
                              const void *body, size_t len)
{
	int rc = check_live(ex, "respond");
	if (rc < 0)
		return rc;
	if (ex->head_sent)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "http exchange respond: head sent already");
	if ((rc = k8s_http_response_set_status(&ex->res, status)) < 0)
		return rc;
	if (content_type && (rc = k8s_http_response_add_header(&ex->res, "Content-Type", content_type)) < 0)
		return rc;
	if ((rc = k8s_http_exchange_send_head(ex, (int64_t)len)) < 0)
		return rc;
	if (len > 0 && (rc = k8s_http_exchange_write(ex, body, len, NULL, NULL)) < 0)
		return rc;
	return k8s_http_exchange_finish(ex);
}

void k8s_http_exchange_abort(k8s_http_exchange *ex)
{
	if (!ex || ex->ended)
		return;
	k8s__http_conn *c = ex->c;
	k8s__http_exchange_end(ex, K8S_ECANCELED);
	if (c)
		k8s__http_conn_close(c, K8S_ECANCELED);
}

void k8s_http_exchange_on_close(k8s_http_exchange *ex,
                                void (*cb)(k8s_http_exchange *ex, int reason, void *ud), void *ud)
{
	if (!ex)
		return;
	ex->on_close = cb;
	ex->close_ud = ud;
}

void k8s_http_exchange_end_on_client_eof(k8s_http_exchange *ex)
{
	if (!ex || ex->ended || ex->end_on_client_eof)
		return;
	ex->end_on_client_eof = true;
	if (ex->c && ex->c->ex == ex)
		k8s__http_conn_kick(ex->c);  /* an EOF already seen counts too */
}

void k8s_http_exchange_set_timeout(k8s_http_exchange *ex, long ms)
{
	if (ex && !ex->ended && ex->c && ex->c->ex == ex)
		k8s__http_conn_set_timer(ex->c, ms);
}

int k8s_http_exchange_upgrade(k8s_http_exchange *ex, const k8s_http_body_reader *r, void *ud)
{
	int rc = check_live(ex, "upgrade");
	if (rc < 0)
		return rc;
	if (!ex->wants_upgrade || ex->head_sent || !r || ex->reading ||
	    (ex->res.status != 200 && ex->res.status != 101))
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "http exchange upgrade: needs an upgrade request, no head sent, a reader, status 101");
	ex->res.status = 101;
	if ((rc = k8s_http_exchange_send_head(ex, 0)) < 0)
		return rc;
	return k8s_http_exchange_read_start(ex, r, ud);
}
