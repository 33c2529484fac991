/*
 * codec.h - the JSON shapes of sandboxd's HTTP APIs, built and read with
 * cJSON (never by hand), plus base64 (mbedTLS), percent-decoding and the
 * UTF-8 clean-up that text fields need.
 *
 * Process API (docs/sandboxd.md): requests and stream events are the
 * proto3 JSON mapping (https://protobuf.dev/programming-guides/json/) of
 * upstream's process.v1 messages (docs/upstream.md#processservice): field names in
 * lowerCamelCase (the proto names are accepted too), bytes as base64,
 * enums by name or number; a few fields are ours (timeoutSeconds, shell,
 * and the exit event's signal/timedOut/truncation flags).
 *
 * Every encoder returns a malloc'd, NUL-terminated body (caller frees) and
 * its length, or NULL when out of memory. Parsers return 0 or ASB_EINVAL
 * with a message naming the field, or ASB_ENOMEM. Pure; thread-safe.
 */
#ifndef SBXD_CODEC_H
#define SBXD_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsops.h"
#include "proc.h"

/* ---- byte buffers ---- */

/** A growable byte buffer (buffered command output). Zero-initialise. */
typedef struct {
	char *data;
	size_t len, cap;
} sbxd_bytes;

/** Appends `n` bytes; out of memory drops them (the caller's bound is what
 *  matters) and returns -1, else 0. */
int sbxd_bytes_add(sbxd_bytes *b, const char *d, size_t n);

/** Frees the data; the buffer is empty again. */
void sbxd_bytes_free(sbxd_bytes *b);

/* ---- process requests ---- */

/** A StartRequest / ExecuteRequest, decoded. */
typedef struct {
	char **argv;              /**< NULL-terminated, non-empty */
	char **env;               /**< "NAME=value", NULL-terminated; NULL when none */
	char *cwd;                /**< NULL or "": the root */
	bool pty;
	unsigned short cols, rows;
	long timeout_ms;          /**< 0: none */
} sbxd_proc_request;

/**
 * Parses `{"config": {"command": [..] | "shell": "..", "envVars": {..},
 * "cwd": ".."}, "pty": {"cols": N, "rows": N}, "timeoutSeconds": N}`.
 * "shell": S stands for ["/bin/sh", "-c", S]. `allow_pty` false refuses
 * "pty" (Execute has none). Empty command: ASB_EINVAL "command is
 * required" (docs/upstream.md#process-semantics). Clear with sbxd_proc_request_clear().
 */
int sbxd_proc_request_parse(const char *json, size_t len, bool allow_pty, sbxd_proc_request *r);

/** Frees what sbxd_proc_request_parse() filled; the struct is zeroed. */
void sbxd_proc_request_clear(sbxd_proc_request *r);

/** `{"input": "<base64>"}` or `{"eof": {}}` (WriteStdinRequest). `*data`
 *  is malloc'd (caller frees; NULL when empty). */
int sbxd_stdin_request_parse(const char *json, size_t len, unsigned char **data, size_t *n,
                             bool *eof);

/** `{"signal": "SIGNAL_SIGTERM" | "SIGTERM" | 15}`; names of the process.v1
 *  enum plus SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGSTOP. */
int sbxd_signal_request_parse(const char *json, size_t len, int *sig);

/** `{"cols": N, "rows": N}` (ResizeTTYRequest), both in 1..65535. */
int sbxd_resize_request_parse(const char *json, size_t len, unsigned short *cols,
                              unsigned short *rows);

/* ---- process responses and stream events (each line ends with '\n') ---- */

/** `{"init":{"processId":id}}` + newline (InitEvent). */
char *sbxd_event_init(int32_t id, size_t *len);
/** `{"stdout":"<b64>"}` or `{"stderr":"<b64>"}` + newline, `n` bytes of `data`. */
char *sbxd_event_output(sbxd_stream s, const char *data, size_t n, size_t *len);
/** `{"exit":{"exitCode":N[,"signal":S][,"timedOut":true][,"stdoutTruncated":true]
 *  [,"stderrTruncated":true]}}` + newline (ExitEvent and our flags). */
char *sbxd_event_exit(const sbxd_exit *ex, size_t *len);

/** ExecuteResponse: exitCode, stdout and stderr (base64) and our flags. */
char *sbxd_execute_response(const sbxd_exit *ex, const char *out, size_t out_len,
                            const char *err, size_t err_len, size_t *len);

/** python-runtime /execute: {"stdout", "stderr", "exit_code"} with text
 *  made valid UTF-8 (see sbxd_utf8_clean). */
char *sbxd_runtime_execute_response(const char *out, size_t out_len, const char *err,
                                    size_t err_len, int exit_code, size_t *len);

/* ---- big answers in pieces ---- */

/**
 * The answers of sbxd_runtime_execute_response() and
 * sbxd_execute_response(), byte for byte, in pieces, for outputs too big
 * to copy whole (the text cleaned, then escaped, then the whole answer:
 * each as big as the output or, for NUL and control bytes, 3 and 6 times
 * it). A python-runtime answer is
 *   SBXD_RUNTIME_ANSWER_HEAD, stdout as text, SBXD_RUNTIME_ANSWER_MID,
 *   stderr as text, sbxd_runtime_answer_tail(exit_code);
 * an ExecuteResponse is
 *   sbxd_execute_answer_head(exit), stdout in base64, SBXD_EXECUTE_ANSWER_MID,
 *   stderr in base64, SBXD_EXECUTE_ANSWER_TAIL;
 * where each stream comes from a cursor, piece by piece.
 */
#define SBXD_RUNTIME_ANSWER_HEAD "{\"stdout\":\""
#define SBXD_RUNTIME_ANSWER_MID "\",\"stderr\":\""
#define SBXD_EXECUTE_ANSWER_MID "\",\"stderr\":\""
#define SBXD_EXECUTE_ANSWER_TAIL "\"}\n"

/** The python-runtime answer's end for `exit_code`, written into `buf`
 *  (>= 32 bytes); returns its length. */
size_t sbxd_runtime_answer_tail(int exit_code, char *buf, size_t cap);

/** The ExecuteResponse up to its stdout's first byte: `{"exitCode":N,
 *  ...,"stdout":"` (malloc'd), or NULL when out of memory. */
char *sbxd_execute_answer_head(const sbxd_exit *ex, size_t *len);

/** A cursor over `n` bytes of output at `s` (borrowed). Zero `off` to start. */
typedef struct {
	const char *s;
	size_t n, off;
} sbxd_out_cursor;

/**
 * The next piece of the cursor's output as the inside of a JSON string
 * (text: cleaned as sbxd_utf8_clean() does, escaped by cJSON), for at most
 * `in_max` (>= 4) more bytes of output, cut between characters so that the
 * pieces joined are the text encoded whole. Call while c->off < c->n.
 * Returns the piece (malloc'd, caller frees) and its length in `*len`, or
 * NULL when out of memory (the cursor has not moved).
 */
char *sbxd_text_cursor_next(sbxd_out_cursor *c, size_t in_max, size_t *len);

/** The same for base64: pieces of a multiple of 3 bytes of output (but the
 *  last), so that they join into the base64 of the whole. `in_max` >= 3. */
char *sbxd_b64_cursor_next(sbxd_out_cursor *c, size_t in_max, size_t *len);

/* ---- errors and small bodies ---- */

/** sandboxd REST error: `{"code":"<code>","message":"<message>"}` + "\n". */
char *sbxd_error_body(const char *code, const char *message, size_t *len);

/** python-runtime: `{"message": "<message>"}`. */
char *sbxd_message_body(const char *message, size_t *len);

/** FastAPI's 422 body for a missing/invalid field `field` in `where`
 *  ("body"), so that clients that parse it see the same shape. */
char *sbxd_validation_body(const char *where, const char *field, const char *msg, size_t *len);

/* ---- listings ---- */

/** sandboxd DirectoryListing: {"path": "/<path>", "entries": [FileEntry]}. */
char *sbxd_listing_json(const char *path, const sbxd_entry *e, size_t n, size_t *len);

/** python-runtime list: [{"name","size","type","mod_time"}]. */
char *sbxd_runtime_list_json(const sbxd_entry *e, size_t n, size_t *len);

/** Formats `t` as RFC 3339 UTC with seconds ("2006-01-02T15:04:05Z") into
 *  `buf` (>= 21 bytes). */
void sbxd_rfc3339(time_t t, char *buf, size_t cap);

/* ---- text ---- */

/**
 * Percent-decodes `n` bytes of `s` (RFC 3986 section 2.1; '+' is kept).
 * The result may hold any byte, NUL included; it is NUL-terminated and its
 * length goes to `*olen`. ASB_EINVAL for a '%' not followed by two hex
 * digits.
 */
int sbxd_percent_decode(const char *s, size_t n, char **out, size_t *olen);

/**
 * The value of query parameter `name` in the raw query `query` (without
 * '?'; "a=1&b=2"), '+' read as a space and percent-decoded (a malformed
 * escape leaves the raw text); a bare `name` gives "". Malloc'd (caller
 * frees), NULL when absent or out of memory. The first occurrence wins.
 */
char *sbxd_query_param(const char *query, const char *name);

/**
 * A NUL-terminated copy of `n` bytes of `s` as valid UTF-8: each invalid
 * sequence and each NUL byte (which a C string cannot hold) becomes U+FFFD,
 * as Python's decode(errors="replace") would for the former.
 */
char *sbxd_utf8_clean(const char *s, size_t n);

/** base64 (RFC 4648 section 4) of `n` bytes; NUL-terminated. */
char *sbxd_b64_encode(const void *data, size_t n, size_t *len);

#endif
