/*
 * httpd/parser.h - the one door to the HTTP/1.x message parser. The server
 * (requests) and the router's upstream client (responses) parse through
 * it, so that the packaged parser library behind it (http-parser today,
 * its successor llhttp later) is named by a single file, src/parser.c.
 *
 * - A parser reads one direction of a connection: requests or responses,
 *   pipelined one after another. Bytes are pushed in with
 *   httpd_parser_execute() as they arrive, in pieces of any size; the
 *   parser calls back with the pieces of each message (URL, header names
 *   and values, body already de-chunked) without copying them.
 * - A callback stops parsing by returning non-zero (an error), or pauses
 *   it with httpd_parser_pause(): execute then returns the bytes consumed
 *   up to there, and the caller feeds the rest after httpd_parser_resume().
 * - Accessors read the message head (method, status, version, framing,
 *   keep-alive, upgrade) from on_headers_complete on.
 *
 * Threads: a parser is used by one thread at a time; distinct parsers are
 * independent. httpd_parser_split_url() is thread-safe.
 */
#ifndef HTTPD_PARSER_H
#define HTTPD_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "asb/common.h"

#ifndef HTTPD_EXTERN
/** Marks a symbol as part of the public ABI of libhttpd. */
#define HTTPD_EXTERN __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** What a parser reads. */
typedef enum {
	HTTPD_PARSER_REQUEST,          /**< requests (a server) */
	HTTPD_PARSER_RESPONSE          /**< responses (a client) */
} httpd_parser_type;

/** The state of a parser after httpd_parser_execute(). */
typedef enum {
	HTTPD_PARSER_OK = 0,           /**< no error: more input welcome */
	HTTPD_PARSER_PAUSED,           /**< a callback paused it (httpd_parser_resume()) */
	HTTPD_PARSER_EHEADER_OVERFLOW, /**< the library's own head size limit was passed */
	HTTPD_PARSER_ECALLBACK,        /**< a callback returned an error */
	HTTPD_PARSER_EINVALID          /**< malformed or refused input (any other error) */
} httpd_parser_error;

typedef struct httpd_parser httpd_parser;

/** A callback with no data: 0 to go on, non-zero to stop with an error. */
typedef int (*httpd_parser_cb)(httpd_parser *p);

/**
 * A callback with a piece of the message: `at` points into the buffer given
 * to httpd_parser_execute() (valid during the call only), `len` bytes.
 * A field or value may come in several pieces. 0 to go on, non-zero to stop.
 */
typedef int (*httpd_parser_data_cb)(httpd_parser *p, const char *at, size_t len);

/**
 * The callbacks of a parser; any may be NULL (nothing to do). The table is
 * not copied: it must outlive the parser (usually a static const).
 */
typedef struct {
	httpd_parser_cb on_message_begin;
	httpd_parser_data_cb on_url;           /**< request target (requests) */
	httpd_parser_data_cb on_status;        /**< reason phrase (responses) */
	httpd_parser_data_cb on_header_field;
	httpd_parser_data_cb on_header_value;  /**< leading blanks stripped, trailing kept */
	/**
	 * The head is complete. 0 to go on, 1 when the message has no body
	 * whatever its framing says (the response to a HEAD), other values
	 * stop with an error.
	 */
	httpd_parser_cb on_headers_complete;
	httpd_parser_data_cb on_body;          /**< body bytes, de-chunked */
	httpd_parser_cb on_message_complete;
} httpd_parser_callbacks;

/**
 * A parser, embedded by value in its owner's struct (no allocation). Its
 * fields are private: use the functions below. `impl` holds the library's
 * parser state, sized for http-parser's (32 bytes on LP64; parser.c checks
 * it at compile time) because one sits in every connection: a parser with a
 * larger state (llhttp) grows it together with the swap.
 */
struct httpd_parser {
	union {
		unsigned char bytes[32];
		uint64_t align_u64;
		void *align_ptr;
	} impl;
	const httpd_parser_callbacks *cb;
	void *data;
};

/**
 * (Re)initialises `p` to read messages of `type` from the start, calling
 * back through `cb` (borrowed, not copied), with `data` for the callbacks
 * (httpd_parser_data()). Cannot fail.
 */
HTTPD_EXTERN void httpd_parser_init(httpd_parser *p, httpd_parser_type type,
                                    const httpd_parser_callbacks *cb, void *data);

/** The `data` given to httpd_parser_init(). */
HTTPD_EXTERN void *httpd_parser_data(const httpd_parser *p);

/**
 * Parses `len` bytes of `data`; `len` 0 tells the end of the input (a
 * response delimited by the connection's close then completes). Stores in
 * `*consumed` (when not NULL) how many bytes were parsed: all of them,
 * or fewer when a callback paused, stopped with an error, or after an
 * upgrade (the bytes that follow belong to another protocol). Returns the
 * parser's state; once in an error state (HTTPD_PARSER_E*) it stays there
 * until httpd_parser_init().
 */
HTTPD_EXTERN httpd_parser_error httpd_parser_execute(httpd_parser *p, const char *data,
                                                     size_t len, size_t *consumed);

/** The parser's state (as the last httpd_parser_execute() returned). */
HTTPD_EXTERN httpd_parser_error httpd_parser_get_error(const httpd_parser *p);

/**
 * The library's name of the parser's state, e.g. "HPE_OK" or
 * "HPE_INVALID_METHOD" (static string; for logs).
 */
HTTPD_EXTERN const char *httpd_parser_error_name(const httpd_parser *p);

/** A human-readable description of the parser's state (static string). */
HTTPD_EXTERN const char *httpd_parser_error_description(const httpd_parser *p);

/**
 * Pauses the parser; meant for a callback, after which execute returns.
 * Does nothing in an error state.
 */
HTTPD_EXTERN void httpd_parser_pause(httpd_parser *p);

/** Ends a pause (before the next execute); does nothing when not paused. */
HTTPD_EXTERN void httpd_parser_resume(httpd_parser *p);

/** The request's method in capitals, e.g. "GET" (static string; requests). */
HTTPD_EXTERN const char *httpd_parser_method(const httpd_parser *p);

/** The response's status code, e.g. 200 (responses). */
HTTPD_EXTERN int httpd_parser_status_code(const httpd_parser *p);

/** The major number of the message's HTTP version (1 for HTTP/1.1). */
HTTPD_EXTERN int httpd_parser_http_major(const httpd_parser *p);

/** The minor number of the message's HTTP version (1 for HTTP/1.1). */
HTTPD_EXTERN int httpd_parser_http_minor(const httpd_parser *p);

/**
 * Whether the connection stays open after this message, by its version
 * and `Connection` field (RFC 9112 §9.3) and its framing.
 */
HTTPD_EXTERN bool httpd_parser_keep_alive(const httpd_parser *p);

/** Whether the body is chunked (Transfer-Encoding: chunked). */
HTTPD_EXTERN bool httpd_parser_chunked(const httpd_parser *p);

/**
 * Whether the message asks for (a request) or accepts (a 101 response)
 * another protocol: Upgrade, or CONNECT. Then parsing stops after the
 * head and the bytes that follow are not HTTP.
 */
HTTPD_EXTERN bool httpd_parser_upgrade(const httpd_parser *p);

/**
 * Whether the head had a Content-Length; if so stores its value (bytes)
 * in `*len`. Meaningful in on_headers_complete: the library counts the
 * value down as the body arrives.
 */
HTTPD_EXTERN bool httpd_parser_content_length(const httpd_parser *p, uint64_t *len);

/** One part of a split URL: `len` bytes at offset `off`, when `set`. */
typedef struct {
	bool set;
	size_t off, len;
} httpd_url_field;

/** A request target split into parts (offsets into the string given). */
typedef struct {
	httpd_url_field schema, host, port, path, query, fragment, userinfo;
	uint16_t port_number;          /**< the port as a number, when port.set */
} httpd_url;

/**
 * Splits the request target `url` (`len` bytes, no NUL needed) into its
 * parts; `is_connect` for the authority form of CONNECT ("host:port").
 * Returns 0, or ASB_EINVAL when `url` is not a valid target (nothing is
 * set as the last error: this runs on every request).
 */
HTTPD_EXTERN int httpd_parser_split_url(const char *url, size_t len, bool is_connect,
                                        httpd_url *out);

#ifdef __cplusplus
}
#endif

#endif
