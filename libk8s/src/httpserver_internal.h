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

/* --- TLS transport (httpserver_tls.c) --- */

/** Certificates and random generator of one HTTPS server (loop thread only). */
typedef struct k8s__tls_server k8s__tls_server;
/** The TLS state of one connection. */
typedef struct k8s__tls_conn k8s__tls_conn;

/**
 * Loads the PEM certificate chain and key; K8S_ECONFIG (unreadable,
 * not PEM, key not matching the certificate) or K8S_ENOMEM, with a
 * message naming the file.
 */
int k8s__tls_server_new(k8s__tls_server **out, const char *name, const char *cert_file,
                        const char *key_file, k8s_logger *log);
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
