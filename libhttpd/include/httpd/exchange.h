/*
 * httpd/exchange.h - streaming requests and responses on the HTTP server of
 * httpd/server.h: one request/response exchange whose body is read and
 * written piece by piece, answered asynchronously, or turned into a raw
 * byte tunnel by an Upgrade (RFC 9110 §7.8). The router and sandboxd
 * serve through it; the buffered API of httpd/server.h is unchanged.
 *
 * Life of an exchange:
 *   route matched, request head received -> handler (httpd_stream_fn)
 *   -> [read the body: read_start, on_data..., on_end] (may overlap with)
 *   -> [answer: send_head, write..., finish]  or abort, or the client goes,
 *      or its timeout or the shutdown deadline passes
 *   -> on_close(reason), exactly once, always later on the loop (never
 *      inside a call the handler makes) -> the pointer is invalid.
 *
 * Messages follow RFC 9112: the body is de-chunked before on_data; the
 * response has a Content-Length or is chunked (HTTP/1.1) or delimited by
 * the connection's close (HTTP/1.0); HEAD gets the head without body;
 * persistent connections go on with the next request after finish. The
 * server parses with http-parser, which rejects Content-Length together
 * with Transfer-Encoding and repeated Content-Length fields (request
 * smuggling, RFC 9112 §6.3): such requests get 400 before any handler.
 *
 * A client that half-closes (ends its sending side) after a whole request
 * still gets the answer, as RFC 9112 §9.6 allows; one that resets the
 * connection ends the exchange at once (ASB_ETRANSPORT). A client that
 * closes while the handler is silent is therefore noticed at the next
 * write (which fails) or at the exchange's timeout, unless the handler
 * asks for httpd_exchange_end_on_client_eof().
 *
 * Threads: every httpd_exchange_* function must be called on the
 * exchange's loop thread (the one its handler and callbacks run on; use
 * httpd_server_call() from other threads). Callbacks never run inside
 * a httpd_exchange_* call: they come from the loop afterwards, so a
 * handler may finish, abort or pause from inside any callback.
 *
 * Errors: functions return 0 or a negative ASB_E* code with the last
 * error message set (asb_error_last()). Calls on an exchange that has
 * already ended (client gone, aborted, timed out) return the code it
 * ended with (ASB_ETRANSPORT, ...), or ASB_EINVAL when it ended normally.
 */
#ifndef HTTPD_EXCHANGE_H
#define HTTPD_EXCHANGE_H

#include <uv.h>
#include "asb/common.h"
#include "httpd/server.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque exchange: one request and its response (or tunnel). */
typedef struct httpd_exchange httpd_exchange;

/**
 * Called on the connection's loop thread when the request HEAD is
 * complete (the body not read yet). The handler owns the exchange until
 * it calls httpd_exchange_finish() or _abort(), or its on_close runs.
 * It may return at once and answer later (async). While it has not
 * finished, no further request of that connection is read (pipelined
 * requests are answered in order).
 */
typedef void (*httpd_stream_fn)(httpd_exchange *ex, void *userdata);

/**
 * Adds a streaming route; call before httpd_server_start(). Matching
 * is that of httpd_server_route() and shares its table: an exact path
 * wins over prefixes, a longer prefix over a shorter one ("/" + "*"
 * catches every path), a GET route also answers HEAD (writes are then
 * dropped, done callbacks still run), unknown methods on a known path get
 * 405 with Allow.
 * @return 0; ASB_EINVAL (NULL path or fn, path not starting with '/',
 *         server already started); ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_server_route_stream(httpd_server *s, const char *method,
                                            const char *path, httpd_stream_fn fn,
                                            void *userdata);

/**
 * Runs `fn(ud)` on loop thread `loop_index` (0 .. loops-1; see
 * httpd_exchange_loop_index()) of a started server, soon, in the
 * order of the calls. Thread-safe: meant for other threads (a process
 * reader, a worker pool) that must touch an exchange. A call accepted
 * (0) always runs exactly once, at the latest when the loop ends during
 * shutdown, so `ud` can be freed there; the exchange it aims at may have
 * ended by then, which `fn` must find out from its own state (e.g. a flag
 * cleared by on_close).
 * @return 0; ASB_EINVAL (no such loop, server not started);
 *         ASB_ESHUTDOWN (the loop has ended); ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_server_call(httpd_server *s, unsigned int loop_index,
                                    void (*fn)(void *ud), void *ud);

/** Number of loop threads of a started server (options.loops, at least 1), else 0. */
HTTPD_EXTERN unsigned int httpd_server_loops(const httpd_server *s);

/* --- the request ------------------------------------------------------------ */

/**
 * The request head (method, path, query, headers); its body is always
 * "" here: read it with httpd_exchange_read_start(). Valid until
 * on_close returns.
 */
HTTPD_EXTERN const httpd_request *httpd_exchange_request(httpd_exchange *ex);

/** The server the exchange belongs to. */
HTTPD_EXTERN httpd_server *httpd_exchange_server(httpd_exchange *ex);

/**
 * The libuv loop the exchange runs on: start timers, TCP connects, pipes
 * and processes there, and close them by the time on_close returns (an
 * open handle keeps the loop, and the server's shutdown, waiting).
 */
HTTPD_EXTERN uv_loop_t *httpd_exchange_loop(httpd_exchange *ex);

/** Index of that loop, for httpd_server_call(). */
HTTPD_EXTERN unsigned int httpd_exchange_loop_index(httpd_exchange *ex);

/**
 * The client's address: `ip` receives the numeric address ("127.0.0.1",
 * "::1"; `cap` >= 46 always fits), `port` (may be NULL) its TCP port.
 * @return 0; ASB_EINVAL (NULL ip, cap too small).
 */
HTTPD_EXTERN int httpd_exchange_peer(httpd_exchange *ex, char *ip, size_t cap, int *port);

/** True when the connection is HTTPS. */
HTTPD_EXTERN bool httpd_exchange_is_tls(httpd_exchange *ex);

/**
 * The client connection's socket, for inspection only (getsockopt(2),
 * e.g. TCP_INFO to notice that the client closed while its request waits
 * and the body is not being read). Never read, write, close or change its
 * flags: the server owns it. Valid until the exchange ends; call on the
 * exchange's loop.
 * @return the file descriptor; -1 on NULL or an ended exchange.
 */
HTTPD_EXTERN int httpd_exchange_fd(httpd_exchange *ex);

/**
 * The request body's declared length in bytes: the Content-Length; 0
 * when the request has neither Content-Length nor chunked encoding (no
 * body, RFC 9112 §6.3); -1 when chunked (length unknown).
 */
HTTPD_EXTERN int64_t httpd_exchange_content_length(httpd_exchange *ex);

/**
 * True when the client asked to switch protocols: `Connection: upgrade`
 * with an `Upgrade` field (read the protocol with
 * httpd_request_header(req, "Upgrade")), or the CONNECT method.
 */
HTTPD_EXTERN bool httpd_exchange_wants_upgrade(httpd_exchange *ex);

/* --- the request body --------------------------------------------------------- */

/**
 * Receives the request body, de-chunked, as it arrives: on_data any
 * number of times (`data` is valid during the call only), then on_end
 * once; or on_error once instead of on_end when the body cannot be
 * received whole: ASB_ETOOLARGE (beyond the body limit; the server
 * answers 413 itself if no head was sent), ASB_EBADREQUEST (malformed
 * chunked framing; 400 likewise), ASB_ETRANSPORT (the client went away),
 * ASB_ETIMEOUT, ASB_ESHUTDOWN. on_close follows on_error. Any callback
 * may be NULL. In a tunnel (after an upgrade) on_data gets the raw bytes
 * and on_end means the client finished sending (half-close).
 */
typedef struct {
	void (*on_data)(httpd_exchange *ex, const char *data, size_t len, void *ud);
	void (*on_end)(httpd_exchange *ex, void *ud);
	void (*on_error)(httpd_exchange *ex, int err, void *ud);
} httpd_body_reader;

/**
 * Starts reading the body (once per exchange; `r` is copied, `ud` is
 * borrowed and passed to each callback). Until this call no byte of the
 * body is read from the socket (an `Expect: 100-continue` is answered
 * now). If the handler finishes without reading, the server drops the
 * rest of the body (up to 256 KiB, else it closes the connection after
 * the response). A body without bytes gives on_end at once (later, on
 * the loop).
 * @return 0; ASB_EINVAL (NULL r, called twice); ASB_ETOOLARGE (the
 *         declared Content-Length exceeds the body limit: the server
 *         answers 413 if no head was sent and the exchange ends with
 *         ASB_ETOOLARGE; no on_error).
 */
HTTPD_EXTERN int httpd_exchange_read_start(httpd_exchange *ex,
                                            const httpd_body_reader *r, void *ud);

/**
 * Stops delivering body (or tunnel) bytes: no on_data after this call
 * until resume. The server then reads at most 64 KiB more from the socket
 * and stops (TCP flow control holds the client back): pause when your
 * downstream is full, resume when it drained. Idempotent.
 */
HTTPD_EXTERN void httpd_exchange_read_pause(httpd_exchange *ex);

/** Delivers again (what is buffered first, later on the loop). Idempotent. */
HTTPD_EXTERN void httpd_exchange_read_resume(httpd_exchange *ex);

/**
 * Body limit of this exchange in bytes, replacing the server's
 * max_body_bytes (e.g. a file upload route); call before read_start.
 * 0: no limit.
 */
HTTPD_EXTERN void httpd_exchange_set_max_body(httpd_exchange *ex, uint64_t bytes);

/* --- the response --------------------------------------------------------------- */

/**
 * The response head to fill before send_head: status (default 200) with
 * httpd_response_set_status(), fields with
 * httpd_response_add_header() (the server writes Content-Length,
 * Transfer-Encoding, Date and Connection itself). No Content-Type is
 * added when none is set. httpd_response_write() is ignored on a
 * streamed response. Owned by the exchange.
 */
HTTPD_EXTERN httpd_response *httpd_exchange_response(httpd_exchange *ex);

/**
 * Sends the head. `content_length` >= 0: exactly that many body bytes
 * follow (Content-Length); -1: unknown, the body is chunked (HTTP/1.1
 * client) or ends with the connection (HTTP/1.0 client). Statuses
 * without a body (1xx, 204, 304) send neither field and take no body.
 * Status 101 (with content_length 0) accepts an upgrade: see
 * httpd_exchange_upgrade().
 * @return 0; ASB_EINVAL (head already sent; 101 without an upgrade
 *         request; content_length < -1; a body length on a bodiless
 *         status); an ended exchange's code; ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_exchange_send_head(httpd_exchange *ex, int64_t content_length);

/**
 * Queues `len` (> 0) body bytes of `data` (copied). `done(ex, ud)` (may
 * be NULL) runs on the loop when they have been written to the socket:
 * the writer's backpressure signal (or watch httpd_exchange_pending()).
 * It does not run when the exchange ends first (on_close does).
 * @return 0; ASB_EINVAL (no head sent yet, finished, len 0, more bytes
 *         than the Content-Length announced); an ended exchange's code;
 *         ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_exchange_write(httpd_exchange *ex, const void *data, size_t len,
                                       void (*done)(httpd_exchange *ex, void *ud),
                                       void *ud);

/**
 * As httpd_exchange_write(), but the buffer `data` (from malloc, `len` >
 * 0 bytes) is handed over, not copied: the library frees it once written,
 * and on every error too. For bodies read into a buffer of their own (a
 * file download), one copy less per byte. Same returns.
 */
HTTPD_EXTERN int httpd_exchange_write_owned(httpd_exchange *ex, char *data, size_t len,
                                             void (*done)(httpd_exchange *ex, void *ud),
                                             void *ud);

/**
 * True when httpd_exchange_write_file() can send this response's body:
 * a plain (not TLS) connection, the head sent with a Content-Length (or
 * delimited by the connection's close), not a tunnel, not finished.
 */
HTTPD_EXTERN bool httpd_exchange_can_write_file(httpd_exchange *ex);

/**
 * Queues `len` (> 0) body bytes of the file `fd` from byte `offset`,
 * sent by sendfile(2) from the page cache to the socket with no copy
 * through user space once every byte queued before them is out (files
 * sendfile refuses are copied through a 64 KiB buffer instead). The
 * descriptor is borrowed: keep it open until `done` runs or the exchange
 * ends (on_close); the file's offset is not used or moved (pread
 * semantics). `done(ex, ud)` runs on the loop when the last byte has
 * been handed to the socket; writes queued after this one follow it. A
 * file that ends before `offset + len` cuts the connection (the length
 * announced cannot be kept). A connection sends at most 4 MiB from files
 * per loop iteration, then lets the others go.
 * @return 0; ASB_EINVAL (httpd_exchange_can_write_file() false, fd < 0,
 *         len 0, more bytes than the Content-Length announced); an ended
 *         exchange's code; ASB_ETRANSPORT (out of memory or the
 *         connection failed: it is closed and the exchange ended).
 */
HTTPD_EXTERN int httpd_exchange_write_file(httpd_exchange *ex, int fd, uint64_t offset,
                                            size_t len,
                                            void (*done)(httpd_exchange *ex, void *ud),
                                            void *ud);

/**
 * Bytes of this exchange's response (head, chunk framing, body) queued
 * and not yet written to the socket.
 */
HTTPD_EXTERN size_t httpd_exchange_pending(httpd_exchange *ex);

/**
 * Ends the response: sends the head first when none was sent (as
 * send_head(0)), the last chunk when chunked. The connection then goes on
 * with the next request (keep-alive) or closes; in a tunnel, it closes
 * after the queued bytes. on_close(0) runs once every queued byte has been
 * written (or with an error code if the connection fails first); the
 * exchange pointer is invalid after it.
 * @return 0; ASB_EINVAL (finished twice; fewer bytes written than the
 *         Content-Length announced: the connection is then cut, as an
 *         abort); an ended exchange's code.
 */
HTTPD_EXTERN int httpd_exchange_finish(httpd_exchange *ex);

/**
 * A whole small response: status, Content-Type (NULL: none), `len`
 * bytes of `body` (copied), then finish.
 * @return what send_head, write or finish return (ASB_EINVAL when a head
 *         was already sent).
 */
HTTPD_EXTERN int httpd_exchange_respond(httpd_exchange *ex, int status,
                                         const char *content_type,
                                         const void *body, size_t len);

/**
 * Cuts the connection at once (e.g. the upstream died mid-response):
 * nothing more is sent; the exchange ends with ASB_ECANCELED (no
 * on_error). Does nothing on an ended exchange.
 */
HTTPD_EXTERN void httpd_exchange_abort(httpd_exchange *ex);

/**
 * Sets the callback run once when the exchange ends for any reason,
 * later on the loop: `reason` 0 = finished normally (every byte written),
 * else ASB_ECANCELED (aborted), ASB_ETRANSPORT (client gone, write or
 * TLS failure), ASB_ETIMEOUT (the exchange's timeout), ASB_ESHUTDOWN (cut
 * at the server's shutdown deadline), ASB_ETOOLARGE / ASB_EBADREQUEST
 * (the request body). Release what you hold there; the exchange is
 * invalid after it returns. A later call replaces `cb`.
 */
HTTPD_EXTERN void httpd_exchange_on_close(httpd_exchange *ex,
                                           void (*cb)(httpd_exchange *ex, int reason,
                                                      void *ud),
                                           void *ud);

/**
 * Ends the exchange (on_close with ASB_ETRANSPORT) as soon as the client
 * closes its sending side once the request has arrived whole, instead of
 * answering it as a half-closed client (the default, above). For answers
 * that cost while they are being prepared, a command run for the request
 * say: Go's net/http cancels a request's context on the same event. The
 * EOF is noticed while the server reads the connection, which it does
 * during the exchange unless the client pipelined 64 KiB or more behind
 * the request. Idempotent; a client EOF already received counts (later,
 * on the loop). Does nothing on an ended exchange.
 */
HTTPD_EXTERN void httpd_exchange_end_on_client_eof(httpd_exchange *ex);

/**
 * Time the exchange may still take, in ms from now, replacing the
 * server's read_timeout_ms (which by default bounds the whole exchange
 * from its request's first byte). 0: none (a tunnel, a long process
 * stream). When it passes the connection is cut and the exchange ends
 * with ASB_ETIMEOUT.
 */
HTTPD_EXTERN void httpd_exchange_set_timeout(httpd_exchange *ex, long ms);

/**
 * Accepts an upgrade (RFC 9110 §7.8, e.g. WebSocket RFC 6455): sends the
 * head the handler prepared (status 101 if it left 200, with
 * `Connection: Upgrade`; add the `Upgrade` field yourself) and turns the
 * connection into a raw byte tunnel: `r->on_data` gets every byte the
 * client sends after the request head (including bytes already
 * buffered), httpd_exchange_write() sends raw bytes (through TLS on
 * HTTPS), finish closes after the queued bytes, abort at once. The
 * exchange's timeout is cleared (set one again if you want one). Same as
 * send_head(0) with status 101 followed by read_start(r).
 * @return 0; ASB_EINVAL (the client asked for no upgrade, head sent,
 *         status neither 200 nor 101, NULL r, read_start already
 *         called); an ended exchange's code; ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_exchange_upgrade(httpd_exchange *ex,
                                         const httpd_body_reader *r, void *ud);

#ifdef __cplusplus
}
#endif
#endif
