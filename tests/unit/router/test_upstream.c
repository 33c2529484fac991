/*
 * test_upstream.c - unit tests of cmd/router/upstream.c's keep-alive pool on
 * a real loopback socket: a connection released into the pool notices the
 * sandbox closing it, also when the response ended while the caller had
 * paused reading (back-pressure from a slow client at the response's last
 * bytes); otherwise the next request would take a dead connection and,
 * with its body already sent, fail with 502. Likewise bytes the sandbox
 * writes unasked on an idle connection end it, rather than waiting to be
 * read as the response to whoever reuses it.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>
#include "upstream.h"

/* The sandbox: answers one request on each accepted connection with a
 * 5-byte body and keeps the connection until told to close it. */
typedef struct {
	uv_loop_t loop;
	uv_tcp_t listener;
	uv_tcp_t peer;
	bool accepted, peer_closed;
	char req[4096];
	size_t req_len;
	uv_write_t w;
	int port;
	/* the client side */
	rt_pool *pool;
	rt_upconn *conn;
	bool pause_on_body, completed, failed;
	size_t body;
} world;

static const char RESPONSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

static void alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
	world *w = h->data;
	buf->base = w->req + w->req_len;
	buf->len = sizeof(w->req) - 1 - w->req_len;
}

static void peer_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	world *w = s->data;
	if (n <= 0)
		return;
	w->req_len += (size_t)n;
	w->req[w->req_len] = '\0';
	if (strstr(w->req, "\r\n\r\n")) {
		uv_buf_t b = uv_buf_init((char *)RESPONSE, sizeof(RESPONSE) - 1);
		ck_assert_int_eq(uv_write(&w->w, s, &b, 1, NULL), 0);
	}
}

static void on_accept(uv_stream_t *server, int status)
{
	world *w = server->data;
	ck_assert_int_eq(status, 0);
	ck_assert(!w->accepted);
	uv_tcp_init(&w->loop, &w->peer);
	w->peer.data = w;
	ck_assert_int_eq(uv_accept(server, (uv_stream_t *)&w->peer), 0);
	w->accepted = true;
	uv_read_start((uv_stream_t *)&w->peer, alloc_cb, peer_read);
}

static int on_head(rt_upconn *c, const rt_up_head *h, void *ud)
{
	ck_assert_int_eq(h->status, 200);
	ck_assert(h->keep_alive);
	return 0;
}

static void on_body(rt_upconn *c, const char *data, size_t len, void *ud)
{
	world *w = ud;
	w->body += len;
	/* as the proxy does when the client's queue is above its high water */
	if (w->pause_on_body)
		rt_upconn_read_pause(c);
}

static void on_complete(rt_upconn *c, void *ud)
{
	world *w = ud;
	w->completed = true;
	rt_upconn_release(c, true);
	w->conn = NULL;
}

static void on_error(rt_upconn *c, int uverr, const char *reason, void *ud)
{
	world *w = ud;
	w->failed = true;
	w->conn = NULL;
}

static const rt_up_callbacks callbacks = { on_head, on_body, on_complete, NULL, on_error, NULL };

static void on_connected(rt_upconn *c, int status, void *ud)
{
	world *w = ud;
	ck_assert_int_eq(status, 0);
	w->conn = c;
	rt_upconn_begin(c, &callbacks, w, false);
	static const char req[] = "GET / HTTP/1.1\r\nHost: sb\r\n\r\n";
	ck_assert_int_eq(rt_upconn_write(c, req, sizeof(req) - 1, false), 0);
}

/* Runs the loop until done(w) or 5 s pass; returns done(w). */
static bool run_until(world *w, bool (*done)(const world *))
{
	uint64_t deadline = uv_now(&w->loop) + 5000;
	while (!done(w) && uv_now(&w->loop) < deadline) {
		uv_run(&w->loop, UV_RUN_NOWAIT);
		uv_sleep(1);
		uv_update_time(&w->loop);
	}
	return done(w);
}

static bool completed(const world *w) { return w->completed; }
static bool peer_gone(const world *w) { return w->peer_closed; }
static bool pool_empty(const world *w) { return rt_pool_connections(w->pool) == 0; }

static void peer_closed(uv_handle_t *h)
{
	((world *)h->data)->peer_closed = true;
}

static void setup(world *w)
{
	memset(w, 0, sizeof(*w));
	ck_assert_int_eq(uv_loop_init(&w->loop), 0);
	uv_tcp_init(&w->loop, &w->listener);
	w->listener.data = w;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	ck_assert_int_eq(uv_tcp_bind(&w->listener, (struct sockaddr *)&a, 0), 0);
	ck_assert_int_eq(uv_listen((uv_stream_t *)&w->listener, 8, on_accept), 0);
	int len = sizeof(a);
	uv_tcp_getsockname(&w->listener, (struct sockaddr *)&a, &len);
	w->port = ntohs(a.sin_port);
	w->pool = rt_pool_new(&w->loop, 4, 60000, NULL);
	ck_assert_ptr_nonnull(w->pool);
}

static void teardown(world *w)
{
	rt_pool_close(w->pool);
	uv_close((uv_handle_t *)&w->listener, NULL);
	if (w->accepted && !uv_is_closing((uv_handle_t *)&w->peer))
		uv_close((uv_handle_t *)&w->peer, NULL);
	uv_run(&w->loop, UV_RUN_DEFAULT);
	ck_assert_uint_eq(rt_pool_connections(w->pool), 0);
	rt_pool_free(w->pool);
	ck_assert_int_eq(uv_loop_close(&w->loop), 0);
}

/* What the sandbox does to the connection once it is idle in the pool. */
enum after { CLOSES, SENDS_UNASKED };

static const char UNASKED[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil";

/* One exchange, the response read with or without a pause at its end; then
 * the sandbox closes the now idle connection, or writes on it unasked (a
 * response queued for whoever reuses it): either way it leaves the pool. */
static void idle_connection_sees(bool pause_on_body, enum after after)
{
	world w;
	setup(&w);
	w.pause_on_body = pause_on_body;
	char key[64];
	snprintf(key, sizeof(key), "127.0.0.1:%d", w.port);
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", w.port, &a);
	rt_upconn *c = NULL;
	ck_assert_int_eq(rt_upconn_connect(w.pool, key, (struct sockaddr *)&a, 5000, on_connected,
	                                   &w, &c), 0);
	ck_assert(run_until(&w, completed));
	ck_assert(!w.failed);
	ck_assert_uint_eq(w.body, 5);
	ck_assert_uint_eq(rt_pool_connections(w.pool), 1);  /* kept, idle */

	w.peer.data = &w;
	if (after == CLOSES) {
		uv_close((uv_handle_t *)&w.peer, peer_closed);
		ck_assert(run_until(&w, peer_gone));
	} else {
		uv_buf_t b = uv_buf_init((char *)UNASKED, sizeof(UNASKED) - 1);
		ck_assert_int_eq(uv_write(&w.w, (uv_stream_t *)&w.peer, &b, 1, NULL), 0);
	}
	/* what the sandbox did reaches the pool's connection: it leaves the pool */
	run_until(&w, pool_empty);
	ck_assert_ptr_null(rt_pool_take(w.pool, key));
	ck_assert_uint_eq(rt_pool_connections(w.pool), 0);
	teardown(&w);
}

START_TEST(idle_connection_closed_by_the_sandbox_leaves_the_pool)
{
	idle_connection_sees(false, CLOSES);
}
END_TEST

START_TEST(idle_connection_released_while_paused_still_sees_the_close)
{
	idle_connection_sees(true, CLOSES);
}
END_TEST

/* A hostile sandbox queues a response before the next request: reused, the
 * connection would hand it to that request. */
START_TEST(idle_connection_the_sandbox_writes_on_leaves_the_pool)
{
	idle_connection_sees(false, SENDS_UNASKED);
	idle_connection_sees(true, SENDS_UNASKED);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("upstream");
	TCase *tc = tcase_create("pool");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, idle_connection_closed_by_the_sandbox_leaves_the_pool);
	tcase_add_test(tc, idle_connection_released_while_paused_still_sees_the_close);
	tcase_add_test(tc, idle_connection_the_sandbox_writes_on_leaves_the_pool);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
