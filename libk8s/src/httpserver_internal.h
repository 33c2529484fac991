/*
 * httpserver_internal.h - what the parts of the HTTP server share beyond
 * the public API: the request and response structs (httpmessage.c builds
 * and reads them, httpserver.c drives them), and a route whose userdata
 * the server owns (for the built-in handlers).
 */
#ifndef K8S_HTTPSERVER_INTERNAL_H
#define K8S_HTTPSERVER_INTERNAL_H

#include "k8s/httpserver.h"
#include "strbuf.h"

/* --- messages (httpmessage.c) --- */

typedef struct {
	char *name;
	char *value;
} k8s__http_header;

struct k8s_http_request {
	const char *method;            /* static, from http_method_str() */
	k8s_strbuf url;                /* raw request target */
	char *path;
	char *query;
	k8s__http_header *headers;
	size_t nheaders, cap;
	k8s_strbuf field, value;       /* the header being received */
	bool in_value;                 /* last callback was a value */
	k8s_strbuf body;
};

struct k8s_http_response {
	int status;
	k8s_strbuf headers;            /* "Name: value\r\n" lines */
	k8s_strbuf body;
	bool has_content_type;
};

/** Frees what a request holds and zeroes it for the next one. */
void k8s__http_request_reset(k8s_http_request *r);

/** Moves the header field being received into the list. 0, or -1 (memory). */
int k8s__http_request_end_header(k8s_http_request *r);

/** Frees what a response holds. */
void k8s__http_response_free(k8s_http_response *res);

/** Reason phrase of a status, as Go's net/http.StatusText writes it. */
const char *k8s__http_reason_phrase(int status);

/** The current time as an RFC 9110 IMF-fixdate (needs 30 bytes). */
void k8s__http_date(char *buf, size_t cap);

/* --- routes (httpserver.c) --- */

/**
 * As k8s_http_server_route(), and the server calls `free_userdata` on
 * `userdata` when it is freed (also when this call fails).
 */
int k8s__http_server_route_owned(k8s_http_server *s, const char *method,
                                 const char *path, k8s_http_handler_fn fn,
                                 void *userdata, void (*free_userdata)(void *));

/* --- loops, connections, exchanges (httpserver.c, httpexchange.c) --- */

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>
#include <http_parser.h>
#include "k8s/httpexchange.h"

#define K8S__HTTP_READ_BUFFER_BYTES 65536

typedef struct k8s__http_loop k8s__http_loop;
typedef struct k8s__http_conn k8s__http_conn;
typedef struct k8s__tls_conn k8s__tls_conn;

/* A function posted to a loop (k8s_http_server_call, deferred callbacks). */
typedef struct k8s__http_call {
	void (*fn)(void *ud);
	void *ud;
	struct k8s__http_call *next;
} k8s__http_call;

/* One loop thread with its own listener (SO_REUSEPORT when there are several). */
struct k8s__http_loop {
	k8s_http_server *srv;
	unsigned int index;
	uv_loop_t uv;
	uv_tcp_t listener;
	uv_async_t wake;               /* posted calls, shutdown */
	uv_timer_t deadline;           /* shutdown deadline */
	pthread_t thread;
	bool initialized, listening, thread_started;
	pthread_mutex_t calls_lock;    /* guards calls and calls_closed */
	k8s__http_call *calls, *calls_tail;
	bool calls_closed;             /* the loop has ended: no more calls */
	atomic_bool shutdown_requested;

	/* loop thread only */
	char read_buffer[K8S__HTTP_READ_BUFFER_BYTES];
	k8s__http_conn *conns;
	unsigned int nconns, max_connections;
	unsigned int nexchanges;       /* exchanges whose on_close has not run */
	bool accept_pending;           /* the listener holds a connection we did not take */
	bool draining;
	bool finished;                 /* the last handles are closing */
};

typedef enum { K8S__CONN_OPEN, K8S__CONN_LINGER, K8S__CONN_CLOSING } k8s__conn_state;

/* How bytes move between a connection and its socket. */
typedef struct {
	/* bytes arrived from the socket */
	void (*on_read)(k8s__http_conn *c, const char *data, size_t len);
	/* sends `len` bytes of `data` (malloc'd; the transport frees it) */
	int (*write)(k8s__http_conn *c, char *data, size_t len);
} k8s__http_transport;

struct k8s__http_conn {
	uv_tcp_t tcp;                  /* tcp.data == this */
	uv_timer_t timer;              /* idle / read / exchange / linger deadline */
	uv_shutdown_t shutdown_req;
	k8s__http_loop *lp;
	k8s_http_server *srv;
	const k8s__http_transport *tp;
	http_parser parser;
	k8s__http_conn *prev, *next;
	k8s__conn_state state;
	int open_handles;              /* tcp + timer; freed at 0 (and no kick posted) */
	int close_reason;              /* K8S_E* given to exchanges cut by the close */
	char peer_ip[64];
	int peer_port;

	k8s_http_request req;
	bool in_request;               /* bytes of a request received, not all of it */
	size_t header_bytes;
	int reject_status;             /* 400/413/431 decided in a callback */
	bool close_after;              /* answer with Connection: close, then close */
	int pending_writes;
	k8s__tls_conn *tls;            /* NULL on plain HTTP */

	/* streaming */
	k8s_strbuf in;                 /* plaintext received, not consumed yet */
	size_t in_off;
	bool reading;                  /* uv_read_start in effect */
	bool peer_eof;                 /* the client finished sending (EOF, close_notify) */
	bool pumping;                  /* inside conn_consume: do not re-enter */
	bool kick_posted, free_pending;
	bool parse_done;               /* past an upgrade: the parser is not used again */
	bool stream_req;               /* the request being parsed belongs to a stream route */
	bool upgrade_req;              /* ... and asked for an upgrade */
	uint64_t discard_left;         /* body bytes still to drop after an early finish */
	k8s_http_exchange *ex;         /* the exchange whose response is being produced */
	/* write context: plain_write ties the requests it makes to this exchange */
	k8s_http_exchange *wctx;
	struct k8s__http_write *last_wr;
};

/* One queued uv_write. */
typedef struct k8s__http_write {
	uv_write_t req;
	k8s__http_conn *c;
	char *data;
	k8s_http_exchange *ex;         /* holds a reference; NULL: not an exchange's */
	size_t plain_len;              /* bytes of `pending` this request settles */
	void (*done)(k8s_http_exchange *ex, void *ud);
	void *done_ud;
} k8s__http_write;

struct k8s_http_exchange {
	k8s__http_conn *c;             /* NULL once ended */
	k8s__http_loop *lp;
	k8s_http_server *srv;
	int refs;                      /* 1 until on_close ran, + one per write, + callers */
	k8s_http_request req;          /* the head */
	k8s_http_response res;
	char peer_ip[64];
	int peer_port;
	bool is_tls;
	int http_minor;
	bool head_only;                /* HEAD: no body bytes go out */
	bool keep_alive_10;
	bool expect_continue, continue_sent;
	bool has_body;                 /* chunked or Content-Length > 0 */
	int64_t content_length;        /* -1: chunked */
	uint64_t max_body, body_received;
	bool wants_upgrade;

	bool started;                  /* the handler was called */
	k8s_http_stream_fn fn;
	void *fn_ud;
	k8s_http_body_reader reader;
	void *reader_ud;
	bool reading, paused;
	bool body_done;                /* the request (head + body) was received whole */
	bool end_on_client_eof;        /* the client's EOF after the request ends the exchange */
	bool end_delivered;

	bool head_sent, chunked, close_delimited, no_body, tunnel;
	int64_t remaining;             /* Content-Length bytes still to write; -1 chunked */
	bool finished;                 /* finish() called */
	size_t pending;                /* bytes queued, not written yet */
	int writes_inflight;

	bool ended;
	int end_reason;
	void (*on_close)(k8s_http_exchange *ex, int reason, void *ud);
	void *close_ud;
};

/* httpserver.c, for httpexchange.c */
int k8s__http_loop_post(k8s__http_loop *lp, void (*fn)(void *), void *ud);
void k8s__http_conn_close(k8s__http_conn *c, int reason);
void k8s__http_conn_finish(k8s__http_conn *c);
/* Queues `len` bytes of `data` (malloc'd, taken), tied to `ex` (may be NULL). */
int k8s__http_conn_send(k8s__http_conn *c, k8s_http_exchange *ex, char *data, size_t len,
                        void (*done)(k8s_http_exchange *, void *), void *ud);
/* Re-evaluates the connection soon (after a pause lifts, an exchange ends): never re-entrant. */
void k8s__http_conn_kick(k8s__http_conn *c);
/* Starts the connection's exchange timer (0: none). */
void k8s__http_conn_set_timer(k8s__http_conn *c, long ms);
/* The connection goes on after its exchange finished its response. */
void k8s__http_conn_exchange_done(k8s__http_conn *c, k8s_http_exchange *ex);
bool k8s__http_conn_can_parse(const k8s__http_conn *c);
/* An error answer (413, ...) that closes the connection after it. */
void k8s__http_conn_send_error(k8s__http_conn *c, int status);
/* An exchange's on_close has run: the loop may end once none is left. */
void k8s__http_loop_exchange_gone(k8s__http_loop *lp);

/* httpexchange.c, for httpserver.c */
k8s_http_exchange *k8s__http_exchange_new(k8s__http_conn *c, k8s_http_stream_fn fn, void *ud);
void k8s__http_exchange_ref(k8s_http_exchange *ex);
void k8s__http_exchange_unref(k8s_http_exchange *ex);
/* Ends the exchange once: on_error/on_close run later, on the loop. */
void k8s__http_exchange_end(k8s_http_exchange *ex, int reason);
/* Calls the handler. */
void k8s__http_exchange_start(k8s_http_exchange *ex);
/* Body bytes; the request is complete; the tunnel's peer finished sending. */
void k8s__http_exchange_deliver(k8s_http_exchange *ex, const char *data, size_t len);
void k8s__http_exchange_deliver_end(k8s_http_exchange *ex);
/* A write of the exchange completed (status < 0: failed). */
void k8s__http_exchange_write_done(k8s__http_write *wr, int status);

/* --- TLS transport (httpserver_tls.c) --- */

/** Certificates and random generator of one HTTPS server (loop thread only). */
typedef struct k8s__tls_server k8s__tls_server;

/**
 * Loads the PEM certificate chain and key (and, when `client_ca_file` is
 * not NULL, the CA bundle client certificates must chain to);
 * K8S_ECONFIG (unreadable, not PEM, key not matching the certificate) or
 * K8S_ENOMEM, with a message naming the file. The server may be shared by
 * several loop threads: it locks what they share.
 */
int k8s__tls_server_new(k8s__tls_server **out, const char *name, const char *cert_file,
                        const char *key_file, const char *client_ca_file, k8s_logger *log);
void k8s__tls_server_free(k8s__tls_server *s);

/**
 * TLS state for a new connection (reloading the files first when they
 * changed, checked at most once a second by `now_ms`). `send_raw` queues
 * ciphertext on the socket and takes `data`; `deliver` receives plaintext
 * and returns false once the connection reads no more.
 */
int k8s__tls_conn_new(k8s__tls_conn **out, k8s__tls_server *s, uint64_t now_ms, void *owner,
                      int (*send_raw)(void *owner, char *data, size_t len),
                      bool (*deliver)(void *owner, const char *data, size_t len));
void k8s__tls_conn_free(k8s__tls_conn *t);

/** Bytes from the socket: 0 (go on), 1 (peer closed its side), -1 (close now). */
int k8s__tls_conn_input(k8s__tls_conn *t, const char *data, size_t len);

/** Encrypts and queues `len` bytes of `data` (malloc'd, taken). 0 or -1. */
int k8s__tls_conn_write(k8s__tls_conn *t, char *data, size_t len);

/** Queues a close_notify alert (after the handshake only). */
void k8s__tls_conn_close_notify(k8s__tls_conn *t);

#endif
