/*
 * http_files.h - the streamed file response shared by the REST API's GET
 * /v1/files and the python-runtime's GET /download (http_files.c).
 */
#ifndef SBXD_HTTP_FILES_H
#define SBXD_HTTP_FILES_H

#include <stdbool.h>
#include <sys/stat.h>
#include "httpd/exchange.h"

struct sbxd_daemon;

/**
 * Answers with the regular file open on `fd` (taken over: closed when
 * done) and its `st`: application/octet-stream, Last-Modified,
 * If-Modified-Since (304), a single Range (206, 416), HEAD without
 * reading; the body read and written piece by piece with backpressure,
 * holding a transfer slot of `d` (none free: 429, in the REST shape when
 * `rest_errors`, else `{"message"}`) and cut by --stall-timeout when the
 * client stops reading. `disposition` (may be NULL) is a
 * Content-Disposition value.
 */
void sbxd_serve_file(struct sbxd_daemon *d, httpd_exchange *ex, int fd, const struct stat *st,
                     const char *disposition, bool rest_errors);

/** Which API's answer a listing gets. */
typedef enum { SBXD_LISTING_REST, SBXD_LISTING_RUNTIME } sbxd_listing_kind;

/**
 * Answers the listing of directory `rel` (cleaned; taken over, as
 * `shown`, the path as the client wrote it, which may be NULL for the
 * python-runtime): REST's DirectoryListing sorted by name, or the
 * python-runtime's array in directory order, with each API's errors.
 * Reading the directory and encoding the answer run on libuv's worker
 * pool: a directory of 300,000 entries takes a second or more, during
 * which the loop serves everyone else.
 */
void sbxd_list_answer(struct sbxd_daemon *d, httpd_exchange *ex, char *rel, char *shown,
                      sbxd_listing_kind kind);

#endif
