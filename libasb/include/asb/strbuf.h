/*
 * strbuf.h - a growable byte string (redis' sds, reduced). The metrics
 * exposition, the HTTP server and the REST client build their output with it. An allocation failure is sticky: later appends do nothing and
 * `failed` stays set, so callers check once at the end.
 * Not thread-safe: one owner at a time.
 */
#ifndef ASB_STRBUF_H
#define ASB_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include "asb/common.h"

typedef struct {
	char *data;     /* NUL-terminated when not NULL */
	size_t len;     /* bytes used, not counting the NUL */
	size_t cap;     /* bytes allocated */
	bool failed;    /* an append ran out of memory */
} asb_strbuf;

#define ASB_STRBUF_INIT { NULL, 0, 0, false }

/** Appends `n` bytes of `s`. Returns 0, or -1 once out of memory. */
ASB_EXTERN int asb_strbuf_add(asb_strbuf *b, const char *s, size_t n);

/** Appends a NUL-terminated string. */
ASB_EXTERN int asb_strbuf_adds(asb_strbuf *b, const char *s);

/**
 * Makes room for `n` more bytes (and the NUL) without appending, so that a
 * caller that knows its usual size allocates once instead of doubling up to
 * it (a buffer starts at 64 bytes). Does nothing when the room is there.
 * Returns 0, or -1 once out of memory (sticky, as for the appends).
 */
ASB_EXTERN int asb_strbuf_reserve(asb_strbuf *b, size_t n);

/**
 * Appends the NUL-terminated `s` as well-formed UTF-8 (RFC 3629): each byte
 * that starts no valid sequence (a stray byte, an overlong form, a
 * surrogate, a code point above U+10FFFF, a sequence cut short) becomes
 * U+FFFD, as Go's encoders (zap, encoding/json) write it; JSON text must be
 * UTF-8 (RFC 8259) and cJSON copies bytes as they are.
 * @return 0, or -1 once out of memory.
 */
ASB_EXTERN int asb_strbuf_add_utf8(asb_strbuf *b, const char *s);

/** True when the NUL-terminated `s` is well-formed UTF-8 (RFC 3629).
 *  Pure; thread-safe. */
ASB_EXTERN bool asb_utf8_valid(const char *s);

/** Appends one byte. */
ASB_EXTERN int asb_strbuf_addc(asb_strbuf *b, char c);

/**
 * Appends the decimal form of `v` (a '-' first when negative), without
 * printf: the router and the metrics format integers on every request.
 * Returns 0, or -1 once out of memory.
 */
ASB_EXTERN int asb_strbuf_add_int(asb_strbuf *b, long long v);
/**
 * Writes the decimal form of `v` into `out` (at least 21 bytes), not
 * NUL-terminated; returns the number of bytes written.
 */
ASB_EXTERN size_t asb_format_int(char *out, long long v);
/** Appends printf-style formatted text. */
ASB_EXTERN int asb_strbuf_addf(asb_strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** Hands the data to the caller (who frees it) and resets the buffer. */
ASB_EXTERN char *asb_strbuf_detach(asb_strbuf *b, size_t *len);

/** Frees the data and resets the buffer. */
ASB_EXTERN void asb_strbuf_free(asb_strbuf *b);

#endif
