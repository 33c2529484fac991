/*
 * http_answer.h - a JSON answer with a command's whole output in it
 * (python-runtime /execute, REST /v1/execute), sent piece by piece as the
 * socket takes it: literal parts and output streams, each stream encoded
 * (text or base64, codec.h) 64 KiB of output at a time once fewer than
 * 256 KiB wait for the client. The memory held is the output itself and
 * that queue, not the output encoded, then the whole answer, then its copy
 * for the socket. The length is found first by encoding everything once
 * without keeping it, so the answer has a Content-Length.
 *
 * Threads: the exchange's loop. The answer lives in the request's state,
 * cleared in the exchange's on_close.
 */
#ifndef SBXD_HTTP_ANSWER_H
#define SBXD_HTTP_ANSWER_H

#include <stdbool.h>
#include <stddef.h>

#include "httpd/exchange.h"
#include "codec.h"

typedef enum {
	SBXD_PART_LITERAL,   /* bytes as they are */
	SBXD_PART_TEXT,      /* output as the inside of a JSON string (sbxd_text_cursor_next) */
	SBXD_PART_BASE64,    /* output in base64 (sbxd_b64_cursor_next) */
} sbxd_part_kind;

#define SBXD_ANSWER_PARTS 5

typedef struct {
	struct {
		sbxd_part_kind kind;
		const char *data;
		size_t len;
		sbxd_bytes *release;  /* freed once this part is sent; may be NULL */
		char *owned;          /* freed by sbxd_answer_clear; may be NULL */
	} part[SBXD_ANSWER_PARTS];
	int n, cur;
	sbxd_out_cursor c;
	httpd_exchange *ex;
	bool finished;
	/** Told of each write's completion (may be NULL; the caller's, started
	 *  and freed by it: --stall-timeout). */
	struct sbxd_stall *stall;
} sbxd_answer;

/**
 * Appends a part: `len` bytes at `data`, borrowed until the exchange
 * closes. `release` (may be NULL) is freed once the part is sent (the
 * output it holds is not needed any more); `owned` (may be NULL) is
 * free()d by sbxd_answer_clear(). At most SBXD_ANSWER_PARTS parts.
 */
void sbxd_answer_add(sbxd_answer *a, sbxd_part_kind kind, const char *data, size_t len,
                     sbxd_bytes *release, char *owned);

/**
 * Sends `a` (zero-initialised, then filled with sbxd_answer_add) as the
 * 200 application/json answer of `ex`. Out of memory before the head: 500
 * "out of memory" in the REST shape when `rest_errors`, else the
 * python-runtime's `{"message"}`; after it, the connection is cut.
 */
void sbxd_answer_send(sbxd_answer *a, httpd_exchange *ex, bool rest_errors);

/** Frees what the parts own. */
void sbxd_answer_clear(sbxd_answer *a);

#endif
