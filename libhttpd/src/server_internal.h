/*
 * server_internal.h - what the parts of the HTTP server share beyond
 * the public API: the request and response structs (message.c builds
 * and reads them, server.c drives them), and a route whose userdata
 * the server owns (for the built-in handlers).
 */
#ifndef HTTPD_SERVER_INTERNAL_H
#define HTTPD_SERVER_INTERNAL_H

#include "httpd/server.h"
#include "asb/strbuf.h"

/* --- messages (message.c) --- */

typedef struct {
	char *name;                    /* into the request's head, once it is whole */
	char *value;
	size_t name_off, value_off;    /* their offsets in the head while it grows */
} httpd__header;

/* A request's head is one buffer (`head`): the target, then each field's
 * name and value, then the path and the query, each NUL-terminated, so a
 * request costs two allocations (the buffer and the field list) however
 * many fields it has. Pointers into it are made once the head is whole
 * (httpd__request_head_done), when it stops growing. */
struct httpd_request {
	const char *method;            /* static, from httpd_parser_method() */
	asb_strbuf head;
	size_t url_len;                /* the raw request target: head.data[0, url_len) */
	char *path;                    /* into head, once done */
	char *query;
	httpd__header *headers;
	size_t nheaders, cap;
	size_t field_off, value_off;   /* the field being received */
	bool url_done;                 /* the target's NUL is in the head */
	bool in_field, in_value;       /* the last callback was a name / a value */
	bool head_done;                /* pointers made: trailers are not kept */
	asb_strbuf body;
};

struct httpd_response {
	int status;
	asb_strbuf headers;            /* "Name: value\r\n" lines */
	asb_strbuf body;
	bool has_content_type;
};

/** Frees what a request holds and zeroes it for the next one. */
void httpd__request_reset(httpd_request *r);

/** Appends bytes of the request target. 0, or -1 (memory). */
int httpd__request_add_url(httpd_request *r, const char *at, size_t len);

/** Appends bytes of a field name or value (trailers after the head are
 * dropped). 0, or -1 (memory). */
int httpd__request_add_field(httpd_request *r, const char *at, size_t len);
int httpd__request_add_value(httpd_request *r, const char *at, size_t len);

/** Ends the field being received (none: nothing). 0, or -1 (memory). */
int httpd__request_end_header(httpd_request *r);

/**
 * The head is whole: ends the last field, stores the path and the query
 * (`path_off`/`path_len`, `query_off`/`query_len` within the target; a
 * negative offset: absent, read as "/" and ""), and makes the pointers.
 * 0, or -1 (memory).
 */
int httpd__request_head_done(httpd_request *r, long path_off, size_t path_len,
                             long query_off, size_t query_len);

/** Frees what a response holds. */
void httpd__response_free(httpd_response *res);

/** Reason phrase of a status, as Go's net/http.StatusText writes it. */
const char *httpd__reason_phrase(int status);

/** The current time as an RFC 9110 IMF-fixdate (needs 30 bytes). */
void httpd__date(char *buf, size_t cap);

/** Appends "HTTP/1.1 <status> <reason>\r\n" (no printf: every answer). */
void httpd__add_status_line(asb_strbuf *out, int status);

/** Appends "Date: <IMF-fixdate>\r\n". */
void httpd__add_date(asb_strbuf *out);

/* --- routes (server.c) --- */

/**
 * As httpd_server_route(), and the server calls `free_userdata` on
 * `userdata` when it is freed (also when this call fails).
 */
int httpd__server_route_owned(httpd_server *s, const char *method,
                                 const char *path, httpd_handler_fn fn,
                                 void *userdata, void (*free_userdata)(void *));

/* --- loops, connections, exchanges (server.c, exchange.c) --- */

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>
#include "httpd/parser.h"
#include "httpd/exchange.h"

#define HTTPD__READ_BUFFER_BYTES 65536

typedef struct httpd__loop httpd__loop;
typedef struct httpd__conn httpd__conn;
typedef struct httpd__tls_conn httpd__tls_conn;

/* A function posted to a loop (httpd_server_call, deferred callbacks). */
typedef struct httpd__call {
	void (*fn)(void *ud);
	void *ud;
	struct httpd__call *next;
} httpd__call;

/* One loop thread with its own listener (SO_REUSEPORT when there are several). */
struct httpd__loop {
	httpd_server *srv;
	unsigned int index;
	uv_loop_t uv;
	uv_tcp_t listener;
	uv_async_t wake;               /* posted calls, shutdown */
	uv_timer_t deadline;           /* shutdown deadline */
	pthread_t thread;
	bool initialized, listening, thread_started;
	pthread_mutex_t calls_lock;    /* guards calls and calls_closed */
	httpd__call *calls, *calls_tail;
	bool calls_closed;             /* the loop has ended: no more calls */
	atomic_bool shutdown_requested;

	/* loop thread only */
	char read_buffer[HTTPD__READ_BUFFER_BYTES];
	httpd__conn *conns;
	unsigned int nconns, max_connections;
	unsigned int nexchanges;       /* exchanges whose on_close has not run */
	bool accept_pending;           /* the listener holds a connection we did not take */
	bool draining;
	bool finished;                 /* the last handles are closing */
	/* writes corked in this iteration go out at its check phase, several
	 * in one writev (a head and the first body bytes in one segment); the
	 * idle handle keeps the poll from blocking while some wait */
	uv_check_t cork_check;
	uv_idle_t cork_idle;
	httpd__conn *corked;           /* connections with corked writes */
	httpd__conn *written;          /* connections with batches written at once, unreported */
	httpd__conn *written_draining; /* the part of that list the check phase is reporting */
	httpd__call *local, *local_tail; /* deferred on this thread (httpd__loop_defer) */
	/* records kept for reuse (several a request each), loop thread only */
	httpd__call *spare_calls;
	struct httpd__write *spare_writes;
	unsigned int nspare_calls, nspare_writes;
};

typedef enum { HTTPD__CONN_OPEN, HTTPD__CONN_LINGER, HTTPD__CONN_CLOSING } k8s__conn_state;

/* How bytes move between a connection and its socket. */
typedef struct {
	/* bytes arrived from the socket */
	void (*on_read)(httpd__conn *c, const char *data, size_t len);
	/* sends `len` bytes of `data` (malloc'd; the transport frees it) */
	int (*write)(httpd__conn *c, char *data, size_t len);
} httpd__transport;

struct httpd__conn {
	uv_tcp_t tcp;                  /* tcp.data == this */
	uv_timer_t timer;              /* idle / read / exchange / linger deadline */
	uint64_t due;                  /* that deadline (loop ms), 0: none; the timer runs lazily */
	uint64_t armed_due;            /* when the timer, if active, fires */
	uv_shutdown_t shutdown_req;
	httpd__loop *lp;
	httpd_server *srv;
	const httpd__transport *tp;
	httpd_parser parser;
	httpd__conn *prev, *next;
	k8s__conn_state state;
	int open_handles;              /* tcp + timer; freed at 0 (and no kick posted) */
	int close_reason;              /* ASB_E* given to exchanges cut by the close */
	char peer_ip[64];
	int peer_port;

	httpd_request req;
	bool in_request;               /* bytes of a request received, not all of it */
	size_t header_bytes;
	int reject_status;             /* 400/413/431 decided in a callback */
	bool close_after;              /* answer with Connection: close, then close */
	int pending_writes;
	httpd__tls_conn *tls;            /* NULL on plain HTTP */

	/* streaming */
	asb_strbuf in;                 /* plaintext received, not consumed yet */
	size_t in_off;
	bool reading;                  /* uv_read_start in effect */
	bool peer_eof;                 /* the client finished sending (EOF, close_notify) */
	bool pumping;                  /* inside conn_consume: do not re-enter */
	bool kick_posted, free_pending;
	bool parse_done;               /* past an upgrade: the parser is not used again */
	bool stream_req;               /* the request being parsed belongs to a stream route */
	bool upgrade_req;              /* ... and asked for an upgrade */
	uint64_t discard_left;         /* body bytes still to drop after an early finish */
	httpd_exchange *ex;         /* the exchange whose response is being produced */
	/* write context: plain_write ties the requests it makes to this exchange */
	httpd_exchange *wctx;
	struct httpd__write *last_wr;
	/* writes made but not yet handed to libuv (httpd__conn_flush) */
	struct httpd__write *cork_head, *cork_tail;
	unsigned int cork_n;
	size_t cork_bytes;
	bool cork_linked;              /* on lp->corked */
	httpd__conn *cork_next;
	unsigned int batches_inflight; /* batches written or handed to libuv, not reported */
	/* batches the socket took whole at the flush (no uv_write): their
	 * completions run at the check phase, as libuv's would have run later */
	struct httpd__write *written_head, *written_tail;
	unsigned int written_batches;
	bool written_linked;           /* on lp->written */
	httpd__conn *written_next;
	/* a file range (httpd_exchange_write_file) goes out by sendfile(2) once
	 * every write before it has: `sf` is the one being sent; while the
	 * socket is full a duplicate of its descriptor (sf_fd) is polled for
	 * writability, libuv watching the socket itself for reads */
	struct httpd__write *sf;
	uv_poll_t sf_poll;
	int sf_fd;                     /* -1 until the first wait */
	bool sf_poll_init;
	bool sf_running;               /* inside sf_run: a done callback's flush defers */
	bool shutdown_wanted;          /* conn_finish came while a file was queued */
};

/* One queued uv_write. */
typedef struct httpd__write {
	uv_write_t req;                /* the first of a batch carries the batch's uv_write */
	struct httpd__write *next;     /* the rest of its batch, in order */
	httpd__conn *c;
	char *data;
	size_t len;
	httpd_exchange *ex;         /* holds a reference; NULL: not an exchange's */
	size_t plain_len;              /* bytes of `pending` this request settles */
	void (*done)(httpd_exchange *ex, void *ud);
	void *done_ud;
	/* a file range instead of data: borrowed descriptor, bytes left */
	bool is_file;
	bool file_copy;                /* the file cannot be sent by sendfile: pread + write */
	int file_fd;
	uint64_t file_off, file_left;
} httpd__write;

struct httpd_exchange {
	httpd__conn *c;             /* NULL once ended */
	httpd__loop *lp;
	httpd_server *srv;
	int refs;                      /* 1 until on_close ran, + one per write, + callers */
	httpd_request req;          /* the head */
	httpd_response res;
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
	httpd_stream_fn fn;
	void *fn_ud;
	httpd_body_reader reader;
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
	void (*on_close)(httpd_exchange *ex, int reason, void *ud);
	void *close_ud;
};

/* server.c, for exchange.c */
int httpd__loop_post(httpd__loop *lp, void (*fn)(void *), void *ud);
/* The same from the loop's own thread, without the wake-up (an eventfd
 * write and read): runs at this iteration's check phase. */
int httpd__loop_defer(httpd__loop *lp, void (*fn)(void *), void *ud);
void httpd__conn_close(httpd__conn *c, int reason);
/* Hands the connection's corked writes to libuv now (one writev). */
void httpd__conn_flush(httpd__conn *c);
void httpd__conn_finish(httpd__conn *c);
/* Queues `len` bytes of `data` (malloc'd, taken), tied to `ex` (may be NULL). */
int httpd__conn_send(httpd__conn *c, httpd_exchange *ex, char *data, size_t len,
                        void (*done)(httpd_exchange *, void *), void *ud);
/* Queues `len` bytes of the file `fd` from `offset` (the descriptor is
 * borrowed until done), tied to `ex`; plain connections only. */
int httpd__conn_send_file(httpd__conn *c, httpd_exchange *ex, int fd, uint64_t offset,
                             size_t len, void (*done)(httpd_exchange *, void *), void *ud);
/* Re-evaluates the connection soon (after a pause lifts, an exchange ends): never re-entrant. */
void httpd__conn_kick(httpd__conn *c);
/* Starts the connection's exchange timer (0: none). */
void httpd__conn_set_timer(httpd__conn *c, long ms);
/* The connection goes on after its exchange finished its response. */
void httpd__conn_exchange_done(httpd__conn *c, httpd_exchange *ex);
bool httpd__conn_can_parse(const httpd__conn *c);
/* An error answer (413, ...) that closes the connection after it. */
void httpd__conn_send_error(httpd__conn *c, int status);
/* An exchange's on_close has run: the loop may end once none is left. */
void httpd__loop_exchange_gone(httpd__loop *lp);

/* exchange.c, for server.c */
httpd_exchange *httpd__exchange_new(httpd__conn *c, httpd_stream_fn fn, void *ud);
void httpd__exchange_ref(httpd_exchange *ex);
void httpd__exchange_unref(httpd_exchange *ex);
/* Ends the exchange once: on_error/on_close run later, on the loop. */
void httpd__exchange_end(httpd_exchange *ex, int reason);
/* Calls the handler. */
void httpd__exchange_start(httpd_exchange *ex);
/* Body bytes; the request is complete; the tunnel's peer finished sending. */
void httpd__exchange_deliver(httpd_exchange *ex, const char *data, size_t len);
void httpd__exchange_deliver_end(httpd_exchange *ex);
/* A write of the exchange completed (status < 0: failed). */
void httpd__exchange_write_done(httpd__write *wr, int status);

/* --- TLS transport (tls.c) --- */

/** Certificates and random generator of one HTTPS server (loop thread only). */
typedef struct httpd__tls_server httpd__tls_server;

/**
 * Loads the PEM certificate chain and key (and, when `client_ca_file` is
 * not NULL, the CA bundle client certificates must chain to);
 * ASB_ECONFIG (unreadable, not PEM, key not matching the certificate) or
 * ASB_ENOMEM, with a message naming the file. The server may be shared by
 * several loop threads: it locks what they share.
 */
int httpd__tls_server_new(httpd__tls_server **out, const char *name, const char *cert_file,
                        const char *key_file, const char *client_ca_file, asb_logger *log);
void httpd__tls_server_free(httpd__tls_server *s);

/**
 * TLS state for a new connection (reloading the files first when they
 * changed, checked at most once a second by `now_ms`). `send_raw` queues
 * ciphertext on the socket and takes `data`; `deliver` receives plaintext
 * and returns false once the connection reads no more.
 */
int httpd__tls_conn_new(httpd__tls_conn **out, httpd__tls_server *s, uint64_t now_ms, void *owner,
                      int (*send_raw)(void *owner, char *data, size_t len),
                      bool (*deliver)(void *owner, const char *data, size_t len));
void httpd__tls_conn_free(httpd__tls_conn *t);

/** Bytes from the socket: 0 (go on), 1 (peer closed its side), -1 (close now). */
int httpd__tls_conn_input(httpd__tls_conn *t, const char *data, size_t len);

/** Encrypts and queues `len` bytes of `data` (malloc'd, taken). 0 or -1. */
int httpd__tls_conn_write(httpd__tls_conn *t, char *data, size_t len);

/** Queues a close_notify alert (after the handshake only). */
void httpd__tls_conn_close_notify(httpd__tls_conn *t);

#endif
