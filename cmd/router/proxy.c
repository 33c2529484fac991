/*
 * proxy.c - one proxied exchange from client head to the end of the
 * response or tunnel (proxy.h). A request (rt_req) lives until the
 * server's on_close for its exchange has run and every asynchronous step
 * it started (authorization work, DNS lookup, timers) has come back:
 * those hold references, the exchange holds the first one.
 */
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "asb/json.h"
#include "k8s/object.h"
#include "accesslog.h"
#include "asb/strbuf.h"
#include "contract.h"
#include "headers.h"
#include "proxy.h"
#include "resolve.h"
#include "reviewq.h"
#include "upstream.h"

#define MAX_LOOPS 64
/* How often a request held for a resuming Sandbox looks at the cache. */
#define RESUME_POLL_MS 50
/* The answers to requests that are not held (nothing reached the sandbox:
 * safe to retry). */
#define HOLD_FULL_DETAIL "Too many requests waiting for sandboxes to resume."
#define HOLD_DRAIN_DETAIL "The router is shutting down; retry the request."

typedef struct rt_req rt_req;

typedef struct rt_listener {
	rt_proxy *proxy;
	httpd_server *srv;
	rt_pool *pools[MAX_LOOPS];   /* one per loop thread, made on that thread */
	rt_metrics_memo memos[MAX_LOOPS];  /* each loop thread's */
	bool draining[MAX_LOOPS];
	rt_req *held[MAX_LOOPS];     /* each loop's held requests (drain answers them) */
	struct rt_listener *next;
} rt_listener;

struct rt_proxy {
	rt_proxy_options o;
	rt_cache_view view;
	bool has_view;
	rt_listener *listeners;
	atomic_int nheld;            /* requests held now, all loops (--resume-max-held) */
};

struct rt_req {
	rt_listener *l;
	rt_proxy *p;
	rt_pool *pool;
	httpd_exchange *ex;       /* NULL once on_close ran */
	int refs;
	/* the request head (strings borrowed from the exchange's request) */
	rt_header *hs;
	char *target_s;              /* path?query as received */
	rt_head head;
	char peer[64];
	rt_route route;
	bool routed;
	bool upgrade, head_req;
	rt_framing framing;
	long deadline_ms;            /* proxy timeout of this request */
	/* progress */
	int status;                  /* status sent to the client, 0: none yet */
	bool head_sent, done, tunnel;
	uint64_t bytes_out;
	uint64_t start_ns;
	/* authorization on the review threads (reviewq.h) */
	unsigned loop_index;
	atomic_bool gone;            /* set in on_close: the review may be skipped */
	char *authorization;
	rt_verdict verdict;
	char detail[256];
	/* target and upstream */
	rt_target target;
	int attempt;
	char key[sizeof(((rt_target *)0)->host) + 24];  /* host:port */
	uv_getaddrinfo_t gai;
	struct sockaddr_storage addr;
	uv_timer_t phase;            /* retry backoff, then response-header timeout */
	uv_timer_t deadline;         /* --proxy-timeout */
	rt_upconn *up;
	asb_strbuf out;
	bool body_started, body_done, body_paused, resp_paused;
	uint64_t body_bytes;
	bool keep_alive;             /* the sandbox's answer allows reuse */
	/* idle Sandboxes (idlesync.h) */
	bool tracked;                /* rt_activity_begin() counted this exchange */
	bool holding;                /* held while the Sandbox resumes */
	uint64_t hold_start_ns;
	uint64_t hold_until_ms;      /* uv_now() bound of the hold */
	long hold_limit_ms;
	rt_req *held_prev, *held_next;  /* the loop's held list, while `holding` */
};

static void start_attempt(rt_req *r);
static void req_unref(rt_req *r);

/* ---- small helpers ---- */

static uint64_t now_ns(void)
{
	return uv_hrtime();
}

static const char *ns_label(const rt_req *r)
{
	return r->routed ? r->route.ns : "-";
}

static rt_pool *loop_pool(rt_listener *l, httpd_exchange *ex)
{
	unsigned i = httpd_exchange_loop_index(ex);
	if (i >= MAX_LOOPS)
		return NULL;
	if (!l->pools[i]) {
		const rt_flags *f = l->proxy->o.flags;
		l->pools[i] = rt_pool_new(httpd_exchange_loop(ex),
		                          l->draining[i] ? 0 : f->upstream_idle_per_host,
		                          f->upstream_idle_timeout_ms, l->proxy->o.metrics);
	}
	return l->pools[i];
}

/* Sends {"detail": text} with `status`, or cuts the connection when a
 * head already went out. Ends the upstream side. */
static void fail_request(rt_req *r, int status, const char *detail)
{
	if (r->up) {
		rt_upconn_release(r->up, false);
		r->up = NULL;
	}
	uv_timer_stop(&r->phase);
	uv_timer_stop(&r->deadline);
	if (!r->ex || r->done)
		return;
	r->done = true;
	if (r->head_sent) {
		httpd_exchange_abort(r->ex);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	if (o && !cJSON_AddStringToObject(o, "detail", detail)) {
		cJSON_Delete(o);
		o = NULL;
	}
	/* the Go router's encoder ends the body with a newline */
	size_t n = 0;
	char *s = asb_json_print(o, true, &n);
	r->status = status;
	r->head_sent = true;
	if (!s) {
		httpd_exchange_abort(r->ex);
		return;
	}
	r->bytes_out += n;
	httpd_exchange_respond(r->ex, status, "application/json", s, n);
	free(s);
}

static void fail_reject(rt_req *r, const rt_reject *rej)
{
	fail_request(r, rej->status, rej->detail);
}

static void fail_upstream(rt_req *r, const char *reason)
{
	char d[128];
	snprintf(d, sizeof(d), "Could not connect to the backend sandbox: %s", r->route.id);
	rt_metrics_upstream_error(r->p->o.metrics, ns_label(r), reason);
	fail_request(r, 502, d);
}

static void fail_timeout(rt_req *r)
{
	char d[128];
	snprintf(d, sizeof(d), "Timed out waiting for the backend sandbox: %s", r->route.id);
	rt_metrics_upstream_error(r->p->o.metrics, ns_label(r), "timeout");
	fail_request(r, 504, d);
}

/* ---- request body: client -> sandbox ---- */

static void body_data(httpd_exchange *ex, const char *data, size_t len, void *ud)
{
	rt_req *r = ud;
	int64_t limit = r->p->o.flags->max_request_body_bytes;
	r->body_bytes += len;
	if (limit > 0 && r->body_bytes > (uint64_t)limit && !r->tunnel) {
		rt_metrics_upstream_error(r->p->o.metrics, ns_label(r), "other");
		fail_request(r, 413, "Request body too large.");
		return;
	}
	if (!r->up)
		return;
	if (rt_upconn_write(r->up, data, len, r->framing.chunked && !r->tunnel) < 0) {
		fail_upstream(r, "other");  /* the connection is not reused */
		return;
	}
	if (rt_upconn_queued(r->up) > RT_UP_HIGH_WATER && !r->body_paused) {
		r->body_paused = true;
		httpd_exchange_read_pause(ex);
	}
}

static void body_end(httpd_exchange *ex, void *ud)
{
	rt_req *r = ud;
	r->body_done = true;
	if (!r->up)
		return;
	if (r->tunnel)
		rt_upconn_shutdown_write(r->up);  /* the client finished sending */
	else if (r->framing.chunked)
		rt_upconn_write_last_chunk(r->up);
}

static void body_error(httpd_exchange *ex, int err, void *ud)
{
	rt_req *r = ud;
	/* the exchange ends (on_close follows); the sandbox gets no more */
	if (r->up) {
		rt_upconn_release(r->up, false);
		r->up = NULL;
	}
	if (err == ASB_ETOOLARGE)
		r->status = 413;
	else if (err == ASB_EBADREQUEST)
		r->status = 400;
}

static const httpd_body_reader body_reader = { body_data, body_end, body_error };

/* ---- response: sandbox -> client ---- */

static void client_drained(httpd_exchange *ex, void *ud)
{
	rt_req *r = ud;
	if (r->resp_paused && r->up && httpd_exchange_pending(ex) < RT_UP_LOW_WATER) {
		r->resp_paused = false;
		rt_upconn_read_resume(r->up);
	}
}

static void to_client(rt_req *r, const char *data, size_t len)
{
	if (!r->ex || !len)
		return;
	r->bytes_out += len;
	if (httpd_exchange_write(r->ex, data, len, client_drained, r) < 0) {
		fail_request(r, 502, "");
		return;
	}
	if (r->up && !r->resp_paused && httpd_exchange_pending(r->ex) > RT_UP_HIGH_WATER) {
		r->resp_paused = true;
		rt_upconn_read_pause(r->up);
	}
}

static void add_header(const char *name, const char *value, void *ud)
{
	httpd_response_add_header(ud, name, value);
}

static bool same_token(const char *a, const char *b)
{
	return a && b && strcasecmp(a, b) == 0;
}

static const char *up_header(const rt_up_head *h, const char *name)
{
	for (size_t i = 0; i < h->nheaders; i++)
		if (strcasecmp(h->headers[i].name, name) == 0)
			return h->headers[i].value;
	return NULL;
}

static int up_head(rt_upconn *c, const rt_up_head *h, void *ud)
{
	rt_req *r = ud;
	if (!r->ex)
		return -1;
	uv_timer_stop(&r->phase);
	httpd_response *res = httpd_exchange_response(r->ex);
	if (h->status == 101) {
		/* only for an upgrade asked for, to the protocol asked for (docs/upstream.md#upgrades) */
		if (!r->upgrade || !h->upgrade ||
		    !same_token(up_header(h, "Upgrade"), rt_head_get(&r->head, "Upgrade"))) {
			fail_upstream(r, "other");
			return -1;
		}
		rt_headers_response(h->headers, h->nheaders, true, add_header, res);
		uv_timer_stop(&r->deadline);
		r->tunnel = true;
		r->status = 101;
		r->head_sent = true;
		if (httpd_exchange_upgrade(r->ex, &body_reader, r) < 0) {
			fail_request(r, 502, "");
			return -1;
		}
		return 0;
	}
	if (httpd_response_set_status(res, h->status) < 0) {
		fail_upstream(r, "other");
		return -1;
	}
	rt_headers_response(h->headers, h->nheaders, false, add_header, res);
	int64_t cl;
	if (h->status == 204 || h->status == 304)
		cl = 0;
	else if (r->head_req)
		cl = h->content_length >= 0 ? h->content_length : -1;
	else
		cl = h->chunked ? -1 : h->content_length;
	r->keep_alive = h->keep_alive;
	r->status = h->status;
	r->head_sent = true;
	if (httpd_exchange_send_head(r->ex, cl) < 0) {
		fail_request(r, 502, "");
		return -1;
	}
	return 0;
}

static void up_body(rt_upconn *c, const char *data, size_t len, void *ud)
{
	to_client(ud, data, len);
}

static void up_complete(rt_upconn *c, void *ud)
{
	rt_req *r = ud;
	uv_timer_stop(&r->deadline);
	/* reusable when the sandbox read the whole request and keeps alive */
	bool whole = !r->framing.has_body || r->body_done;
	rt_upconn_release(c, whole && r->keep_alive);
	r->up = NULL;
	if (r->ex && !r->done) {
		r->done = true;
		httpd_exchange_finish(r->ex);
	}
}

static void up_tunnel(rt_upconn *c, const char *data, size_t len, void *ud)
{
	to_client(ud, data, len);
}

static void up_error(rt_upconn *c, int uverr, const char *reason, void *ud)
{
	rt_req *r = ud;
	r->up = NULL;  /* the connection closes itself */
	if (r->tunnel) {
		/* the sandbox ended the tunnel: close after what is queued */
		if (r->ex && !r->done) {
			r->done = true;
			httpd_exchange_finish(r->ex);
		}
		return;
	}
	if (!r->head_sent && rt_upconn_was_idle(c) && !rt_upconn_got_bytes(c) &&
	    r->body_bytes == 0 && !r->body_done && r->ex) {
		/* a pooled connection the sandbox had closed: once more, fresh */
		if (r->body_started && !r->body_paused) {
			r->body_paused = true;
			httpd_exchange_read_pause(r->ex);
		}
		start_attempt(r);
		return;
	}
	fail_upstream(r, strcmp(reason, "eof") == 0 ? "eof" : "other");
}

static void up_drain(rt_upconn *c, void *ud)
{
	rt_req *r = ud;
	if (r->body_paused && r->ex) {
		r->body_paused = false;
		httpd_exchange_read_resume(r->ex);
	}
}

static const rt_up_callbacks up_callbacks = {
	up_head, up_body, up_complete, up_tunnel, up_error, up_drain,
};

/* ---- timers ---- */

static void on_header_timeout(uv_timer_t *t)
{
	rt_req *r = t->data;
	if (!r->head_sent)
		fail_timeout(r);
}

static void hold_timeout(rt_req *r);

static void on_deadline(uv_timer_t *t)
{
	rt_req *r = t->data;
	if (r->tunnel)
		return;
	if (r->holding)
		hold_timeout(r);
	else if (!r->head_sent)
		fail_timeout(r);
	else
		fail_request(r, 0, "");  /* cut mid-response */
}

/* ---- connecting, with retries ---- */

static void begin_exchange(rt_req *r)
{
	rt_outbound o = { .host = r->target.host, .port = r->target.port,
	                  .framing = r->framing, .upgrade = r->upgrade };
	rt_reject rej;
	r->out.len = 0;
	if (rt_headers_request(&r->head, &o, &r->out, &rej) < 0) {
		fail_reject(r, &rej);
		return;
	}
	rt_upconn_begin(r->up, &up_callbacks, r, r->head_req);
	if (rt_upconn_write(r->up, r->out.data, r->out.len, false) < 0) {
		fail_upstream(r, "other");
		return;
	}
	uv_timer_start(&r->phase, on_header_timeout,
	               (uint64_t)r->p->o.flags->response_header_timeout_ms, 0);
	if (r->upgrade || !r->framing.has_body)
		return;  /* an upgrade's bytes flow after the 101 */
	if (!r->body_started) {
		r->body_started = true;
		httpd_exchange_read_start(r->ex, &body_reader, r);
	} else if (r->body_paused && rt_upconn_queued(r->up) < RT_UP_HIGH_WATER) {
		r->body_paused = false;
		httpd_exchange_read_resume(r->ex);
	}
}

static void retry_timer(uv_timer_t *t)
{
	start_attempt(t->data);
}

static void attempt_failed(rt_req *r, int uverr)
{
	if (!r->ex || r->done)
		return;
	const rt_flags *f = r->p->o.flags;
	if (r->attempt < f->upstream_max_retries) {
		long d = f->retry_initial_delay_ms > 0 ? f->retry_initial_delay_ms : 200;
		long max = f->retry_max_delay_ms > 0 ? f->retry_max_delay_ms : 800;
		for (int i = 0; i < r->attempt && d < max; i++)
			d *= 2;
		if (d > max)
			d = max;
		r->attempt++;
		rt_metrics_retry(r->p->o.metrics, ns_label(r));
		uv_timer_start(&r->phase, retry_timer, (uint64_t)d, 0);
		return;
	}
	if (r->p->o.log)
		asb_log(r->p->o.log, ASB_LOG_DEBUG, "upstream connect failed", "sandbox", r->route.id,
		        "namespace", r->route.ns, "target", r->target.host, "error", uv_strerror(uverr),
		        NULL);
	fail_upstream(r, "dial");
}

static void on_connected(rt_upconn *c, int status, void *ud)
{
	rt_req *r = ud;
	r->up = c;
	if (status < 0) {
		r->up = NULL;
		attempt_failed(r, status);
	} else if (!r->ex || r->done) {
		rt_upconn_release(c, false);
		r->up = NULL;
	} else {
		begin_exchange(r);
	}
	req_unref(r);
}

static void dial(rt_req *r, const struct sockaddr *addr)
{
	rt_upconn *c = rt_pool_take(r->pool, r->key);
	if (c) {
		r->up = c;
		begin_exchange(r);
		return;
	}
	r->refs++;  /* held until on_connected */
	int rc = rt_upconn_connect(r->pool, r->key, addr, r->p->o.flags->connect_timeout_ms,
	                           on_connected, r, &c);
	if (rc < 0) {
		r->refs--;
		attempt_failed(r, rc);
		return;
	}
	r->up = c;
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	rt_req *r = req->data;
	if (status == 0 && res && r->ex && !r->done) {
		memcpy(&r->addr, res->ai_addr, res->ai_addrlen);
		if (r->addr.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&r->addr)->sin6_port = htons((uint16_t)r->target.port);
		else
			((struct sockaddr_in *)&r->addr)->sin_port = htons((uint16_t)r->target.port);
		dial(r, (struct sockaddr *)&r->addr);
	} else if (r->ex && !r->done) {
		attempt_failed(r, status ? status : UV_EAI_NONAME);
	}
	uv_freeaddrinfo(res);
	req_unref(r);
}

/* ---- idle Sandboxes: activity and resume on request ---- */

/* The hold ends: how, in the histogram; off the loop's list and count. */
static void hold_end(rt_req *r, const char *result)
{
	if (!r->holding)
		return;
	r->holding = false;
	if (r->held_prev)
		r->held_prev->held_next = r->held_next;
	else if (r->loop_index < MAX_LOOPS && r->l->held[r->loop_index] == r)
		r->l->held[r->loop_index] = r->held_next;
	if (r->held_next)
		r->held_next->held_prev = r->held_prev;
	r->held_prev = r->held_next = NULL;
	atomic_fetch_sub(&r->p->nheld, 1);
	rt_metrics_resume_hold(r->p->o.metrics, result,
	                       (double)(now_ns() - r->hold_start_ns) / 1e9);
}

static void hold_timeout(rt_req *r)
{
	hold_end(r, "timeout");
	char d[200];
	snprintf(d, sizeof(d), "Sandbox %s/%s is resuming; retry later.", r->route.ns, r->route.id);
	if (r->p->o.log)
		asb_log(r->p->o.log, ASB_LOG_DEBUG, "request held past its bound while the sandbox "
		        "resumed", "sandbox", r->route.id, "namespace", r->route.ns, NULL);
	fail_request(r, 504, d);
}

/* Whether the client of a held request has gone: it closed (FIN: the
 * socket in CLOSE_WAIT) or reset the connection (CLOSE). The socket is
 * not read while a request with a body is held (its body must wait for
 * the sandbox), so the server sees no EOF: the kernel's state is asked. */
static bool client_gone(rt_req *r)
{
	int fd = httpd_exchange_fd(r->ex);
	struct tcp_info ti;
	socklen_t n = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &n) < 0)
		return false;
	return ti.tcpi_state == TCP_CLOSE_WAIT || ti.tcpi_state == TCP_CLOSE;
}

/* The client of a held request went: the exchange ends (499), nothing of
 * it ever reaches the sandbox. */
static void hold_gone(rt_req *r)
{
	hold_end(r, "gone");
	if (r->p->o.log)
		asb_log(r->p->o.log, ASB_LOG_DEBUG, "client gone while its request was held",
		        "sandbox", r->route.id, "namespace", r->route.ns, NULL);
	uv_timer_stop(&r->phase);
	uv_timer_stop(&r->deadline);
	r->done = true;
	httpd_exchange_abort(r->ex);
}

static void hold_poll(uv_timer_t *t)
{
	rt_req *r = t->data;
	if (r->holding && r->ex && !r->done && client_gone(r)) {
		hold_gone(r);
		return;
	}
	start_attempt(r);
}

/* Starts holding `r`: false (answered 503) when the router drains or
 * --resume-max-held requests are held already. */
static bool hold_begin(rt_req *r, uv_loop_t *loop)
{
	rt_proxy *p = r->p;
	unsigned i = r->loop_index;
	if (i >= MAX_LOOPS || r->l->draining[i]) {
		fail_request(r, 503, HOLD_DRAIN_DETAIL);
		return false;
	}
	if (atomic_fetch_add(&p->nheld, 1) >= p->o.flags->resume_max_held) {
		atomic_fetch_sub(&p->nheld, 1);
		if (p->o.log)
			asb_log(p->o.log, ASB_LOG_DEBUG, "too many requests held; refused", "sandbox",
			        r->route.id, "namespace", r->route.ns, NULL);
		fail_request(r, 503, HOLD_FULL_DETAIL);
		return false;
	}
	r->holding = true;
	r->hold_start_ns = now_ns();
	r->hold_until_ms = uv_now(loop) + (uint64_t)r->hold_limit_ms;
	r->held_prev = NULL;
	r->held_next = r->l->held[i];
	if (r->held_next)
		r->held_next->held_prev = r;
	r->l->held[i] = r;
	if (p->o.log)
		asb_log(p->o.log, ASB_LOG_DEBUG, "holding a request until its sandbox is ready",
		        "sandbox", r->route.id, "namespace", r->route.ns, NULL);
	return true;
}

/* Whether the request must wait for its Sandbox's pod to be Ready (asking
 * for the resume when it is still suspended); false: go on with the
 * target. Only Sandboxes whose idle policy is Suspend wait: suspended
 * (resumed here), or running without a Ready pod (starting, resuming). */
static bool hold(rt_req *r)
{
	const rt_target *t = &r->target;
	if (!t->cached || !(t->idle.resumable || (t->idle.wakes && !t->pod_ready))) {
		/* nothing to wait for, or ready (or no longer to be): as usual */
		hold_end(r, t->cached && t->pod_ready ? "ready" : "other");
		return false;
	}
	rt_proxy *p = r->p;
	uv_loop_t *loop = httpd_exchange_loop(r->ex);
	if (!r->holding && !hold_begin(r, loop))
		return true;
	if (uv_now(loop) >= r->hold_until_ms) {
		hold_timeout(r);
		return true;
	}
	/* single flight: joins the patch in progress, or sends none while the
	 * cache catches up with one; a failed one is sent again after a while */
	if (t->idle.resumable)
		rt_resumeq_request(rt_idlesync_resumes(p->o.idle), r->route.ns, r->route.id, NULL);
	uv_timer_start(&r->phase, hold_poll, RESUME_POLL_MS, 0);
	return true;
}

/* Counts this exchange as its Sandbox's activity until it ends. */
static void track(rt_req *r)
{
	if (r->tracked || !r->target.cached || !r->target.idle.applies ||
	    r->target.idle.timeout_ms <= 0)
		return;
	r->tracked = rt_activity_begin(rt_idlesync_activity(r->p->o.idle), r->route.ns,
	                               r->route.id, r->target.idle.timeout_ms, k8s_now_ms()) == 0;
}

static void start_attempt(rt_req *r)
{
	if (!r->ex || r->done)
		return;
	rt_reject rej;
	rt_proxy *p = r->p;
	if (rt_resolve(&r->route, p->has_view ? &p->view : NULL, p->o.flags->cluster_domain,
	               p->o.flags->allow_loopback_pod_ip, &r->target, &rej) < 0) {
		hold_end(r, "other");
		fail_reject(r, &rej);
		return;
	}
	if (p->o.idle) {
		if (hold(r))
			return;
		track(r);
	}
	/* "host:port", the pool's key (no printf: every request) */
	size_t hl = strnlen(r->target.host, sizeof(r->target.host) - 1);
	memcpy(r->key, r->target.host, hl);
	r->key[hl] = ':';
	r->key[hl + 1 + asb_format_int(r->key + hl + 1, r->target.port)] = '\0';
	if (r->target.is_ip) {
		memset(&r->addr, 0, sizeof(r->addr));
		if (r->target.ip.family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&r->addr;
			a->sin_family = AF_INET;
			a->sin_port = htons((uint16_t)r->target.port);
			memcpy(&a->sin_addr, r->target.ip.addr, 4);
		} else {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&r->addr;
			a->sin6_family = AF_INET6;
			a->sin6_port = htons((uint16_t)r->target.port);
			memcpy(&a->sin6_addr, r->target.ip.addr, 16);
		}
		dial(r, (struct sockaddr *)&r->addr);
		return;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	r->gai.data = r;
	r->refs++;
	int rc = uv_getaddrinfo(httpd_exchange_loop(r->ex), &r->gai, on_resolved,
	                        r->target.host, NULL, &hints);
	if (rc < 0) {
		r->refs--;
		attempt_failed(r, rc);
	}
}

/* ---- authorization ---- */

static void proceed(rt_req *r, rt_verdict v, const char *detail)
{
	rt_proxy *p = r->p;
	if (v == RT_VERDICT_ALLOW && r->route.has_pod_ip &&
	    !rt_authz_pod_ip_allowed(p->o.authz, p->has_view &&
	                             p->view.authoritative(p->view.ud, r->route.ns))) {
		if (p->o.log)
			asb_log(p->o.log, ASB_LOG_DEBUG, "X-Sandbox-Pod-IP refused: no cache binds it to "
			        "the authorized sandbox", "sandbox", r->route.id, "namespace", r->route.ns,
			        NULL);
		v = RT_VERDICT_FORBIDDEN;
	}
	if (r->loop_index < MAX_LOOPS)
		rt_metrics_authz_memo(p->o.metrics, &r->l->memos[r->loop_index], ns_label(r),
		                      v == RT_VERDICT_ALLOW);
	else
		rt_metrics_authz(p->o.metrics, ns_label(r), v == RT_VERDICT_ALLOW);
	switch (v) {
	case RT_VERDICT_ALLOW:
		start_attempt(r);
		break;
	case RT_VERDICT_UNAUTHENTICATED:
		fail_request(r, 401, "unauthenticated");
		break;
	case RT_VERDICT_FORBIDDEN:
		fail_request(r, 403, "forbidden");
		break;
	default:
		fail_request(r, 500, detail);
	}
}

static void review_on_loop(void *ud)
{
	rt_req *r = ud;
	if (r->ex && !r->done)
		proceed(r, r->verdict, r->detail);
	req_unref(r);
}

/* On a review thread: back to the request's loop. When that loop has
 * ended, nothing else holds the request any more: let it go here. */
static void review_done(rt_verdict v, const char *detail, void *ud)
{
	rt_req *r = ud;
	r->verdict = v;
	snprintf(r->detail, sizeof(r->detail), "%s", detail ? detail : "");
	int rc = httpd_server_call(r->l->srv, r->loop_index, review_on_loop, r);
	if (rc == ASB_ESHUTDOWN || rc == ASB_EINVAL)
		req_unref(r);
	/* ASB_ENOMEM: the request is leaked rather than freed under its loop */
}

static void submit_review(rt_req *r, const char *auth)
{
	rt_proxy *p = r->p;
	r->authorization = strdup(auth ? auth : "");
	r->refs++;  /* held until review_on_loop */
	int rc = r->authorization && p->o.reviews
	                 ? rt_reviewq_submit(p->o.reviews, r->authorization, r->route.ns,
	                                     r->route.id, r->peer, &r->gone, review_done, r)
	                 : ASB_ENOMEM;
	if (rc == 0)
		return;
	r->refs--;
	rt_metrics_authz(p->o.metrics, ns_label(r), false);
	if (rc == ASB_ETOOMANYREQUESTS)
		fail_request(r, 429, "Too many token reviews pending for this client.");
	else if (rc == ASB_ESERVICEUNAVAILABLE)
		fail_request(r, 503, "Too many token reviews pending.");
	else
		fail_request(r, 500, "tokenreview: cannot queue the review");
}

/* ---- life cycle ---- */

static void free_req(rt_req *r)
{
	free(r->hs);
	free(r->target_s);
	free(r->authorization);
	asb_strbuf_free(&r->out);
	free(r);
}

static void req_unref(rt_req *r)
{
	if (--r->refs == 0)
		free_req(r);
}

static void timer_closed(uv_handle_t *h)
{
	req_unref(h->data);
}

static void on_close(httpd_exchange *ex, int reason, void *ud)
{
	rt_req *r = ud;
	rt_proxy *p = r->p;
	if (r->up) {
		rt_upconn_release(r->up, false);
		r->up = NULL;
	}
	int status = r->status ? r->status : 499;  /* 499: the client went first */
	hold_end(r, r->status ? "other" : "gone");
	if (r->tracked)
		rt_activity_end(rt_idlesync_activity(p->o.idle), r->route.ns, r->route.id,
		                k8s_now_ms());
	double secs = (double)(now_ns() - r->start_ns) / 1e9;
	if (r->head.path && strcmp(r->head.path, "/healthz") != 0) {
		if (r->loop_index < MAX_LOOPS)
			rt_metrics_request_memo(p->o.metrics, &r->l->memos[r->loop_index], r->head.method,
			                        status, ns_label(r), secs);
		else
			rt_metrics_request(p->o.metrics, r->head.method, status, ns_label(r), secs);
	}
	rt_metrics_inflight(p->o.metrics, -1);
	if (p->o.access_log && r->head.path && !rt_access_skip(r->head.path)) {
		rt_access_entry e = {
			.method = r->head.method, .path = r->head.path, .client_ip = r->peer,
			.sandbox_id = rt_head_get(&r->head, "X-Sandbox-ID"),
			.sandbox_namespace = rt_head_get(&r->head, "X-Sandbox-Namespace"),
			.user_agent = rt_head_get(&r->head, "User-Agent"),
			.status = status, .duration_ms = secs * 1000, .bytes_out = r->bytes_out,
		};
		rt_access_log(p->o.access_log, &e);
	}
	r->ex = NULL;
	atomic_store(&r->gone, true);
	r->head.headers = NULL;  /* the strings go with the exchange */
	r->head.nheaders = 0;
	r->head.path = r->head.method = r->head.target = NULL;
	uv_close((uv_handle_t *)&r->phase, timer_closed);
	uv_close((uv_handle_t *)&r->deadline, timer_closed);
	req_unref(r);
}

/* X-Sandbox-Timeout in ms when it is a positive number of seconds
 * (fraction allowed; the Python router's header), else -1. Huge values
 * come back as LONG_MAX. */
static long header_timeout(const rt_head *h)
{
	const char *v = rt_head_get(h, "X-Sandbox-Timeout");
	if (!v || !*v)
		return -1;
	char *end;
	double s = strtod(v, &end);
	if (end == v || *end || !isfinite(s) || s <= 0)
		return -1;
	if (s * 1000 >= (double)(LONG_MAX / 2))
		return LONG_MAX;
	long ms = (long)ceil(s * 1000);
	return ms > 0 ? ms : 1;
}

/* The proxy timeout of this request: --proxy-timeout, or a smaller
 * X-Sandbox-Timeout. */
static long request_timeout(const rt_head *h, long max_ms)
{
	long t = header_timeout(h);
	return t > 0 && t < max_ms ? t : max_ms;
}

/* How long this request may be held while its Sandbox resumes:
 * X-Sandbox-Timeout when given, else --resume-timeout; never past
 * --proxy-timeout, upgrades included. */
static long hold_limit(const rt_head *h, const rt_flags *f)
{
	long t = header_timeout(h);
	long limit = t > 0 ? t : f->resume_timeout_ms;
	return limit < f->proxy_timeout_ms ? limit : f->proxy_timeout_ms;
}

static void healthz(httpd_exchange *ex)
{
	static const char ok[] = "{\"status\":\"ok\"}";
	httpd_exchange_respond(ex, 200, "application/json", ok, sizeof(ok) - 1);
}

/* Builds the rt_head view of the exchange's request. -1: out of memory. */
static int load_head(rt_req *r, httpd_exchange *ex)
{
	const httpd_request *req = httpd_exchange_request(ex);
	size_t n = httpd_request_header_count(req);
	r->hs = calloc(n ? n : 1, sizeof(*r->hs));
	if (!r->hs)
		return -1;
	for (size_t i = 0; i < n; i++)
		httpd_request_header_at(req, i, &r->hs[i].name, &r->hs[i].value);
	httpd_exchange_peer(ex, r->peer, sizeof(r->peer), NULL);
	/* the target as received: path, and the query when there is one */
	const char *path = httpd_request_path(req), *query = httpd_request_query(req);
	size_t pl = strlen(path), ql = strlen(query);
	r->target_s = malloc(pl + ql + 2);
	if (!r->target_s)
		return -1;
	memcpy(r->target_s, path, pl);
	if (ql) {
		r->target_s[pl] = '?';
		memcpy(r->target_s + pl + 1, query, ql + 1);
	} else {
		r->target_s[pl] = '\0';
	}
	r->head = (rt_head){
		.method = httpd_request_method(req), .target = r->target_s, .path = path,
		.headers = r->hs, .nheaders = n, .peer_ip = r->peer,
		.tls = httpd_exchange_is_tls(ex),
	};
	return 0;
}

static void handle(httpd_exchange *ex, void *ud)
{
	rt_listener *l = ud;
	rt_proxy *p = l->proxy;
	const httpd_request *req = httpd_exchange_request(ex);
	if (strcmp(httpd_request_path(req), "/healthz") == 0) {
		healthz(ex);  /* fast path: never proxied, any method */
		return;
	}
	rt_req *r = calloc(1, sizeof(*r));
	if (!r) {
		httpd_exchange_abort(ex);
		return;
	}
	r->l = l;
	r->p = p;
	r->ex = ex;
	r->refs = 3;  /* the exchange, and the two timers until closed */
	r->start_ns = now_ns();
	r->loop_index = httpd_exchange_loop_index(ex);
	atomic_init(&r->gone, false);
	uv_timer_init(httpd_exchange_loop(ex), &r->phase);
	uv_timer_init(httpd_exchange_loop(ex), &r->deadline);
	r->phase.data = r->deadline.data = r;
	rt_metrics_inflight(p->o.metrics, 1);
	httpd_exchange_on_close(ex, on_close, r);
	r->pool = loop_pool(l, ex);
	if (!r->pool || load_head(r, ex) < 0) {
		fail_request(r, 500, "Out of memory.");
		return;
	}
	rt_reject rej;
	if (rt_contract_target(&r->head, &rej) < 0 ||
	    rt_contract_loop(&r->head, &rej) < 0 ||
	    rt_contract_framing(&r->head, &rej) < 0 ||
	    rt_contract_route(&r->head, p->o.flags->allow_loopback_pod_ip, &r->route, &rej) < 0) {
		fail_reject(r, &rej);
		return;
	}
	r->routed = true;
	r->upgrade = httpd_exchange_wants_upgrade(ex) && strcmp(r->head.method, "CONNECT") != 0;
	r->head_req = strcmp(r->head.method, "HEAD") == 0;
	/* a client that closes its side once its request is in has gone (Go's
	 * server cancels the request then): end the exchange, and with it the
	 * upstream connection, so the sandbox stops what it was doing for it
	 * and a pending review is not sent. Tunnels pass half-closes on. */
	if (!r->upgrade)
		httpd_exchange_end_on_client_eof(ex);
	rt_headers_framing(&r->head, &r->framing);
	int64_t limit = p->o.flags->max_request_body_bytes;
	if (limit > 0 && r->framing.content_length > limit) {
		fail_request(r, 413, "Request body too large.");
		return;
	}
	/* body limit and timeouts are the router's own (JSON answers) */
	httpd_exchange_set_max_body(ex, 0);
	r->deadline_ms = request_timeout(&r->head, p->o.flags->proxy_timeout_ms);
	r->hold_limit_ms = hold_limit(&r->head, p->o.flags);
	if (r->upgrade) {
		httpd_exchange_set_timeout(ex, 0);
	} else {
		httpd_exchange_set_timeout(ex, r->deadline_ms + 5000);  /* a backstop */
		uv_timer_start(&r->deadline, on_deadline, (uint64_t)r->deadline_ms, 0);
	}
	bool overrides = r->route.has_pod_ip || r->route.has_uid;
	const char *auth = rt_head_get(&r->head, "Authorization");
	rt_verdict v = rt_authz_check(p->o.authz, auth, r->route.ns, r->route.id, overrides,
	                              k8s_now_ms() / 1000, r->detail, sizeof(r->detail));
	if (v != RT_VERDICT_PENDING) {
		proceed(r, v, r->detail);
		return;
	}
	submit_review(r, auth);
}

/* ---- setup and shutdown ---- */

int rt_proxy_new(rt_proxy **out, const rt_proxy_options *o)
{
	rt_proxy *p = calloc(1, sizeof(*p));
	if (!p)
		return ASB_ENOMEM;
	p->o = *o;
	if (o->cache) {
		rt_cache_view_init(o->cache, &p->view);
		p->has_view = true;
	}
	*out = p;
	return 0;
}

int rt_proxy_attach(rt_proxy *p, httpd_server *s)
{
	rt_listener *l = calloc(1, sizeof(*l));
	if (!l)
		return ASB_ENOMEM;
	l->proxy = p;
	l->srv = s;
	int rc = httpd_server_route_stream(s, NULL, "/*", handle, l);
	if (rc < 0) {
		free(l);
		return rc;
	}
	l->next = p->listeners;
	p->listeners = l;
	return 0;
}

typedef struct {
	rt_listener *l;
	unsigned i;
} drain_arg;

static void drain_loop(void *ud)
{
	drain_arg *a = ud;
	a->l->draining[a->i] = true;
	/* held requests reached no sandbox: answered now (safe to retry)
	 * rather than cut at the shutdown deadline */
	while (a->l->held[a->i]) {
		rt_req *r = a->l->held[a->i];
		hold_end(r, "drain");
		fail_request(r, 503, HOLD_DRAIN_DETAIL);
	}
	if (a->l->pools[a->i])
		rt_pool_close(a->l->pools[a->i]);
	free(a);
}

void rt_proxy_drain(rt_proxy *p)
{
	for (rt_listener *l = p->listeners; l; l = l->next) {
		unsigned n = httpd_server_loops(l->srv);
		for (unsigned i = 0; i < n && i < MAX_LOOPS; i++) {
			drain_arg *a = malloc(sizeof(*a));
			if (!a)
				continue;
			*a = (drain_arg){ l, i };
			if (httpd_server_call(l->srv, i, drain_loop, a) < 0)
				free(a);
		}
	}
}

void rt_proxy_free(rt_proxy *p)
{
	if (!p)
		return;
	while (p->listeners) {
		rt_listener *l = p->listeners;
		p->listeners = l->next;
		for (int i = 0; i < MAX_LOOPS; i++)
			rt_pool_free(l->pools[i]);
		free(l);
	}
	free(p);
}
