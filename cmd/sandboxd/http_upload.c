/*
 * http_upload.c - request bodies into files, atomically and streamed
 * (http_upload.h): each piece of the body is written as it arrives (or fed
 * to the multipart reader, which hands the "file" part's bytes on), and the
 * end's fsync + rename runs on libuv's worker pool so that the loop keeps
 * serving while the disk flushes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asb/common.h"
#include "http.h"
#include "http_upload.h"
#include "multipart.h"

typedef struct {
	httpd_exchange *ex;   /* NULL once the exchange closed */
	sbxd_daemon *d;          /* holds a transfer slot of it */
	sbxd_stall *stall;       /* --stall-timeout on the body */
	const sbxd_upload_ops *ops;
	void *ud;
	sbxd_writer *w;
	sbxd_multipart *mp;
	bool in_file, got_file, failed, working;
	int commit_rc;
	char commit_msg[256];
	uv_work_t work;
} upload;

static void up_free(upload *u)
{
	sbxd_stall_free(u->stall);
	sbxd_transfer_release(u->d);
	sbxd_writer_free(u->w);
	sbxd_multipart_free(u->mp);
	if (u->ops->release)
		u->ops->release(u->ud);
	free(u);
}

static void up_close(httpd_exchange *ex, int reason, void *ud)
{
	upload *u = ud;
	u->ex = NULL;
	if (!u->working)
		up_free(u);  /* else after_commit frees */
}

static void up_fail(upload *u, int rc)
{
	if (u->failed || !u->ex)
		return;
	u->failed = true;
	u->ops->fail(u->ex, rc, u->ud);
}

static int part_begin(const char *name, const char *filename, void *ud)
{
	upload *u = ud;
	u->in_file = !u->got_file && name && strcmp(name, "file") == 0;
	if (u->in_file && u->ops->open_part)
		return u->ops->open_part(filename, &u->w, u->ud);
	return 0;
}

static int part_data(const char *data, size_t len, void *ud)
{
	upload *u = ud;
	return u->in_file ? sbxd_writer_write(u->w, data, len) : 0;
}

static int part_end(void *ud)
{
	upload *u = ud;
	if (u->in_file)
		u->got_file = true;
	u->in_file = false;
	return 0;
}

static void on_data(httpd_exchange *ex, const char *data, size_t len, void *ud)
{
	upload *u = ud;
	sbxd_stall_progress(u->stall);
	if (u->failed)
		return;
	int rc = u->mp ? sbxd_multipart_feed(u->mp, data, len) : sbxd_writer_write(u->w, data, len);
	if (rc)
		up_fail(u, rc);
}

static void commit_work(uv_work_t *w)
{
	upload *u = w->data;
	u->commit_rc = sbxd_writer_commit(u->w);
	if (u->commit_rc)
		snprintf(u->commit_msg, sizeof(u->commit_msg), "%s", asb_error_last()->message);
}

static void after_commit(uv_work_t *w, int status)
{
	upload *u = w->data;
	u->working = false;
	if (!u->ex) {
		up_free(u);
		return;
	}
	u->ops->done(u->ex, u->commit_rc, u->commit_msg, u->ud);
}

static void on_end(httpd_exchange *ex, void *ud)
{
	upload *u = ud;
	sbxd_stall_pause(u->stall, true);  /* the body is whole */
	if (u->failed)
		return;
	if (u->mp) {
		int rc = sbxd_multipart_finish(u->mp);
		if (rc) {
			up_fail(u, rc);
			return;
		}
		if (!u->got_file) {
			u->failed = true;
			u->ops->no_file(ex, u->ud);
			return;
		}
	}
	u->work.data = u;
	u->working = true;
	if (uv_queue_work(httpd_exchange_loop(ex), &u->work, commit_work, after_commit) != 0) {
		u->working = false;
		up_fail(u, asb_error_set(ASB_ERROR, 500, NULL, "cannot queue the write"));
	}
}

void sbxd_upload_start(sbxd_daemon *d, httpd_exchange *ex, sbxd_writer *w,
                       const char *boundary, const sbxd_upload_ops *ops, void *ud)
{
	int rc = sbxd_transfer_acquire(d);
	upload *u = rc ? NULL : calloc(1, sizeof(*u));
	if (!u) {
		if (!rc) {
			sbxd_transfer_release(d);
			rc = asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
		}
		sbxd_writer_free(w);
		ops->fail(ex, rc, ud);
		if (ops->release)
			ops->release(ud);
		return;
	}
	u->ex = ex;
	u->d = d;
	u->ops = ops;
	u->ud = ud;
	u->w = w;
	if (boundary) {
		static const sbxd_multipart_callbacks cbs = { part_begin, part_data, part_end };
		rc = sbxd_multipart_new(&u->mp, boundary, &cbs, u);
		if (rc) {
			ops->fail(ex, rc, ud);
			up_free(u);
			return;
		}
	}
	httpd_exchange_on_close(ex, up_close, u);
	/* a big body on a slow link may take long: no overall deadline */
	httpd_exchange_set_timeout(ex, 0);
	httpd_exchange_set_max_body(ex, d->flags->max_upload_bytes);
	u->stall = sbxd_stall_start(d, ex, d->flags->stall_timeout_ms, false);
	static const httpd_body_reader reader = { on_data, on_end, NULL };
	httpd_exchange_read_start(ex, &reader, u);
}
