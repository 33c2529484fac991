/*
 * http_answer.c - big JSON answers in pieces (http_answer.h).
 */
#include <stdlib.h>

#include "asb/common.h"
#include "http.h"
#include "http_answer.h"

#define PIECE_INPUT (64 * 1024)   /* output bytes encoded per piece */
#define QUEUE_HIGH (256 * 1024)   /* bytes queued for the client before waiting */

void sbxd_answer_add(sbxd_answer *a, sbxd_part_kind kind, const char *data, size_t len,
                     sbxd_bytes *release, char *owned)
{
	if (a->n >= SBXD_ANSWER_PARTS)
		abort();  /* a programming error: the callers add a fixed number */
	a->part[a->n].kind = kind;
	a->part[a->n].data = data ? data : "";
	a->part[a->n].len = len;
	a->part[a->n].release = release;
	a->part[a->n].owned = owned;
	a->n++;
}

void sbxd_answer_clear(sbxd_answer *a)
{
	for (int i = 0; i < a->n; i++) {
		free(a->part[i].owned);
		a->part[i].owned = NULL;
	}
}

/* The next piece of the current stream part; NULL when out of memory. */
static char *next_piece(sbxd_answer *a, size_t *len)
{
	return a->part[a->cur].kind == SBXD_PART_TEXT
	       ? sbxd_text_cursor_next(&a->c, PIECE_INPUT, len)
	       : sbxd_b64_cursor_next(&a->c, PIECE_INPUT, len);
}

static int total_length(sbxd_answer *a, uint64_t *total)
{
	*total = 0;
	for (a->cur = 0; a->cur < a->n; a->cur++) {
		if (a->part[a->cur].kind == SBXD_PART_LITERAL) {
			*total += a->part[a->cur].len;
			continue;
		}
		a->c = (sbxd_out_cursor){ a->part[a->cur].data, a->part[a->cur].len, 0 };
		while (a->c.off < a->c.n) {
			size_t n;
			char *p = next_piece(a, &n);
			if (!p)
				return ASB_ENOMEM;
			free(p);
			*total += n;
		}
	}
	a->cur = 0;
	return 0;
}

static void pump(sbxd_answer *a);

static void written(httpd_exchange *ex, void *ud)
{
	sbxd_answer *a = ud;
	sbxd_stall_progress(a->stall);
	pump(a);
}

/* Begins part a->cur (its cursor). */
static void part_begin(sbxd_answer *a)
{
	if (a->cur < a->n)
		a->c = (sbxd_out_cursor){ a->part[a->cur].data, a->part[a->cur].len, 0 };
}

static void pump(sbxd_answer *a)
{
	while (a->cur < a->n && httpd_exchange_pending(a->ex) < QUEUE_HIGH) {
		const char *piece;
		size_t n;
		char *alloc = NULL;
		if (a->part[a->cur].kind == SBXD_PART_LITERAL) {
			piece = a->part[a->cur].data;
			n = a->part[a->cur].len;
			a->c.off = a->c.n;
		} else if (a->c.off < a->c.n) {
			piece = alloc = next_piece(a, &n);
			if (!alloc) {
				httpd_exchange_abort(a->ex);
				return;
			}
		} else {
			piece = NULL;
			n = 0;
		}
		int rc = n ? httpd_exchange_write(a->ex, piece, n, written, a) : 0;
		free(alloc);
		if (rc)
			return;  /* the exchange ended: its on_close clears */
		if (a->c.off >= a->c.n) {
			if (a->part[a->cur].release)
				sbxd_bytes_free(a->part[a->cur].release);
			a->cur++;
			part_begin(a);
		}
	}
	if (a->cur >= a->n && !a->finished) {
		a->finished = true;
		httpd_exchange_finish(a->ex);
	}
}

void sbxd_answer_send(sbxd_answer *a, httpd_exchange *ex, bool rest_errors)
{
	a->ex = ex;
	uint64_t total;
	if (total_length(a, &total) != 0) {
		if (rest_errors)
			sbxd_respond_error(ex, 500, "INTERNAL", "out of memory");
		else
			sbxd_respond_message(ex, 500, "out of memory");
		return;
	}
	httpd_response_add_header(httpd_exchange_response(ex), "Content-Type",
	                             "application/json");
	if (httpd_exchange_send_head(ex, (int64_t)total) != 0)
		return;
	part_begin(a);
	pump(a);
}
