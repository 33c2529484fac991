/*
 * upstream.h - the router's HTTP/1.1 client towards sandboxes, on libuv:
 * TCP connections (rt_upconn) that send a request head and body and parse
 * the response with httpd/parser.h in response mode, and a keep-alive
 * pool (rt_pool) per loop thread keyed by "host:port".
 *
 * - A connection carries one exchange at a time. The caller writes the
 *   head and the body (copied; chunk framing on request) and reads the
 *   response through callbacks: head (status, fields, framing), body
 *   pieces, completion, or an error. Interim 1xx responses other than 101
 *   are skipped. After a 101 the connection is a raw tunnel.
 * - Backpressure: rt_upconn_queued() tells the bytes not yet written to the
 *   socket (on_drain runs when they fall under RT_UP_LOW_WATER); reading
 *   the response can be paused and resumed.
 * - Released connections whose response ended cleanly and may be kept
 *   alive go idle in the pool (at most max_idle per host; closed after the
 *   idle timeout or when the sandbox closes them); others are closed.
 *
 * Threads: a pool and its connections belong to one loop thread; every
 * function is called on it. Memory: one 64 KiB read buffer per pool;
 * queued writes are the caller's bytes in flight.
 */
#ifndef RT_UPSTREAM_H
#define RT_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include "contract.h"
#include "metrics.h"

/** Queued bytes under which on_drain runs. */
#define RT_UP_LOW_WATER (64 * 1024)
/** Queued bytes above which callers should stop feeding a connection. */
#define RT_UP_HIGH_WATER (256 * 1024)

typedef struct rt_pool rt_pool;
typedef struct rt_upconn rt_upconn;

/** The response head as parsed. */
typedef struct {
	int status;
	const rt_header *headers;  /**< valid during the callback */
	size_t nheaders;
	int64_t content_length;    /**< -1 when not given */
	bool chunked;
	bool keep_alive;           /**< the sandbox keeps the connection open */
	bool upgrade;              /**< a 101 with Connection: upgrade and Upgrade */
} rt_up_head;

/** Events of one exchange; called on the loop, never inside rt_upconn_* calls
 *  other than rt_upconn_begin(). Every callback may release the connection. */
typedef struct {
	/** Response head; return 0 to go on, -1 to stop (the caller releases). */
	int (*on_head)(rt_upconn *c, const rt_up_head *h, void *ud);
	/** A piece of the response body (de-chunked). */
	void (*on_body)(rt_upconn *c, const char *data, size_t len, void *ud);
	/** The response ended; the connection may be released for reuse. */
	void (*on_complete)(rt_upconn *c, void *ud);
	/** Raw bytes after a 101 (tunnel). */
	void (*on_tunnel)(rt_upconn *c, const char *data, size_t len, void *ud);
	/** The connection failed or closed early: "eof" (closed before the
	 *  response ended; in a tunnel: the sandbox finished), "other" (bad
	 *  response), or a libuv error name. */
	void (*on_error)(rt_upconn *c, int uverr, const char *reason, void *ud);
	/** Queued writes fell under RT_UP_LOW_WATER. */
	void (*on_drain)(rt_upconn *c, void *ud);
} rt_up_callbacks;

/** A pool for `loop` (borrowed). `m` (may be NULL) receives the
 *  connection gauges. Returns NULL when out of memory. */
rt_pool *rt_pool_new(uv_loop_t *loop, int max_idle_per_host, long idle_timeout_ms,
                     rt_metrics *m);

/**
 * Closes every idle connection and makes the pool close, rather than
 * keep, connections released from now on. Call on the pool's loop (e.g.
 * through httpd_server_call()) before the loop must end: idle
 * connections are open handles that would keep it running.
 */
void rt_pool_close(rt_pool *p);

/** Connections of the pool not yet freed (idle, active or closing). */
size_t rt_pool_connections(const rt_pool *p);

/** Frees a pool whose connections are all gone (its loop has ended); NULL accepted. */
void rt_pool_free(rt_pool *p);

/** Connected idle connection for `key`, or NULL (the newest is reused). */
rt_upconn *rt_pool_take(rt_pool *p, const char *key);

/**
 * Opens a connection to `addr` for pool key `key`; `cb(c, status, ud)`
 * runs on the loop with status 0 once connected, or a libuv error
 * (UV_ETIMEDOUT after `timeout_ms`, UV_ECONNREFUSED, ...) after which the
 * connection is gone. Returns 0, or a libuv error (no callback then).
 */
int rt_upconn_connect(rt_pool *p, const char *key, const struct sockaddr *addr, long timeout_ms,
                      void (*cb)(rt_upconn *c, int status, void *ud), void *ud,
                      rt_upconn **out);

/** Cancels a connect in progress: its callback runs with UV_ECANCELED. */
void rt_upconn_cancel(rt_upconn *c);

/**
 * Starts an exchange on a connected connection: parser reset, reading on.
 * `head_request`: the request is HEAD (the response has no body whatever
 * its Content-Length says).
 */
void rt_upconn_begin(rt_upconn *c, const rt_up_callbacks *cb, void *ud, bool head_request);

/**
 * Sends `len` bytes, in a chunk when `chunk`: what the socket takes at once
 * is written now, the rest copied and queued. 0, or a libuv error
 * (UV_ENOTCONN when not active, UV_ENOMEM): after an error part of the bytes
 * may be out, so the caller releases the connection without reuse.
 */
int rt_upconn_write(rt_upconn *c, const void *data, size_t len, bool chunk);

/** Queues the last chunk of a chunked request body. */
int rt_upconn_write_last_chunk(rt_upconn *c);

/** Bytes queued and not yet written. */
size_t rt_upconn_queued(const rt_upconn *c);

/** Stops / restarts delivering the response (or tunnel) bytes. */
void rt_upconn_read_pause(rt_upconn *c);
void rt_upconn_read_resume(rt_upconn *c);

/** Half-closes the sending side after the queued bytes (a tunnel whose client finished). */
void rt_upconn_shutdown_write(rt_upconn *c);

/** True when the connection came from the pool (it may have been closed
 *  by the sandbox meanwhile: a stale connection). */
bool rt_upconn_was_idle(const rt_upconn *c);

/** True once a byte of the response was received. */
bool rt_upconn_got_bytes(const rt_upconn *c);

/**
 * Ends the caller's use: with `reuse` (the response completed, the request
 * was sent whole, both sides keep alive) the connection goes idle in the
 * pool, else it is closed. No callback runs afterwards.
 */
void rt_upconn_release(rt_upconn *c, bool reuse);

#endif
