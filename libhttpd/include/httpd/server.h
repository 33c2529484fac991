/*
 * httpd/server.h - a small HTTP/1.1 server for the endpoints a controller
 * serves (metrics, health probes, later the conversion webhook), and the
 * base the router and sandboxd build on.
 *
 * - Event-driven on libuv (https://libuv.org), one loop thread per
 *   server by default (options.loops for more); requests are parsed by the packaged http-parser
 *   (https://github.com/nodejs/http-parser), never by hand.
 * - Routes map a method and a path to a handler. The handler reads the
 *   request (method, path, query, headers, body) and fills a response
 *   (status, headers, body) that the server sends with Content-Length.
 * - HTTP/1.1 semantics of RFC 9112: persistent connections (keep-alive)
 *   unless the client or the server says `Connection: close`, HTTP/1.0
 *   keep-alive on request, pipelined requests answered in order, `Expect:
 *   100-continue` answered, HEAD served by the GET handler without body.
 * - Limits: request line + headers (431), body (413), connections served
 *   at once (more wait in the listen backlog), idle keep-alive time and
 *   time to receive one request. Malformed requests get 400, unknown paths
 *   404, known paths with another method 405 (with `Allow`); each of these
 *   closes that connection and the server goes on serving others.
 * - Graceful shutdown: stop accepting, let requests in flight finish (their
 *   answer carries `Connection: close`), close idle connections, and after
 *   a deadline close whatever is left.
 *
 * HTTP or HTTPS: with a certificate and key (PEM files) the server speaks
 * TLS 1.2+ through mbedTLS (https://www.rfc-editor.org/rfc/rfc8446,
 * rfc5246), requests no client certificate unless a client CA is set
 * (mutual TLS), offers ALPN "http/1.1", and
 * picks up new files when they change (checked at most once a second, at
 * a new connection; open connections keep the old certificate). A failed
 * handshake closes that connection only.
 *
 * Streaming (httpd/exchange.h): routes added with
 * httpd_server_route_stream() get the request head at once and read
 * the body, write the response, answer later or tunnel bytes after an
 * Upgrade, with backpressure both ways; they share the route table,
 * limits and connections of the buffered routes.
 *
 * Threads: httpd_server_* calls are made by the owner (one thread, or
 * serialised by the caller), except httpd_server_call(). Handlers run
 * on a loop thread of the server (options.loops, each with its own
 * listener), one at a time per loop: they must not block for long (a slow
 * handler delays every other connection of that loop) and must not call
 * httpd_server_shutdown() or _free() on their own server.
 */
#ifndef HTTPD_SERVER_H
#define HTTPD_SERVER_H

#include "asb/common.h"
#include "asb/log.h"
#include "asb/metrics.h"

/** Marks a symbol as part of the public ABI of libhttpd. */
#define HTTPD_EXTERN __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque server. */
typedef struct httpd_server httpd_server;

/** A request as a handler sees it; valid during the handler call only. */
typedef struct httpd_request httpd_request;

/** The response a handler fills; sent when the handler returns. */
typedef struct httpd_response httpd_response;

/**
 * Serves one request, on the server's loop thread. The response starts as
 * 200 with an empty body; whatever the handler sets is sent when it
 * returns. Streaming routes (httpd/exchange.h) answer piece by piece.
 */
typedef void (*httpd_handler_fn)(const httpd_request *req,
                                    httpd_response *res, void *userdata);

#define HTTPD_SERVER_OPTIONS_VERSION 3

/** Server options; initialise with HTTPD_SERVER_OPTIONS_INIT. */
typedef struct {
	unsigned int version;          /**< HTTPD_SERVER_OPTIONS_VERSION */
	/** Where to listen, in Go's net.Listen form: "host:port", ":port"
	 *  (every interface, IPv6 and IPv4), "[::1]:port"; port 0 picks a
	 *  free port (see httpd_server_port()); "0" disables the server, as
	 *  controller-runtime's bind-address flags do. Required. Hostnames are
	 *  resolved once, at start, and the first IPv4 address wins. */
	const char *address;
	const char *name;              /**< for logs, e.g. "metrics"; NULL: "http" */
	/** Limit of request line + header fields, in bytes; 0: 64 KiB. The
	 *  packaged parser also stops at 80 KiB whatever this says. Beyond:
	 *  431 and the connection is closed. */
	size_t max_header_bytes;
	/** Limit of a request body, in bytes; 0: 1 MiB. Beyond: 413 and the
	 *  connection is closed. */
	size_t max_body_bytes;
	/** Connections served at once; 0: 1024. Further clients wait in the
	 *  listen backlog until one closes (as Go's netutil.LimitListener). */
	unsigned int max_connections;
	/** A keep-alive connection with no request for this long is closed;
	 *  0: 60000 ms. */
	long idle_timeout_ms;
	/** A request must arrive whole within this time of its first byte,
	 *  else the connection is closed (slow clients); 0: 30000 ms. */
	long read_timeout_ms;
	asb_logger *logger;            /**< borrowed; NULL: silent */
	/* version 2 */
	/** PEM certificate chain (leaf first) for HTTPS; NULL: plain HTTP.
	 *  Read by httpd_server_new(); needs tls_key_file too. */
	const char *tls_cert_file;
	/** PEM private key (EC, RSA; PKCS#1, SEC1 or PKCS#8) matching it. */
	const char *tls_key_file;
	/* version 3 */
	/** Loop threads, each with its own SO_REUSEPORT listener on the same
	 *  address (the kernel spreads new connections over them); a
	 *  connection stays on the loop that accepted it. 0 or 1: one loop,
	 *  no SO_REUSEPORT. max_connections is split evenly between loops. */
	unsigned int loops;
	/** PEM CA bundle: when set (HTTPS only), clients must present a
	 *  certificate that chains to it (mutual TLS, RFC 8446 §4.3.2) or
	 *  the handshake fails; NULL: no client certificate is asked for.
	 *  Read again whenever the certificate files are reloaded. */
	const char *tls_client_ca_file;
} httpd_server_options;

#define HTTPD_SERVER_OPTIONS_INIT { .version = HTTPD_SERVER_OPTIONS_VERSION }

/** Fills `opts` with defaults; ASB_EINVAL for an unknown version. */
HTTPD_EXTERN int httpd_server_options_init(httpd_server_options *opts,
                                            unsigned int version);

/**
 * True when `address` is "0", the value that disables a server (and the
 * matching controller-runtime flag). Pure; thread-safe.
 */
HTTPD_EXTERN bool httpd_address_disabled(const char *address);

/**
 * Creates a server (not listening yet). `opts->address` is checked here:
 * a missing or malformed address or port gives ASB_EINVAL. With "0" the
 * server is created disabled: start() then does nothing. The TLS files,
 * when given, are loaded here. Options of versions 1 (no TLS fields) and
 * 2 (no loops, no client CA) are accepted.
 * @return 0; ASB_EINVAL (address, version, only one of the TLS files, a
 *         client CA without TLS, more than 256 loops);
 *         ASB_ECONFIG (a TLS or CA file unreadable or not PEM, or the key does
 *         not match the certificate: the message names the file);
 *         ASB_ERROR (random generator); ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_server_new(httpd_server **out,
                                   const httpd_server_options *opts);

/**
 * Adds a route; call before httpd_server_start().
 *
 * @param method  "GET", "POST", ... (exact, upper case), or NULL for any
 *                method. A GET route also answers HEAD.
 * @param path    the request path without the query, compared byte for
 *                byte with the raw (still percent-encoded) request path;
 *                a trailing asterisk makes it a prefix ("/debug/pprof/" + "*").
 *                An exact route wins over prefixes, a longer prefix over
 *                a shorter one.
 * @param fn      the handler; `userdata` is passed to it.
 * @return 0; ASB_EINVAL (NULL path or fn, path not starting with '/',
 *         server already started); ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_server_route(httpd_server *s, const char *method,
                                     const char *path, httpd_handler_fn fn,
                                     void *userdata);

/**
 * Binds, listens and starts the loop threads (one listener each). Bind
 * errors are returned here, not later. A disabled server returns 0 and does nothing.
 * @return 0; ASB_EINVAL (started twice); ASB_ETRANSPORT (the address
 *         cannot be resolved, is in use or not available: the message
 *         names it and the system's reason); ASB_ERROR (thread).
 */
HTTPD_EXTERN int httpd_server_start(httpd_server *s);

/**
 * The TCP port the server listens on (useful with port 0), or 0 when it is
 * disabled or not started.
 */
HTTPD_EXTERN int httpd_server_port(const httpd_server *s);

/**
 * Graceful shutdown; blocks until the loop threads have ended. New
 * connections are refused at once; idle connections are closed; requests
 * being received or answered finish, with `Connection: close`, and so do
 * streaming exchanges and tunnels (they keep running until they finish).
 * After `timeout_ms` (<= 0: 0, i.e. close at once) every remaining
 * connection is closed and the exchanges on it end with ASB_ESHUTDOWN
 * (their on_close runs before this returns). Calls posted with
 * httpd_server_call() run before it returns. Does nothing on a server
 * that is not running; safe to call twice.
 * @return 0 when everything finished in time, ASB_ETIMEOUT when
 *         connections had to be cut.
 */
HTTPD_EXTERN int httpd_server_shutdown(httpd_server *s, long timeout_ms);

/** Shuts down (timeout 0) if needed and frees; NULL is accepted. */
HTTPD_EXTERN void httpd_server_free(httpd_server *s);

/* --- requests ------------------------------------------------------------ */

/** The method, e.g. "GET". Never NULL. */
HTTPD_EXTERN const char *httpd_request_method(const httpd_request *req);

/** The raw path of the request target, e.g. "/metrics". Never NULL. */
HTTPD_EXTERN const char *httpd_request_path(const httpd_request *req);

/** The raw query without '?', "" when there is none. Never NULL. */
HTTPD_EXTERN const char *httpd_request_query(const httpd_request *req);

/**
 * The value of the first header field named `name` (compared without
 * case), or NULL. Leading and trailing blanks are not part of the value.
 */
HTTPD_EXTERN const char *httpd_request_header(const httpd_request *req,
                                               const char *name);

/** Number of header fields, in the order they were received. */
HTTPD_EXTERN size_t httpd_request_header_count(const httpd_request *req);

/**
 * The i-th header field (0-based): its name as sent and its value.
 * Returns 0, or ASB_EINVAL when i is out of range.
 */
HTTPD_EXTERN int httpd_request_header_at(const httpd_request *req,
                                          size_t i, const char **name,
                                          const char **value);

/**
 * The body (de-chunked), NUL-terminated for convenience; `*len` (may be
 * NULL) receives its length in bytes. Never NULL ("" when empty).
 */
HTTPD_EXTERN const char *httpd_request_body(const httpd_request *req,
                                             size_t *len);

/* --- responses ----------------------------------------------------------- */

/** Sets the status code (100..599; others are ignored and give EINVAL). */
HTTPD_EXTERN int httpd_response_set_status(httpd_response *res,
                                            int status);

/**
 * Adds a header field. The server writes Content-Length, Date and
 * Connection itself (EINVAL for those), and Content-Type
 * "text/plain; charset=utf-8" when the handler sets none.
 * @return 0; ASB_EINVAL (empty or non-token name, CR, LF or NUL in the
 *         value, a header the server owns); ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_response_add_header(httpd_response *res,
                                            const char *name,
                                            const char *value);

/** Appends `len` bytes to the body. Returns 0 or ASB_ENOMEM. */
HTTPD_EXTERN int httpd_response_write(httpd_response *res,
                                       const void *data, size_t len);

/* --- built-in handlers ---------------------------------------------------- */

/**
 * Serves `registry` at GET `path` (e.g. "/metrics") in the Prometheus
 * text format (ASB_METRICS_CONTENT_TYPE). The registry is borrowed and
 * must outlive the server. Returns what httpd_server_route() returns.
 */
HTTPD_EXTERN int httpd_server_handle_metrics(httpd_server *s,
                                              const char *path,
                                              asb_metrics_registry *registry);

/** A named set of health checks (liveness or readiness). Thread-safe. */
typedef struct httpd_health_checks httpd_health_checks;

/**
 * One check: returns 0 when healthy, anything else when not. Called on the
 * server's loop thread at each probe: it must be quick (read a flag).
 */
typedef int (*httpd_health_check_fn)(void *userdata);

/** Creates an empty set (an empty set is healthy). Returns 0 or ASB_ENOMEM. */
HTTPD_EXTERN int httpd_health_checks_new(httpd_health_checks **out);

/** Frees a set; NULL is accepted. No server may still serve it. */
HTTPD_EXTERN void httpd_health_checks_free(httpd_health_checks *hc);

/**
 * Adds a check named `name` (copied; e.g. "ping", "informers-synced").
 * May be called while the set is served. Returns 0, ASB_EINVAL (NULL or
 * empty name, NULL fn, name already used) or ASB_ENOMEM.
 */
HTTPD_EXTERN int httpd_health_checks_add(httpd_health_checks *hc, const char *name,
                                     httpd_health_check_fn fn, void *userdata);

/**
 * Runs every check; returns the number that failed (0: healthy). When
 * `report` is not NULL it receives a malloc'd text (caller frees), one
 * line per check "[+]name ok" or "[-]name failed".
 */
HTTPD_EXTERN int httpd_health_checks_run(httpd_health_checks *hc, char **report);

/**
 * Serves `hc` at GET `path` (e.g. "/healthz", "/readyz"), as Kubernetes
 * components do: 200 "ok" when every check passes; otherwise 503 with one
 * line per check ("[+]ping ok", "[-]informers-synced failed") and a last
 * line "<name> check failed", where <name> is the path without its '/'.
 * With the query "verbose", a healthy answer lists the checks too. Also
 * serves GET `path`/<check> for one check alone (200 "ok", 503
 * "internal server error: <check> check failed", 404 for an unknown
 * check), as controller-runtime does. `hc` is borrowed and must outlive
 * the server.
 */
HTTPD_EXTERN int httpd_server_handle_health(httpd_server *s,
                                             const char *path,
                                             httpd_health_checks *hc);

#ifdef __cplusplus
}
#endif
#endif
