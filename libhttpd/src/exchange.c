/*
 * exchange.c - streaming exchanges of the HTTP server (see
 * httpd/exchange.h): the handler's side of one request/response, driven by
 * the connection code of server.c.
 *
 * Lifetime: an exchange is created when a stream route's request head is
 * parsed and holds one reference until its on_close has run; each queued
 * write holds one more (its done callback needs the exchange), and the
 * server holds one around every user callback, so that a handler may
 * finish or abort from inside any callback. Ending (httpd__exchange_end)
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
#include "httpd/exchange.h"
#include "server_internal.h"
#include "asb/strbuf.h"

/* --- lifetime (for server.c) ----------------------------------------------- */

httpd_exchange *httpd__exchange_new(httpd__conn *c, httpd_stream_fn fn, void *ud)
{
	httpd_exchange *ex = calloc(1, sizeof(*ex));
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

void httpd__exchange_ref(httpd_exchange *ex)
{
	ex->refs++;
}

void httpd__exchange_unref(httpd_exchange *ex)
{
	if (--ex->refs > 0)
		return;
	httpd__request_reset(&ex->req);
	httpd__response_free(&ex->res);
	free(ex);
}

/* Posted by end: the reader's error, then on_close, then the last reference. */
static void run_close(void *ud)
{
	httpd_exchange *ex = ud;
	httpd__loop *lp = ex->lp;
	int reason = ex->end_reason;
	if (reason != 0 && reason != ASB_ECANCELED && ex->reading && !ex->end_delivered &&
	    ex->reader.on_error) {
		ex->end_delivered = true;
		ex->reader.on_error(ex, reason, ex->reader_ud);
	}
	if (ex->on_close)
		ex->on_close(ex, reason, ex->close_ud);
	httpd__exchange_unref(ex);
	httpd__loop_exchange_gone(lp);
}

void httpd__exchange_end(httpd_exchange *ex, int reason)
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
	if (httpd__loop_defer(ex->lp, run_close, ex) < 0)
		run_close(ex);
}

void httpd__exchange_start(httpd_exchange *ex)
{
	ex->started = true;
	httpd__exchange_ref(ex);
	ex->fn(ex, ex->fn_ud);
	httpd__exchange_unref(ex);
}

void httpd__exchange_deliver(httpd_exchange *ex, const char *data, size_t len)
{
	if (ex->ended || !ex->reading)
		return;
	if (ex->reader.on_data) {
		httpd__exchange_ref(ex);
		ex->reader.on_data(ex, data, len, ex->reader_ud);
		httpd__exchange_unref(ex);
	}
}

void httpd__exchange_deliver_end(httpd_exchange *ex)
{
	if (ex->ended || !ex->reading || ex->paused || ex->end_delivered)
		return;
	ex->end_delivered = true;
	if (ex->reader.on_end) {
		httpd__exchange_ref(ex);
		ex->reader.on_end(ex, ex->reader_ud);
		httpd__exchange_unref(ex);
	}
}

void httpd__exchange_write_done(httpd__write *wr, int status)
{
	httpd_exchange *ex = wr->ex;
	ex->writes_inflight--;
	ex->pending -= wr->plain_len;
	if (status < 0 && !ex->ended)
		httpd__exchange_end(ex, wr->c->close_reason ? wr->c->close_reason : ASB_ETRANSPORT);
	if (status == 0 && !ex->ended && wr->done)
		wr->done(ex, wr->done_ud);
	if (!ex->ended && ex->finished && ex->writes_inflight == 0)
		httpd__exchange_end(ex, 0);  /* the last byte of the answer is out */
	httpd__exchange_unref(ex);
}

/* --- helpers ---------------------------------------------------------------------- */

/* 0 while the exchange may be used; else the code it ended with, as the error. */
static int check_live(httpd_exchange *ex, const char *what)
{
	if (!ex)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http exchange %s: no exchange", what);
	if (ex->ended)
		return asb_error_set(ex->end_reason ? ex->end_reason : ASB_EINVAL, 0, NULL,
		                     "http exchange %s: the exchange has ended (%s)", what,
		                     ex->end_reason ? asb_strerror(ex->end_reason) : "finished");
	return 0;
}

/* The error a failed send leaves: the connection closed and ended the exchange. */
static int send_failed(httpd_exchange *ex, const char *what)
{
	httpd__exchange_end(ex, ASB_ETRANSPORT);
	return asb_error_set(ex->end_reason, 0, NULL, "http exchange %s: the connection failed", what);
}

typedef struct {
	httpd_exchange *ex;
	void (*done)(httpd_exchange *, void *);
	void *ud;
} posted_done;

static void run_done(void *ud)
{
	posted_done *pd = ud;
	if (!pd->ex->ended)
		pd->done(pd->ex, pd->ud);
	httpd__exchange_unref(pd->ex);
	free(pd);
}

/* A write that sends nothing (HEAD) still reports done, later. */
static int post_done(httpd_exchange *ex, void (*done)(httpd_exchange *, void *), void *ud)
{
	if (!done)
		return 0;
	posted_done *pd = malloc(sizeof(*pd));
	if (!pd)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http exchange write: out of memory");
	pd->ex = ex;
	pd->done = done;
	pd->ud = ud;
	httpd__exchange_ref(ex);
	int rc = httpd__loop_defer(ex->lp, run_done, pd);
	if (rc < 0) {
		httpd__exchange_unref(ex);
		free(pd);
	}
	return rc;
}

/* --- the request ------------------------------------------------------------ */

const httpd_request *httpd_exchange_request(httpd_exchange *ex)
{
	return ex ? &ex->req : NULL;
}

httpd_server *httpd_exchange_server(httpd_exchange *ex)
{
	return ex ? ex->srv : NULL;
}

uv_loop_t *httpd_exchange_loop(httpd_exchange *ex)
{
	return ex ? &ex->lp->uv : NULL;
}

unsigned int httpd_exchange_loop_index(httpd_exchange *ex)
{
	return ex ? ex->lp->index : 0;
}

int httpd_exchange_peer(httpd_exchange *ex, char *ip, size_t cap, int *port)
{
	if (!ex || !ip || cap <= strlen(ex->peer_ip))
		return asb_error_set(ASB_EINVAL, 0, NULL, "http exchange peer: a buffer of 46 bytes is needed");
	memcpy(ip, ex->peer_ip, strlen(ex->peer_ip) + 1);
	if (port)
		*port = ex->peer_port;
	return 0;
}

bool httpd_exchange_is_tls(httpd_exchange *ex)
{
	return ex && ex->is_tls;
}

int httpd_exchange_fd(httpd_exchange *ex)
{
	uv_os_fd_t fd;
	if (!ex || ex->ended || !ex->c || uv_fileno((const uv_handle_t *)&ex->c->tcp, &fd) < 0)
		return -1;
	return (int)fd;
}

int64_t httpd_exchange_content_length(httpd_exchange *ex)
{
	return ex ? ex->content_length : 0;
}

bool httpd_exchange_wants_upgrade(httpd_exchange *ex)
{
	return ex && ex->wants_upgrade;
}

/* --- the request body --------------------------------------------------------- */

int httpd_exchange_read_start(httpd_exchange *ex, const httpd_body_reader *r, void *ud)
{
	int rc = check_live(ex, "read_start");
	if (rc < 0)
		return rc;
	if (!r || ex->reading || ex->finished)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http exchange read_start: needs a reader, once, before finish");
	httpd__conn *c = ex->c;
	if (!ex->tunnel && ex->max_body && ex->content_length > 0 &&
	    (uint64_t)ex->content_length > ex->max_body) {
		/* refused before a byte is read, as the buffered routes do */
		uint64_t limit = ex->max_body;
		int64_t declared = ex->content_length;
		bool answer = !ex->head_sent && c->ex == ex;
		httpd__exchange_end(ex, ASB_ETOOLARGE);
		if (answer)
			httpd__conn_send_error(c, 413);
		else
			httpd__conn_close(c, ASB_ETOOLARGE);
		return asb_error_set(ASB_ETOOLARGE, 0, NULL,
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
			return asb_error_set(ASB_ENOMEM, 0, NULL, "http exchange read_start: out of memory");
		memcpy(data, cont, sizeof(cont) - 1);
		ex->continue_sent = true;
		if (httpd__conn_send(c, NULL, data, sizeof(cont) - 1, NULL, NULL) < 0)
			return send_failed(ex, "read_start");
	}
	httpd__conn_kick(c);
	return 0;
}

void httpd_exchange_read_pause(httpd_exchange *ex)
{
	if (ex && !ex->ended)
		ex->paused = true;
}

void httpd_exchange_read_resume(httpd_exchange *ex)
{
	if (!ex || ex->ended || !ex->paused)
		return;
	ex->paused = false;
	httpd__conn_kick(ex->c);
}

void httpd_exchange_set_max_body(httpd_exchange *ex, uint64_t bytes)
{
	if (ex && !ex->reading)
		ex->max_body = bytes;
}

/* --- the response --------------------------------------------------------------- */

httpd_response *httpd_exchange_response(httpd_exchange *ex)
{
	return ex ? &ex->res : NULL;
}

int httpd_exchange_send_head(httpd_exchange *ex, int64_t content_length)
{
	int rc = check_live(ex, "send_head");
	if (rc < 0)
		return rc;
	int status = ex->res.status;
	bool upgrade = status == 101;
	bool no_body = status < 200 || status == 204 || status == 304;
	if (ex->head_sent || ex->finished || content_length < -1 || (no_body && content_length > 0) ||
	    (status < 200 && !upgrade) || (upgrade && !ex->wants_upgrade))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http exchange send_head: status %d with length %" PRId64
		                     " (head sent already, 101 without an upgrade request, or a length on a bodiless status)",
		                     status, content_length);
	httpd__conn *c = ex->c;
	if ((c->upgrade_req || c->parse_done) && !upgrade)
		c->close_after = true;  /* an upgrade refused: HTTP cannot go on after it */
	asb_strbuf out = ASB_STRBUF_INIT;
	asb_strbuf_reserve(&out, ex->res.headers.len + 160);  /* one allocation */
	httpd__add_status_line(&out, status);
	asb_strbuf_add(&out, ex->res.headers.data ? ex->res.headers.data : "", ex->res.headers.len);
	if (upgrade) {
		asb_strbuf_adds(&out, "Connection: Upgrade\r\n");
	} else if (!no_body) {
		if (content_length >= 0) {
			asb_strbuf_add(&out, "Content-Length: ", 16);
			asb_strbuf_add_int(&out, content_length);
			asb_strbuf_add(&out, "\r\n", 2);
		} else if (ex->http_minor >= 1) {
			asb_strbuf_adds(&out, "Transfer-Encoding: chunked\r\n");
			ex->chunked = true;
		} else {
			ex->close_delimited = true;  /* HTTP/1.0: the body ends with the connection */
			c->close_after = true;
		}
	}
	httpd__add_date(&out);
	if (!upgrade) {
		if (c->close_after)
			asb_strbuf_adds(&out, "Connection: close\r\n");
		else if (ex->keep_alive_10)
			asb_strbuf_adds(&out, "Connection: keep-alive\r\n");
	}
	asb_strbuf_add(&out, "\r\n", 2);
	if (out.failed) {
		asb_strbuf_free(&out);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http exchange send_head: out of memory");
	}
	size_t len;
	char *data = asb_strbuf_detach(&out, &len);
	ex->head_sent = true;
	ex->no_body = no_body;
	ex->remaining = no_body ? 0 : content_length;
	if (upgrade) {
		ex->tunnel = true;
		ex->no_body = false;
		ex->remaining = -1;
		httpd__conn_set_timer(c, 0);  /* tunnels have no timeout unless set */
	}
	if (httpd__conn_send(c, ex, data, len, NULL, NULL) < 0)
		return send_failed(ex, "send_head");
	return 0;
}

/* The checks of a body write, and its Content-Length accounting. */
static int write_check(httpd_exchange *ex, const void *data, size_t len)
{
	int rc = check_live(ex, "write");
	if (rc < 0)
		return rc;
	if (!ex->head_sent || ex->finished || !data || len == 0 || ex->no_body)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http exchange write: needs a head sent, a response with a body, not finished, and bytes");
	if (ex->remaining >= 0 && !ex->tunnel) {
		if ((uint64_t)ex->remaining < len)
			return asb_error_set(ASB_EINVAL, 0, NULL,
			                     "http exchange write: %zu bytes, but only %" PRId64 " left of the Content-Length",
			                     len, ex->remaining);
		ex->remaining -= (int64_t)len;
	}
	return 0;
}

int httpd_exchange_write_owned(httpd_exchange *ex, char *data, size_t len,
                                  void (*done)(httpd_exchange *ex, void *ud), void *ud)
{
	if (ex && ex->chunked) {
		/* the framing goes around the bytes: a copy after all */
		int rc = httpd_exchange_write(ex, data, len, done, ud);
		free(data);
		return rc;
	}
	int rc = write_check(ex, data, len);
	if (rc < 0) {
		free(data);
		return rc;
	}
	if (ex->head_only) {
		free(data);
		return post_done(ex, done, ud);  /* HEAD: the body is not sent */
	}
	if (httpd__conn_send(ex->c, ex, data, len, done, ud) < 0)
		return send_failed(ex, "write");
	return 0;
}

bool httpd_exchange_can_write_file(httpd_exchange *ex)
{
	return ex && !ex->ended && ex->c && !ex->is_tls && ex->head_sent && !ex->finished &&
	       !ex->chunked && !ex->tunnel && !ex->no_body;
}

int httpd_exchange_write_file(httpd_exchange *ex, int fd, uint64_t offset, size_t len,
                                 void (*done)(httpd_exchange *ex, void *ud), void *ud)
{
	int rc = check_live(ex, "write_file");
	if (rc < 0)
		return rc;
	if (fd < 0 || !httpd_exchange_can_write_file(ex))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http exchange write_file: needs a file, a head sent with a length, plain HTTP and no tunnel");
	if ((rc = write_check(ex, &fd, len)) < 0)
		return rc;
	if (ex->head_only)
		return post_done(ex, done, ud);  /* HEAD: the body is not sent */
	if (httpd__conn_send_file(ex->c, ex, fd, offset, len, done, ud) < 0)
		return send_failed(ex, "write_file");
	return 0;
}

int httpd_exchange_write(httpd_exchange *ex, const void *data, size_t len,
                            void (*done)(httpd_exchange *ex, void *ud), void *ud)
{
	int rc = write_check(ex, data, len);
	if (rc < 0)
		return rc;
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
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http exchange write: out of memory");
	if (httpd__conn_send(ex->c, ex, buf, n, done, ud) < 0)
		return send_failed(ex, "write");
	return 0;
}

size_t httpd_exchange_pending(httpd_exchange *ex)
{
	return ex ? ex->pending : 0;
}

int httpd_exchange_finish(httpd_exchange *ex)
{
	int rc = check_live(ex, "finish");
	if (rc < 0)
		return rc;
	if (ex->finished)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http exchange finish: finished already");
	if (!ex->head_sent && (rc = httpd_exchange_send_head(ex, 0)) < 0)
		return rc;
	if (!ex->tunnel && !ex->head_only && ex->remaining > 0) {
		int64_t left = ex->remaining;
		httpd_exchange_abort(ex);
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http exchange finish: %" PRId64 " bytes of the Content-Length unwritten; connection cut",
		                     left);
	}
	ex->finished = true;
	httpd__conn *c = ex->c;
	if (ex->chunked && !ex->head_only) {
		static const char last[] = "0\r\n\r\n";
		char *data = malloc(sizeof(last) - 1);
		if (!data) {
			httpd_exchange_abort(ex);
			return asb_error_set(ASB_ENOMEM, 0, NULL, "http exchange finish: out of memory");
		}
		memcpy(data, last, sizeof(last) - 1);
		if (httpd__conn_send(c, ex, data, sizeof(last) - 1, NULL, NULL) < 0)
			return send_failed(ex, "finish");
	}
	httpd__conn_exchange_done(c, ex);
	if (!ex->ended && ex->writes_inflight == 0)
		httpd__exchange_end(ex, 0);
	return 0;
}

int httpd_exchange_respond(httpd_exchange *ex, int status, const char *content_type,
                              const void *body, size_t len)
{
	int rc = check_live(ex, "respond");
	if (rc < 0)
		return rc;
	if (ex->head_sent)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http exchange respond: head sent already");
	if ((rc = httpd_response_set_status(&ex->res, status)) < 0)
		return rc;
	if (content_type && (rc = httpd_response_add_header(&ex->res, "Content-Type", content_type)) < 0)
		return rc;
	if ((rc = httpd_exchange_send_head(ex, (int64_t)len)) < 0)
		return rc;
	if (len > 0 && (rc = httpd_exchange_write(ex, body, len, NULL, NULL)) < 0)
		return rc;
	return httpd_exchange_finish(ex);
}

void httpd_exchange_abort(httpd_exchange *ex)
{
	if (!ex || ex->ended)
		return;
	httpd__conn *c = ex->c;
	httpd__exchange_end(ex, ASB_ECANCELED);
	if (c)
		httpd__conn_close(c, ASB_ECANCELED);
}

void httpd_exchange_on_close(httpd_exchange *ex,
                                void (*cb)(httpd_exchange *ex, int reason, void *ud), void *ud)
{
	if (!ex)
		return;
	ex->on_close = cb;
	ex->close_ud = ud;
}

void httpd_exchange_end_on_client_eof(httpd_exchange *ex)
{
	if (!ex || ex->ended || ex->end_on_client_eof)
		return;
	ex->end_on_client_eof = true;
	if (ex->c && ex->c->ex == ex)
		httpd__conn_kick(ex->c);  /* an EOF already seen counts too */
}

void httpd_exchange_set_timeout(httpd_exchange *ex, long ms)
{
	if (ex && !ex->ended && ex->c && ex->c->ex == ex)
		httpd__conn_set_timer(ex->c, ms);
}

int httpd_exchange_upgrade(httpd_exchange *ex, const httpd_body_reader *r, void *ud)
{
	int rc = check_live(ex, "upgrade");
	if (rc < 0)
		return rc;
	if (!ex->wants_upgrade || ex->head_sent || !r || ex->reading ||
	    (ex->res.status != 200 && ex->res.status != 101))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http exchange upgrade: needs an upgrade request, no head sent, a reader, status 101");
	ex->res.status = 101;
	if ((rc = httpd_exchange_send_head(ex, 0)) < 0)
		return rc;
	return httpd_exchange_read_start(ex, r, ud);
}
