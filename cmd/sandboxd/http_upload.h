/*
 * http_upload.h - a request body written atomically into a file beneath the
 * root, as it arrives: the raw body, or the first multipart part named
 * "file". Shared by PUT /v1/files (REST) and POST /upload (python-runtime),
 * which differ only in how they open the file and word their answers.
 * On the exchange's loop thread only.
 */
#ifndef SBXD_HTTP_UPLOAD_H
#define SBXD_HTTP_UPLOAD_H

#include <stdint.h>
#include "httpd/exchange.h"
#include "fsops.h"

struct sbxd_daemon;

typedef struct {
	/** The part named "file" starts (multipart only; the first one): open
	 *  its writer into `*w`. Returns 0 or an error code with the last error
	 *  set (then `fail` answers). NULL: the writer given to start is used. */
	int (*open_part)(const char *filename, sbxd_writer **w, void *ud);
	/** Answers an error (`rc`, the last error) in the API's shape. */
	void (*fail)(httpd_exchange *ex, int rc, void *ud);
	/** Answers a multipart body without a "file" part. */
	void (*no_file)(httpd_exchange *ex, void *ud);
	/** Answers the end: 0 when the file is in place, else the commit's
	 *  code and message. */
	void (*done)(httpd_exchange *ex, int rc, const char *msg, void *ud);
	/** The upload is over (answered or the client gone): free `ud`. May be NULL. */
	void (*release)(void *ud);
} sbxd_upload_ops;

/**
 * Reads the body of `ex` into a file: raw into `w` (taken over; may be
 * NULL for multipart with open_part) when `boundary` is NULL, else the
 * first multipart part named "file". Bodies beyond --max-upload-bytes of
 * `d` get 413; a body that stops arriving for --stall-timeout is cut; it
 * holds a transfer slot of `d` (none free: `fail` with
 * ASB_ETOOMANYREQUESTS). The fsync and rename of the end run on libuv's
 * worker pool. Answers through `ops` exactly once, unless the client goes
 * first.
 */
void sbxd_upload_start(struct sbxd_daemon *d, httpd_exchange *ex, sbxd_writer *w,
                       const char *boundary, const sbxd_upload_ops *ops, void *ud);

#endif
