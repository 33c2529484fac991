/*
 * multipart.h - a streaming multipart/form-data reader (RFC 7578 on the
 * RFC 2046 section 5.1 syntax) for uploads: POST /upload of the
 * python-runtime and PUT /v1/files with a multipart body. Part bodies are
 * handed over as they arrive, never held whole, so a 100 MB upload needs a
 * buffer of one network read plus the boundary.
 *
 * Why not a library: Debian packages no streaming multipart parser for C
 * (GMime needs GLib and is a mail library); the grammar is small and the
 * parser is fuzzed (tests/fuzz/fuzz_sandboxd_request.c).
 *
 * Not thread-safe: one parser per request.
 */
#ifndef SBXD_MULTIPART_H
#define SBXD_MULTIPART_H

#include <stddef.h>

/** Part headers are refused beyond this many bytes. */
#define SBXD_MULTIPART_MAX_HEADERS 16384

typedef struct sbxd_multipart sbxd_multipart;

/** Callbacks; any may be NULL. A non-zero return stops the parser: feed()
 *  then returns that value. */
typedef struct {
	/** A part starts: its form field `name` and `filename` from
	 *  Content-Disposition (NULL when absent); valid during the call. */
	int (*on_part_begin)(const char *name, const char *filename, void *ud);
	/** Body bytes of the current part, in order. */
	int (*on_part_data)(const char *data, size_t len, void *ud);
	/** The current part ended (its delimiter was seen). */
	int (*on_part_end)(void *ud);
} sbxd_multipart_callbacks;

/**
 * Reads the boundary parameter of a Content-Type value if its media type
 * is multipart/form-data (case-insensitive; quoted or token boundary).
 * `*boundary` receives a malloc'd copy (caller frees).
 * @return 0; ASB_ENOTFOUND (another media type, or no Content-Type);
 *         ASB_EINVAL ("multipart/form-data" without a usable boundary:
 *         missing, empty or longer than 70 bytes); ASB_ENOMEM.
 */
int sbxd_multipart_boundary(const char *content_type, char **boundary);

/** Creates a parser for `boundary` (copied). Returns 0, ASB_EINVAL, ASB_ENOMEM. */
int sbxd_multipart_new(sbxd_multipart **out, const char *boundary,
                       const sbxd_multipart_callbacks *cb, void *ud);

/**
 * Feeds the next `len` bytes of the body. Returns 0; ASB_EINVAL with the
 * message "invalid multipart body: <why>"; ASB_ENOMEM; or a callback's
 * non-zero value. After an error the parser refuses further input.
 */
int sbxd_multipart_feed(sbxd_multipart *m, const char *data, size_t len);

/** The body ended: 0 when the closing delimiter was seen, else ASB_EINVAL
 *  ("invalid multipart body: unexpected end of body"). */
int sbxd_multipart_finish(sbxd_multipart *m);

/** Frees; NULL is accepted. */
void sbxd_multipart_free(sbxd_multipart *m);

#endif
