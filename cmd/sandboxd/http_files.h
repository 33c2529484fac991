/*
 * http_files.h - the streamed file response shared by the REST API's GET
 * /v1/files and the python-runtime's GET /download (http_files.c).
 */
#ifndef SBXD_HTTP_FILES_H
#define SBXD_HTTP_FILES_H

#include <sys/stat.h>
#include "k8s/httpexchange.h"

/**
 * Answers with the regular file open on `fd` (taken over: closed when
 * done) and its `st`: application/octet-stream, Last-Modified,
 * If-Modified-Since (304), a single Range (206, 416), HEAD without
 * reading; the body read and written piece by piece with backpressure.
 * `disposition` (may be NULL) is a Content-Disposition value.
 */
void sbxd_serve_file(k8s_http_exchange *ex, int fd, const struct stat *st,
                     const char *disposition);

#endif
