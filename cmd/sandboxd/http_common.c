/*
 * http_common.c - what the sandboxd handlers share (http.h): the process
 * cap, the list of runs for shutdown, error bodies, request paths and
 * query parameters, and reading a small request body whole.
 */
#include <stdlib.h>
#include <string.h>

#include "asb/common.h"
#include "codec.h"
#include "http.h"

/* ---- cap ---- */

int sbxd_cap_acquire(sbxd_daemon *d)
{
	pthread_mutex_lock(&d->cap_lock);
	int rc = sbxd_proctable_acquire(d->cap);
	pthread_mutex_unlock(&d->cap_lock);
	return rc;
}

void sbxd_cap_release(sbxd_daemon *d)
{
	pthread_mutex_lock(&d->cap_lock);
	sbxd_proctable_release(d->cap);
	pthread_mutex_unlock(&d->cap_lock);
}

/* ---- transfers ---- */

int sbxd_transfer_acquire(sbxd_daemon *d)
{
	unsigned int n = atomic_fetch_add(&d->transfers, 1);
	if (n < SBXD_MAX_TRANSFERS)
		return 0;
	atomic_fetch_sub(&d->transfers, 1);
	return asb_error_set(ASB_ETOOMANYREQUESTS, 429, NULL,
	                     "too many transfers: %u at once is the limit", SBXD_MAX_TRANSFERS);
}

void sbxd_transfer_release(sbxd_daemon *d)
{
	atomic_fetch_sub(&d->transfers, 1);
}

/* ---- no-progress timeout ---- */

struct sbxd_stall {
	uv_timer_t timer;        /* first: the close callback frees the struct */
	httpd_exchange *ex;
	asb_logger *log;
	uint64_t ms;
	bool sending, paused;
};

static void stall_fired(uv_timer_t *t)
{
	sbxd_stall *s = (sbxd_stall *)t;
	if (s->paused || (s->sending && httpd_exchange_pending(s->ex) == 0)) {
		uv_timer_start(t, stall_fired, s->ms, 0);  /* nothing is owed: not a stall */
		return;
	}
	asb_log(s->log, ASB_LOG_INFO, "transfer without progress: connection cut", "direction",
	        s->sending ? "send" : "receive", NULL);
	httpd_exchange_abort(s->ex);
}

sbxd_stall *sbxd_stall_start(sbxd_daemon *d, httpd_exchange *ex, long ms, bool sending)
{
	if (ms <= 0)
		return NULL;
	sbxd_stall *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->ex = ex;
	s->log = d->log;
	s->ms = (uint64_t)ms;
	s->sending = sending;
	uv_timer_init(httpd_exchange_loop(ex), &s->timer);
	uv_timer_start(&s->timer, stall_fired, s->ms, 0);
	return s;
}

void sbxd_stall_progress(sbxd_stall *s)
{
	if (s)
		uv_timer_start(&s->timer, stall_fired, s->ms, 0);
}

void sbxd_stall_pause(sbxd_stall *s, bool paused)
{
	if (s && s->paused != paused) {
		s->paused = paused;
		if (!paused)
			sbxd_stall_progress(s);
	}
}

static void stall_closed(uv_handle_t *h)
{
	free(h);
}

void sbxd_stall_free(sbxd_stall *s)
{
	if (s)
		uv_close((uv_handle_t *)&s->timer, stall_closed);
}

/* ---- runs ---- */

void sbxd_run_link(sbxd_run *r)
{
	r->prev = NULL;
	r->next = r->srv->runs;
	if (r->next)
		r->next->prev = r;
	r->srv->runs = r;
}

void sbxd_run_release(sbxd_run *r)
{
	if (!r->proc)
		return;
	sbxd_server *s = r->srv;
	if (r->prev)
		r->prev->next = r->next;
	else if (s->runs == r)
		s->runs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
	if (r->id > 0) {
		pthread_mutex_lock(&s->d->cap_lock);
		sbxd_proctable_remove(s->d->cap, r->id);
		pthread_mutex_unlock(&s->d->cap_lock);
	}
	sbxd_proc_free(r->proc);
	r->proc = NULL;
	sbxd_cap_release(s->d);
}

void sbxd_http_begin_shutdown(void *ud)
{
	sbxd_server *s = ud;
	s->shutting_down = true;
	for (sbxd_run *r = s->runs; r; r = r->next)
		if (r->proc)
			sbxd_proc_terminate(r->proc);
	sbxd_proc_lingering_stop(&s->lingering);
	sbxd_keeper_pool_free(s->keepers);
	s->keepers = NULL;
}

int sbxd_server_keepers(sbxd_server *s, uv_loop_t *loop, sbxd_keeper_pool **out)
{
	*out = NULL;
	if (s->shutting_down)
		return asb_error_set(ASB_ESHUTDOWN, 503, NULL, "sandboxd is shutting down");
	if (!s->keepers) {
		int rc = sbxd_keeper_pool_new(&s->keepers, loop, (unsigned)s->d->flags->idle_keepers,
		                              s->d->reaper);
		if (rc)
			return rc;
	}
	*out = s->keepers;
	return 0;
}

/* ---- responses ---- */

void sbxd_respond_json(httpd_exchange *ex, int status, const char *body, size_t len)
{
	httpd_exchange_respond(ex, status, "application/json", body, len);
}

void sbxd_respond_error(httpd_exchange *ex, int status, const char *code, const char *msg)
{
	size_t len;
	char *b = sbxd_error_body(code, msg, &len);
	if (!b) {
		httpd_exchange_respond(ex, 500, "text/plain; charset=utf-8", "out of memory\n", 14);
		return;
	}
	sbxd_respond_json(ex, status, b, len);
	free(b);
}

void sbxd_respond_message(httpd_exchange *ex, int status, const char *msg)
{
	size_t len;
	char *b = sbxd_message_body(msg, &len);
	if (!b) {
		httpd_exchange_respond(ex, 500, "text/plain; charset=utf-8", "out of memory\n", 14);
		return;
	}
	sbxd_respond_json(ex, status, b, len);
	free(b);
}

void sbxd_respond_k8s_error(httpd_exchange *ex, int rc)
{
	const asb_error *e = asb_error_last();
	const char *msg = e->message[0] ? e->message : asb_strerror(rc);
	switch (rc) {
	case ASB_EFORBIDDEN:
		if (strcmp(e->reason, SBXD_REASON_ESCAPE) == 0)
			msg = "path traversal outside sandbox root is forbidden";
		else if (strcmp(e->reason, SBXD_REASON_DENIED) == 0)
			msg = "permission denied";
		sbxd_respond_error(ex, 403, "PERMISSION_DENIED", msg);
		break;
	case ASB_ENOTFOUND:
		if (strcmp(e->reason, SBXD_REASON_MISSING) == 0)
			msg = "path does not exist within the sandbox";
		sbxd_respond_error(ex, 404, "NOT_FOUND", msg);
		break;
	case ASB_EINVAL:
	case ASB_EBADREQUEST:
		sbxd_respond_error(ex, 400, "INVALID_ARGUMENT", msg);
		break;
	case ASB_ECONFLICT:
		sbxd_respond_error(ex, 409, "CONFLICT", msg);
		break;
	case ASB_ETOOMANYREQUESTS:
		sbxd_respond_error(ex, 429, "RESOURCE_EXHAUSTED", msg);
		break;
	case ASB_ETOOLARGE:
		sbxd_respond_error(ex, 413, "INVALID_ARGUMENT", "request body too large");
		break;
	case ASB_ESHUTDOWN:
		sbxd_respond_error(ex, 503, "UNAVAILABLE", "sandboxd is shutting down");
		break;
	default:
		sbxd_respond_error(ex, 500, "INTERNAL", msg);
		break;
	}
}

/* ---- requests ---- */

int sbxd_request_path(sbxd_daemon *d, httpd_exchange *ex, const char *prefix, int decodes,
                      sbxd_clean_mode mode, char **rel, char **shown)
{
	*rel = NULL;
	if (shown)
		*shown = NULL;
	const char *raw = httpd_request_path(httpd_exchange_request(ex));
	size_t pl = strlen(prefix);
	const char *p = strncmp(raw, prefix, pl) == 0 ? raw + pl : "";
	char *cur = strdup(p);
	size_t len = strlen(p);
	if (!cur)
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	for (int i = 0; i < decodes; i++) {
		char *next;
		int rc = sbxd_percent_decode(cur, len, &next, &len);
		free(cur);
		if (rc)
			return rc;
		cur = next;
	}
	int rc = sbxd_path_clean(sbxd_root_path(d->root), mode, cur, len, rel);
	if (rc == 0 && shown)
		*shown = cur;
	else
		free(cur);
	return rc;
}

typedef struct {
	char *buf;
	size_t len, cap, limit;
	sbxd_body_fn done;
	void (*on_fail)(httpd_exchange *ex, int err, void *ud);
	void *ud;
} body_state;

static void body_data(httpd_exchange *ex, const char *data, size_t len, void *ud)
{
	body_state *b = ud;
	if (b->len + len + 1 > b->cap) {
		size_t ncap = (b->len + len + 1) * 2;
		if (ncap > b->limit + 1)
			ncap = b->limit + 1;
		char *nb = realloc(b->buf, ncap);
		if (!nb) {
			httpd_exchange_abort(ex);
			return;
		}
		b->buf = nb;
		b->cap = ncap;
	}
	memcpy(b->buf + b->len, data, len);
	b->len += len;
}

static void body_end(httpd_exchange *ex, void *ud)
{
	body_state *b = ud;
	if (!b->buf)
		b->buf = calloc(1, 1);
	if (b->buf)
		b->buf[b->len] = '\0';
	b->done(ex, b->buf ? b->buf : "", b->len, b->ud);
	free(b->buf);
	free(b);
}

static void body_error(httpd_exchange *ex, int err, void *ud)
{
	body_state *b = ud;
	if (b->on_fail)
		b->on_fail(ex, err, b->ud);
	free(b->buf);
	free(b);
}

void sbxd_read_body(httpd_exchange *ex, size_t limit, sbxd_body_fn done, void *ud,
                    void (*on_fail)(httpd_exchange *ex, int err, void *ud))
{
	body_state *b = calloc(1, sizeof(*b));
	if (!b) {
		sbxd_respond_error(ex, 500, "INTERNAL", "out of memory");
		if (on_fail)
			on_fail(ex, ASB_ENOMEM, ud);
		return;
	}
	b->limit = limit;
	b->done = done;
	b->on_fail = on_fail;
	b->ud = ud;
	static const httpd_body_reader reader = { body_data, body_end, body_error };
	httpd_exchange_set_max_body(ex, limit);
	int rc = httpd_exchange_read_start(ex, &reader, b);
	if (rc) {
		/* too large by its Content-Length: the server answered 413 */
		if (on_fail)
			on_fail(ex, rc, ud);
		free(b);
	}
}
