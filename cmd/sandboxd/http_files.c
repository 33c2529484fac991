/*
 * http_files.c - sandboxd's REST API (docs/upstream.md#sandboxd-rest-api): files under
 * /v1/files/{path} (GET and HEAD: a file's bytes or a directory listing;
 * PUT: an atomic write, raw or multipart; DELETE), /v1/health and
 * /v1/metadata. Also the streamed file download shared with the
 * python-runtime's /download (sbxd_serve_file).
 *
 * Downloads and uploads stream: a download goes out by sendfile(2) in
 * ranges of 256 KiB, at most two queued (each one done is progress for
 * --stall-timeout), with no copy through user space; a small file (128
 * KiB or less, which goes out with the head in one write) or a TLS
 * connection reads 128 KiB at a time and waits while more than 256 KiB is
 * queued for the socket (the kernel's socket buffers hold more; 1024
 * stalled downloads hold 400 MiB at most); an upload goes
 * through http_upload.c. Each holds a transfer slot (http.h) and is cut
 * by --stall-timeout when its client stops reading or sending.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "asb/json.h"

#include "asb/common.h"
#include "codec.h"
#include "fsops.h"
#include "http.h"
#include "http_files.h"
#include "http_upload.h"
#include "multipart.h"

#define FILES_PREFIX "/v1/files/"
#define READ_CHUNK (128 * 1024)
#define WRITE_HIGH (256 * 1024)
#define FILE_RANGE (256 * 1024)
#define FILE_HIGH (2 * FILE_RANGE)

/* ---- downloads ---- */

typedef struct {
	httpd_exchange *ex;
	sbxd_daemon *d;
	sbxd_stall *stall;       /* --stall-timeout */
	int fd;
	uint64_t off, remaining;
	bool finished;
	bool by_sendfile;
} download;

static void dl_pump(download *s);

static void dl_written(httpd_exchange *ex, void *ud)
{
	download *s = ud;
	sbxd_stall_progress(s->stall);
	dl_pump(s);
}

static void dl_pump(download *s)
{
	while (s->by_sendfile && s->remaining > 0 && httpd_exchange_pending(s->ex) < FILE_HIGH) {
		size_t want = s->remaining < FILE_RANGE ? (size_t)s->remaining : FILE_RANGE;
		if (httpd_exchange_write_file(s->ex, s->fd, s->off, want, dl_written, s) != 0)
			return;  /* the exchange ended; on_close frees */
		s->off += want;
		s->remaining -= want;
	}
	while (s->remaining > 0 && httpd_exchange_pending(s->ex) < WRITE_HIGH) {
		size_t want = s->remaining < READ_CHUNK ? (size_t)s->remaining : READ_CHUNK;
		/* a buffer per chunk, handed to the connection: no copy of it */
		char *buf = malloc(want);
		if (!buf) {
			httpd_exchange_abort(s->ex);
			return;
		}
		ssize_t n;
		while ((n = pread(s->fd, buf, want, (off_t)s->off)) < 0 && errno == EINTR)
			;
		if (n <= 0) {
			/* the file shrank or failed under us: the length sent is a lie now */
			free(buf);
			httpd_exchange_abort(s->ex);
			return;
		}
		if (httpd_exchange_write_owned(s->ex, buf, (size_t)n, dl_written, s) != 0)
			return;  /* the exchange ended; on_close frees */
		s->off += (uint64_t)n;
		s->remaining -= (uint64_t)n;
	}
	if (s->remaining == 0 && !s->finished) {
		s->finished = true;
		httpd_exchange_finish(s->ex);
	}
}

static void dl_close(httpd_exchange *ex, int reason, void *ud)
{
	download *s = ud;
	sbxd_stall_free(s->stall);
	sbxd_transfer_release(s->d);
	close(s->fd);
	free(s);
}

static void http_date(time_t t, char *buf, size_t cap)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, cap, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* The single range of a Range header (RFC 9110 section 14.2): 1 with
 * [*start, *end], 0 to serve the whole file (no header, several ranges,
 * another unit), -1 unsatisfiable or malformed (416). */
static int parse_range(const char *h, uint64_t size, uint64_t *start, uint64_t *end)
{
	if (!h || strncmp(h, "bytes=", 6) != 0)
		return 0;
	h += 6;
	if (strchr(h, ','))
		return 0;
	while (*h == ' ')
		h++;
	char *e;
	if (*h == '-') {
		if (!isdigit((unsigned char)h[1]))
			return -1;
		errno = 0;
		uint64_t n = strtoull(h + 1, &e, 10);
		if (errno || *e || n == 0 || size == 0)
			return -1;
		*start = n >= size ? 0 : size - n;
		*end = size - 1;
		return 1;
	}
	if (!isdigit((unsigned char)*h))
		return -1;
	errno = 0;
	uint64_t a = strtoull(h, &e, 10);
	if (errno || *e != '-')
		return -1;
	h = e + 1;
	uint64_t b = size ? size - 1 : 0;
	if (*h) {
		if (!isdigit((unsigned char)*h))
			return -1;
		b = strtoull(h, &e, 10);
		if (errno || *e || b < a)
			return -1;
		if (b >= size)
			b = size - 1;
	}
	if (a >= size)
		return -1;
	*start = a;
	*end = b;
	return 1;
}

void sbxd_serve_file(sbxd_daemon *d, httpd_exchange *ex, int fd, const struct stat *st,
                     const char *disposition, bool rest_errors)
{
	const httpd_request *req = httpd_exchange_request(ex);
	httpd_response *res = httpd_exchange_response(ex);
	char date[64];
	http_date(st->st_mtim.tv_sec, date, sizeof(date));
	httpd_response_add_header(res, "Content-Type", "application/octet-stream");
	httpd_response_add_header(res, "Last-Modified", date);
	httpd_response_add_header(res, "Accept-Ranges", "bytes");
	if (disposition)
		httpd_response_add_header(res, "Content-Disposition", disposition);
	uint64_t size = (uint64_t)st->st_size;
	const char *ims = httpd_request_header(req, "If-Modified-Since");
	if (ims && !httpd_request_header(req, "If-None-Match")) {
		struct tm tm;
		memset(&tm, 0, sizeof(tm));
		const char *end = strptime(ims, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (end && !*end && st->st_mtim.tv_sec <= timegm(&tm)) {
			close(fd);
			httpd_response_set_status(res, 304);
			httpd_exchange_finish(ex);
			return;
		}
	}
	uint64_t start = 0, last = size ? size - 1 : 0;
	int r = parse_range(httpd_request_header(req, "Range"), size, &start, &last);
	if (r < 0) {
		char cr[64];
		snprintf(cr, sizeof(cr), "bytes */%" PRIu64, size);
		httpd_response_add_header(res, "Content-Range", cr);
		close(fd);
		httpd_exchange_respond(ex, 416, "text/plain; charset=utf-8",
		                          "invalid range\n", 14);
		return;
	}
	uint64_t len = size;
	if (r > 0) {
		char cr[96];
		snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, start, last, size);
		httpd_response_add_header(res, "Content-Range", cr);
		httpd_response_set_status(res, 206);
		len = last - start + 1;
	}
	if (strcmp(httpd_request_method(req), "HEAD") == 0 || len == 0) {
		close(fd);
		httpd_exchange_send_head(ex, (int64_t)len);
		httpd_exchange_finish(ex);
		return;
	}
	int rc = sbxd_transfer_acquire(d);
	if (rc) {
		close(fd);
		if (rest_errors)
			sbxd_respond_k8s_error(ex, rc);
		else
			sbxd_respond_message(ex, 429, asb_error_last()->message);
		return;
	}
	download *s = calloc(1, sizeof(*s));
	if (!s) {
		sbxd_transfer_release(d);
		close(fd);
		sbxd_respond_error(ex, 500, "INTERNAL", "out of memory");
		return;
	}
	s->ex = ex;
	s->d = d;
	s->stall = sbxd_stall_start(d, ex, d->flags->stall_timeout_ms, true);
	s->fd = fd;
	s->off = start;
	s->remaining = len;
	httpd_exchange_on_close(ex, dl_close, s);
	/* a big file on a slow link may take long: no overall deadline */
	httpd_exchange_set_timeout(ex, 0);
	if (httpd_exchange_send_head(ex, (int64_t)len) != 0)
		return;
	s->by_sendfile = len > READ_CHUNK && httpd_exchange_can_write_file(ex);
	dl_pump(s);
}

/* ---- listings, off the loop ---- */

typedef struct {
	uv_work_t work;
	sbxd_daemon *d;
	httpd_exchange *ex;   /* NULL once the exchange closed */
	sbxd_listing_kind kind;
	char *rel, *shown;
	bool working;
	/* the worker's result */
	int rc;
	char *body;
	size_t len;
	char reason[64], msg[512];  /* the worker thread's last error, carried over */
} listing;

static void listing_free(listing *l)
{
	free(l->rel);
	free(l->shown);
	free(l->body);
	free(l);
}

static void listing_close(httpd_exchange *ex, int reason, void *ud)
{
	listing *l = ud;
	l->ex = NULL;
	if (!l->working)
		listing_free(l);  /* else after_list frees */
}

static void list_work(uv_work_t *w)
{
	listing *l = w->data;
	sbxd_entry *e;
	size_t n;
	l->rc = sbxd_list(l->d->root, l->rel,
	                  l->kind == SBXD_LISTING_REST ? SBXD_LIST_BY_NAME : SBXD_LIST_DIR_ORDER, &e, &n);
	if (l->rc == 0) {
		l->body = l->kind == SBXD_LISTING_REST ? sbxd_listing_json(l->shown, e, n, &l->len)
		                                       : sbxd_runtime_list_json(e, n, &l->len);
		sbxd_entries_free(e, n);
		if (!l->body)
			l->rc = asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	}
	if (l->rc) {
		const asb_error *err = asb_error_last();
		snprintf(l->reason, sizeof(l->reason), "%s", err->reason);
		snprintf(l->msg, sizeof(l->msg), "%s", err->message);
	}
}

static void list_answer_error(listing *l)
{
	/* the worker's error, recorded again on this thread for the answers */
	int rc = asb_error_set(l->rc, 0, l->reason[0] ? l->reason : NULL, "%s", l->msg);
	if (l->kind == SBXD_LISTING_REST) {
		sbxd_respond_k8s_error(l->ex, rc);
	} else if (rc == ASB_EFORBIDDEN && strcmp(l->reason, SBXD_REASON_ESCAPE) == 0) {
		sbxd_respond_message(l->ex, 403, "Access denied");
	} else if (rc == ASB_EINVAL || rc == ASB_ENOTFOUND) {
		sbxd_respond_message(l->ex, 404, "Path is not a directory");
	} else {
		char msg[600];
		snprintf(msg, sizeof(msg), "List files failed: %s", l->msg);
		sbxd_respond_message(l->ex, 500, msg);
	}
}

static void after_list(uv_work_t *w, int status)
{
	listing *l = w->data;
	l->working = false;
	if (!l->ex) {
		listing_free(l);
		return;
	}
	if (status != 0 && l->rc == 0)
		l->rc = asb_error_set(ASB_ERROR, 500, NULL, "the listing was cancelled");
	if (l->rc == 0) {
		sbxd_respond_json(l->ex, 200, l->body, l->len);
		free(l->body);
		l->body = NULL;
	} else {
		list_answer_error(l);
	}
}

void sbxd_list_answer(sbxd_daemon *d, httpd_exchange *ex, char *rel, char *shown,
                      sbxd_listing_kind kind)
{
	listing *l = calloc(1, sizeof(*l));
	if (!l) {
		free(rel);
		free(shown);
		if (kind == SBXD_LISTING_REST)
			sbxd_respond_error(ex, 500, "INTERNAL", "out of memory");
		else
			sbxd_respond_message(ex, 500, "out of memory");
		return;
	}
	l->d = d;
	l->ex = ex;
	l->kind = kind;
	l->rel = rel;
	l->shown = shown;
	l->work.data = l;
	httpd_exchange_on_close(ex, listing_close, l);
	l->working = true;
	if (uv_queue_work(httpd_exchange_loop(ex), &l->work, list_work, after_list) != 0) {
		l->working = false;
		l->rc = asb_error_set(ASB_ERROR, 500, NULL, "cannot queue the listing");
		snprintf(l->msg, sizeof(l->msg), "%s", asb_error_last()->message);
		list_answer_error(l);
	}
}

/* ---- GET / HEAD ---- */

static void files_get(httpd_exchange *ex, void *ud)
{
	sbxd_daemon *d = ud;
	char *rel, *shown;
	int rc = sbxd_request_path(d, ex, FILES_PREFIX, 1, SBXD_CLEAN_STRIP_ROOT, &rel, &shown);
	if (rc) {
		sbxd_respond_k8s_error(ex, rc);
		return;
	}
	struct stat st;
	rc = sbxd_stat(d->root, rel, &st);
	if (rc == 0 && S_ISDIR(st.st_mode)) {
		sbxd_list_answer(d, ex, rel, shown, SBXD_LISTING_REST);
		return;
	} else if (rc == 0) {
		int fd;
		rc = sbxd_open_read(d->root, rel, &fd, &st);
		if (rc == 0)
			sbxd_serve_file(d, ex, fd, &st, NULL, true);
	}
	if (rc)
		sbxd_respond_k8s_error(ex, rc);
	free(rel);
	free(shown);
}

/* ---- PUT ---- */

static void put_fail(httpd_exchange *ex, int rc, void *ud)
{
	sbxd_respond_k8s_error(ex, rc);
}

static void put_no_file(httpd_exchange *ex, void *ud)
{
	sbxd_respond_error(ex, 400, "INVALID_ARGUMENT",
	                   "multipart body is missing the required \"file\" part");
}

static void put_done(httpd_exchange *ex, int rc, const char *msg, void *ud)
{
	if (rc)
		sbxd_respond_error(ex, 500, "INTERNAL", msg);
	else
		httpd_exchange_respond(ex, 204, NULL, NULL, 0);
}

static const sbxd_upload_ops put_ops = { NULL, put_fail, put_no_file, put_done, NULL };

static bool valid_mode(const char *m)
{
	return strlen(m) == 4 && m[0] == '0' && m[1] >= '0' && m[1] <= '7' && m[2] >= '0' &&
	       m[2] <= '7' && m[3] >= '0' && m[3] <= '7';
}

static void files_put(httpd_exchange *ex, void *ud)
{
	sbxd_daemon *d = ud;
	const httpd_request *req = httpd_exchange_request(ex);
	mode_t mode = 0644;
	/* check order of upstream: mode, path, directory, body */
	char *m = sbxd_query_param(httpd_request_query(req), "mode");
	if (m) {
		if (!valid_mode(m)) {
			char msg[160];
			snprintf(msg, sizeof(msg), "mode \"%.64s\" must match ^0[0-7]{3}$", m);
			free(m);
			sbxd_respond_error(ex, 400, "INVALID_ARGUMENT", msg);
			return;
		}
		mode = (mode_t)strtol(m, NULL, 8);
		free(m);
	}
	char *rel;
	int rc = sbxd_request_path(d, ex, FILES_PREFIX, 1, SBXD_CLEAN_STRIP_ROOT, &rel, NULL);
	if (rc) {
		sbxd_respond_k8s_error(ex, rc);
		return;
	}
	sbxd_writer *w = NULL;
	if (strcmp(rel, ".") == 0)
		rc = asb_error_set(ASB_EINVAL, 400, SBXD_REASON_ISDIR, "target path is a directory");
	else
		rc = sbxd_writer_begin(&w, d->root, rel, mode);
	free(rel);
	char *boundary = NULL;
	if (rc == 0) {
		rc = sbxd_multipart_boundary(httpd_request_header(req, "Content-Type"), &boundary);
		if (rc == ASB_ENOTFOUND)
			rc = 0;  /* not multipart: the raw body is the content */
	}
	if (rc) {
		sbxd_writer_free(w);
		sbxd_respond_k8s_error(ex, rc);
		return;
	}
	sbxd_upload_start(d, ex, w, boundary, &put_ops, NULL);
	free(boundary);
}

/* ---- DELETE ---- */

/* Go's strconv.ParseBool. */
static int parse_go_bool(const char *s, bool *out)
{
	static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True", NULL };
	static const char *const f[] = { "0", "f", "F", "FALSE", "false", "False", NULL };
	for (int i = 0; t[i]; i++)
		if (strcmp(s, t[i]) == 0)
			return *out = true, 0;
	for (int i = 0; f[i]; i++)
		if (strcmp(s, f[i]) == 0)
			return *out = false, 0;
	return -1;
}

static void files_delete(httpd_exchange *ex, void *ud)
{
	sbxd_daemon *d = ud;
	char *rel;
	int rc = sbxd_request_path(d, ex, FILES_PREFIX, 1, SBXD_CLEAN_STRIP_ROOT, &rel, NULL);
	if (rc) {
		sbxd_respond_k8s_error(ex, rc);
		return;
	}
	/* existence first (lstat: a dangling link exists), then `recursive` */
	rc = sbxd_exists_nofollow(d->root, rel);
	if (rc == 0)
		rc = sbxd_confine_error(ENOENT, NULL);
	if (rc < 0) {
		free(rel);
		sbxd_respond_k8s_error(ex, rc);
		return;
	}
	bool recursive = false;
	char *r = sbxd_query_param(httpd_request_query(httpd_exchange_request(ex)),
	                           "recursive");
	if (r && parse_go_bool(r, &recursive) < 0) {
		char msg[160];
		snprintf(msg, sizeof(msg), "recursive \"%.64s\" must be a boolean", r);
		free(r);
		free(rel);
		sbxd_respond_error(ex, 400, "INVALID_ARGUMENT", msg);
		return;
	}
	free(r);
	rc = sbxd_delete(d->root, rel, recursive);
	free(rel);
	if (rc)
		sbxd_respond_k8s_error(ex, rc);
	else
		httpd_exchange_respond(ex, 204, NULL, NULL, 0);
}

/* ---- health, metadata ---- */

static void json_reply(httpd_response *res, int status, const char *body, size_t len)
{
	httpd_response_set_status(res, status);
	httpd_response_add_header(res, "Content-Type", "application/json");
	httpd_response_write(res, body, len);
}

static void health(const httpd_request *req, httpd_response *res, void *ud)
{
	sbxd_daemon *d = ud;
	if (atomic_load(&d->shutting_down)) {
		size_t len;
		char *b = sbxd_error_body("UNAVAILABLE", "sandboxd is shutting down", &len);
		if (b)
			json_reply(res, 503, b, len);
		free(b);
		return;
	}
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "status", "ok");
	cJSON_AddNumberToObject(j, "uptime_seconds", (double)(time(NULL) - d->started));
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (s) {
		size_t n = strlen(s);
		json_reply(res, 200, s, n);
		httpd_response_write(res, "\n", 1);
	}
	free(s);
}

static void metadata(const httpd_request *req, httpd_response *res, void *ud)
{
	sbxd_daemon *d = ud;
	json_reply(res, 200, d->metadata, d->metadata_len);
}

extern char **environ;

int sbxd_metadata_build(sbxd_daemon *d)
{
	static const char *const withheld[] = { "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CRED",
	                                        "KEY", "AUTH", "BEARER", "PRIVATE", "CERT", NULL };
	const char *prefix = d->flags->metadata_env_prefix;
	size_t pl = strlen(prefix);
	cJSON *j = cJSON_CreateObject();
	cJSON *env = cJSON_AddObjectToObject(j, "env");
	if (!env) {
		cJSON_Delete(j);
		return ASB_ENOMEM;
	}
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || strncmp(*e, prefix, pl) != 0)
			continue;
		char name[512];
		size_t nl = (size_t)(eq - *e);
		if (nl >= sizeof(name))
			continue;
		memcpy(name, *e, nl);
		name[nl] = '\0';
		bool secret = false;
		for (int i = 0; withheld[i] && !secret; i++)
			secret = strcasestr(name, withheld[i]) != NULL;
		if (secret || cJSON_GetObjectItemCaseSensitive(env, name))
			continue;
		char *v = sbxd_utf8_clean(eq + 1, strlen(eq + 1));
		char *n = sbxd_utf8_clean(name, nl);
		if (v && n)
			cJSON_AddStringToObject(env, n, v);
		free(v);
		free(n);
	}
	size_t n = 0;
	char *t = asb_json_print(j, true, &n);
	if (!t)
		return ASB_ENOMEM;
	d->metadata = t;
	d->metadata_len = n;
	return 0;
}

int sbxd_http_files_routes(sbxd_daemon *d, httpd_server *s)
{
	int rc;
	if ((rc = httpd_server_route_stream(s, "GET", FILES_PREFIX "*", files_get, d)) ||
	    (rc = httpd_server_route_stream(s, "PUT", FILES_PREFIX "*", files_put, d)) ||
	    (rc = httpd_server_route_stream(s, "DELETE", FILES_PREFIX "*", files_delete, d)) ||
	    (rc = httpd_server_route(s, "GET", "/v1/health", health, d)) ||
	    (rc = httpd_server_route(s, "GET", "/v1/metadata", metadata, d)))
		return rc;
	return 0;
}
