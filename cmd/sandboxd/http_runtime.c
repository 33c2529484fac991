/*
 * http_runtime.c - the legacy python-runtime API (docs/upstream.md#python-runtime-api),
 * byte-compatible where clients look: GET /, POST /execute, POST /upload,
 * GET /download/{path}, /list/{path}, /exists/{path}. Answers and error
 * bodies are FastAPI's shapes: {"message": ...}, 422 {"detail": [...]}
 * for a malformed request; /execute always answers 200 and reports a
 * failure as exit_code 1 with "Failed to execute command: <reason>".
 *
 * Paths: the handler decodes the (already decoded) path parameter once
 * more, as upstream does, strips leading slashes, and resolves it beneath
 * the root (confine.h); an escape is 403 {"message":"Access denied"}.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "asb/common.h"
#include "codec.h"
#include "fsops.h"
#include "http.h"
#include "http_answer.h"
#include "http_files.h"
#include "http_upload.h"
#include "multipart.h"
#include "shlex.h"

#define REQUEST_LIMIT (1024 * 1024)
#define DEFAULT_TIMEOUT_S 300.0

/* ---- GET / ---- */

static void root_route(httpd_exchange *ex, void *ud)
{
	static const char body[] = "{\"status\":\"ok\",\"message\":\"Sandbox Runtime is active.\"}";
	sbxd_respond_json(ex, 200, body, sizeof(body) - 1);
}

/* ---- POST /execute ---- */

typedef struct {
	sbxd_run run;
	sbxd_daemon *d;
	httpd_exchange *ex;
	sbxd_bytes out, err;
	double timeout_s;
	char *cmd_repr;          /* Python's repr of the argv, for the timeout message */
	char *argv0;             /* for a start error's message */
	sbxd_answer answer;      /* streamed from out and err (http_answer.h) */
	sbxd_stall *stall;       /* --stall-timeout on the answer */
	char tail[32];
} exec_req;

static void exec_free(exec_req *r)
{
	sbxd_run_release(&r->run);
	sbxd_stall_free(r->stall);
	sbxd_answer_clear(&r->answer);
	sbxd_bytes_free(&r->out);
	sbxd_bytes_free(&r->err);
	free(r->cmd_repr);
	free(r->argv0);
	free(r);
}

static void exec_close(httpd_exchange *ex, int reason, void *ud)
{
	exec_req *r = ud;
	if (r->run.proc && !sbxd_proc_done(r->run.proc))
		asb_log(r->d->log, ASB_LOG_INFO, "client went away: process killed", "api",
		        "runtime-execute", NULL);
	exec_free(r);  /* kills the whole tree if the command still runs */
}

/* 200 {"stdout": "", "stderr": "Failed to execute command: <why>", "exit_code": 1} */
static void exec_failed(httpd_exchange *ex, const char *why)
{
	char msg[1024];
	snprintf(msg, sizeof(msg), "Failed to execute command: %s", why);
	size_t len;
	char *b = sbxd_runtime_execute_response("", 0, msg, strlen(msg), 1, &len);
	if (b)
		sbxd_respond_json(ex, 200, b, len);
	else
		sbxd_respond_message(ex, 500, "out of memory");
	free(b);
}

static void exec_output(sbxd_proc *p, sbxd_stream s, const char *d, size_t n, void *ud)
{
	exec_req *r = ud;
	sbxd_bytes_add(s == SBXD_STDERR ? &r->err : &r->out, d, n);
}

static void exec_exit(sbxd_proc *p, const sbxd_exit *ex, void *ud)
{
	exec_req *r = ud;
	sbxd_run_release(&r->run);
	if (ex->timed_out) {
		char why[768];
		snprintf(why, sizeof(why), "Command '%s' timed out after %g seconds", r->cmd_repr,
		         r->timeout_s);
		exec_failed(r->ex, why);
		return;
	}
	/* Python's returncode: -N for a death by signal N; the answer of
	 * sbxd_runtime_execute_response(), in pieces (codec.h) */
	size_t tl = sbxd_runtime_answer_tail(ex->signal ? -ex->signal : ex->exit_code, r->tail,
	                                     sizeof(r->tail));
	static const char head[] = SBXD_RUNTIME_ANSWER_HEAD, mid[] = SBXD_RUNTIME_ANSWER_MID;
	sbxd_answer *a = &r->answer;
	a->stall = r->stall = sbxd_stall_start(r->d, r->ex, r->d->flags->stall_timeout_ms, true);
	sbxd_answer_add(a, SBXD_PART_LITERAL, head, sizeof(head) - 1, NULL, NULL);
	sbxd_answer_add(a, SBXD_PART_TEXT, r->out.data, r->out.len, &r->out, NULL);
	sbxd_answer_add(a, SBXD_PART_LITERAL, mid, sizeof(mid) - 1, NULL, NULL);
	sbxd_answer_add(a, SBXD_PART_TEXT, r->err.data, r->err.len, &r->err, NULL);
	sbxd_answer_add(a, SBXD_PART_LITERAL, r->tail, tl, NULL, NULL);
	sbxd_answer_send(a, r->ex, false);
}

/* The answer when the command cannot start, in Python's words where
 * upstream's runtime has them. */
static void exec_start_failed(httpd_exchange *ex, int rc, const char *argv0)
{
	char why[512];
	int err = rc == ASB_ENOTFOUND ? 2 : rc == ASB_EFORBIDDEN ? 13 : 0;
	if (err)
		snprintf(why, sizeof(why), "[Errno %d] %s: '%s'", err,
		         err == 2 ? "No such file or directory" : "Permission denied", argv0);
	else
		snprintf(why, sizeof(why), "%s", asb_error_last()->message);
	exec_failed(ex, why);
}

/* The exec's outcome, asynchronously: the loop serves other requests
 * while a keeper starts the command. */
static void exec_start(sbxd_proc *p, int rc, void *ud)
{
	exec_req *r = ud;
	if (!rc)
		return;
	exec_start_failed(r->ex, rc, r->argv0 ? r->argv0 : "");  /* on_close comes later */
	sbxd_run_release(&r->run);  /* the process and its slot */
}

static const sbxd_proc_callbacks exec_cbs = { exec_output, exec_exit, exec_start };

/* SANDBOX_EXEC_TIMEOUT_SECONDS, read at each request as upstream does. */
static double exec_timeout(sbxd_daemon *d)
{
	const char *v = getenv("SANDBOX_EXEC_TIMEOUT_SECONDS");
	if (!v || !*v)
		return DEFAULT_TIMEOUT_S;
	char *end;
	double t = strtod(v, &end);
	if (*end || !isfinite(t) || t <= 0) {
		asb_log(d->log, ASB_LOG_WARN, "invalid SANDBOX_EXEC_TIMEOUT_SECONDS, using 300",
		        "value", v, NULL);
		return DEFAULT_TIMEOUT_S;
	}
	return t;
}

/* Python's repr() of a list of str, e.g. ['sleep', '10']. */
static char *argv_repr(char **argv)
{
	cJSON *a = cJSON_CreateArray();
	for (char **p = argv; *p; p++)
		cJSON_AddItemToArray(a, cJSON_CreateString(*p));
	char *s = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	if (!s)
		return NULL;
	/* JSON's ["a","b"] to Python's ['a', 'b'] (close enough for a message) */
	size_t n = strlen(s);
	char *o = malloc(n * 2 + 1);
	if (!o) {
		free(s);
		return NULL;
	}
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"' && (i == 0 || s[i - 1] != '\\'))
			o[w++] = '\'';
		else if (s[i] == ',' && s[i - 1] == '"')
			o[w++] = ',', o[w++] = ' ';
		else
			o[w++] = s[i];
	}
	o[w] = '\0';
	free(s);
	return o;
}

static void exec_body(httpd_exchange *ex, const char *body, size_t len, void *ud)
{
	exec_req *r = ud;
	sbxd_daemon *d = r->d;
	cJSON *j = cJSON_ParseWithLength(body, len);
	const cJSON *cmd = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "command") : NULL;
	if (!cJSON_IsString(cmd)) {
		cJSON_Delete(j);
		size_t bl;
		char *b = sbxd_validation_body("body", "command",
		                               cmd ? "Input should be a valid string" : "Field required",
		                               &bl);
		if (b)
			sbxd_respond_json(ex, 422, b, bl);
		free(b);
		return;
	}
	char **argv = NULL;
	int rc = sbxd_shlex_split(cmd->valuestring, strlen(cmd->valuestring), &argv, NULL);
	cJSON_Delete(j);
	if (rc) {
		exec_failed(ex, asb_error_last()->message);
		return;
	}
	if (!argv[0]) {
		sbxd_shlex_free(argv);
		exec_failed(ex, "list index out of range");
		return;
	}
	if (atomic_load(&d->shutting_down) || (rc = sbxd_cap_acquire(d)) != 0) {
		sbxd_shlex_free(argv);
		exec_failed(ex, rc ? asb_error_last()->message : "sandboxd is shutting down");
		return;
	}
	r->timeout_s = exec_timeout(d);
	r->cmd_repr = argv_repr(argv);
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.lingering = &d->runtime.lingering;
	o.argv = argv;
	o.cwd_fd = sbxd_root_fd(d->root);
	o.timeout_ms = (long)ceil(r->timeout_s * 1000.0);
	o.kill_grace_ms = 1;  /* upstream SIGKILLs the group at once */
	o.chunk_size = 65536;
	o.max_output_bytes = d->flags->max_output_bytes;
	o.max_tasks = d->flags->max_tasks;
	rc = sbxd_server_keepers(&d->runtime, httpd_exchange_loop(ex), &o.keepers);
	if (!rc)
		rc = sbxd_proc_spawn(&r->run.proc, httpd_exchange_loop(ex), &o, &exec_cbs, r);
	if (rc) {
		sbxd_cap_release(d);
		exec_start_failed(ex, rc, argv[0]);
		sbxd_shlex_free(argv);
		return;
	}
	r->argv0 = strdup(argv[0]);
	sbxd_shlex_free(argv);
	r->run.srv = &d->runtime;
	sbxd_run_link(&r->run);
	httpd_exchange_set_timeout(ex, 0);
}

static void execute_route(httpd_exchange *ex, void *ud)
{
	exec_req *r = calloc(1, sizeof(*r));
	if (!r) {
		sbxd_respond_message(ex, 500, "out of memory");
		return;
	}
	r->d = ud;
	r->ex = ex;
	r->run.srv = &r->d->runtime;
	httpd_exchange_on_close(ex, exec_close, r);
	/* a client that closes the connection ends its command at once */
	httpd_exchange_end_on_client_eof(ex);
	sbxd_read_body(ex, REQUEST_LIMIT, exec_body, r, NULL);
}

/* ---- POST /upload ---- */

typedef struct {
	sbxd_daemon *d;
	char *filename;
	bool open_failed;   /* the destination was refused, not the body */
} upload_ctx;

static int up_open(const char *filename, sbxd_writer **w, void *ud)
{
	upload_ctx *c = ud;
	c->open_failed = true;  /* until the writer is there */
	if (!filename || !*filename)
		return asb_error_set(ASB_EINVAL, 400, NULL, "the file part has no filename");
	if (!(c->filename = strdup(filename)))
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	char *rel;
	int rc = sbxd_path_clean(NULL, SBXD_CLEAN_LSTRIP, filename, strlen(filename), &rel);
	if (rc)
		return rc;
	if (strcmp(rel, ".") == 0)
		rc = asb_error_set(ASB_EINVAL, 400, SBXD_REASON_ISDIR, "the filename names no file");
	else
		rc = sbxd_writer_begin(w, c->d->root, rel, 0644);
	free(rel);
	c->open_failed = rc != 0;
	return rc;
}

static void up_fail(httpd_exchange *ex, int rc, void *ud)
{
	upload_ctx *c = ud;
	if (rc == ASB_EFORBIDDEN && strcmp(asb_error_last()->reason, SBXD_REASON_ESCAPE) == 0) {
		sbxd_respond_message(ex, 403, "Access denied");
		return;
	}
	if (rc == ASB_ETOOMANYREQUESTS) {
		sbxd_respond_message(ex, 429, asb_error_last()->message);
		return;
	}
	/* a malformed body is a 400, as Starlette's; a destination that
	 * cannot be written is upstream's 500, even one found out before
	 * writing (a directory: IsADirectoryError; a NUL: ValueError) */
	char msg[512];
	snprintf(msg, sizeof(msg), "File upload failed: %s", asb_error_last()->message);
	sbxd_respond_message(ex, rc == ASB_EINVAL && !(c && c->open_failed) ? 400 : 500, msg);
}

static void up_no_file(httpd_exchange *ex, void *ud)
{
	size_t len;
	char *b = sbxd_validation_body("body", "file", "Field required", &len);
	if (b)
		sbxd_respond_json(ex, 422, b, len);
	free(b);
}

static void up_done(httpd_exchange *ex, int rc, const char *err, void *ud)
{
	upload_ctx *c = ud;
	char msg[1024];
	if (rc) {
		snprintf(msg, sizeof(msg), "File upload failed: %s", err);
		sbxd_respond_message(ex, 500, msg);
		return;
	}
	snprintf(msg, sizeof(msg), "File '%s' uploaded successfully.", c->filename);
	sbxd_respond_message(ex, 200, msg);
}

static void up_release(void *ud)
{
	upload_ctx *c = ud;
	free(c->filename);
	free(c);
}

static const sbxd_upload_ops upload_ops = { up_open, up_fail, up_no_file, up_done, up_release };

static void upload_route(httpd_exchange *ex, void *ud)
{
	sbxd_daemon *d = ud;
	char *boundary = NULL;
	int rc = sbxd_multipart_boundary(
		httpd_request_header(httpd_exchange_request(ex), "Content-Type"), &boundary);
	upload_ctx *c = rc ? NULL : calloc(1, sizeof(*c));
	if (!c) {
		free(boundary);
		up_no_file(ex, NULL);
		return;
	}
	c->d = d;
	sbxd_upload_start(d, ex, NULL, boundary, &upload_ops, c);
	free(boundary);
}

/* ---- GET /download, /list, /exists ---- */

/* The path of a /download, /list or /exists request; answers the error
 * itself (403 Access denied for an escape) and returns non-zero then. */
static int runtime_path(sbxd_daemon *d, httpd_exchange *ex, const char *prefix, char **rel,
                        char **shown)
{
	int rc = sbxd_request_path(d, ex, prefix, 2, SBXD_CLEAN_LSTRIP, rel, shown);
	if (rc == ASB_EFORBIDDEN)
		sbxd_respond_message(ex, 403, "Access denied");
	else if (rc)
		sbxd_respond_message(ex, rc == ASB_EINVAL ? 400 : 500, asb_error_last()->message);
	return rc;
}

/* Starlette's Content-Disposition for FileResponse(filename=name). */
static char *disposition(const char *name)
{
	static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/";
	bool plain = true;
	for (const char *c = name; *c && plain; c++)
		plain = strchr(safe, *c) != NULL;
	size_t n = strlen(name);
	char *out = malloc(n * 3 + 40);
	if (!out)
		return NULL;
	if (plain) {
		sprintf(out, "attachment; filename=\"%s\"", name);
		return out;
	}
	size_t w = (size_t)sprintf(out, "attachment; filename*=utf-8''");
	for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
		if (strchr(safe, *c))
			out[w++] = (char)*c;
		else
			w += (size_t)sprintf(out + w, "%%%02X", *c);
	}
	out[w] = '\0';
	return out;
}

static void download_route(httpd_exchange *ex, void *ud)
{
	sbxd_daemon *d = ud;
	char *rel, *shown;
	if (runtime_path(d, ex, "/download/", &rel, &shown))
		return;
	int fd;
	struct stat st;
	int rc = sbxd_open_read(d->root, rel, &fd, &st);
	if (rc == ASB_EFORBIDDEN && strcmp(asb_error_last()->reason, SBXD_REASON_ESCAPE) == 0) {
		sbxd_respond_message(ex, 403, "Access denied");
	} else if (rc) {
		sbxd_respond_message(ex, 404, "File not found");
	} else {
		char *disp = disposition(shown);
		sbxd_serve_file(d, ex, fd, &st, disp, false);
		free(disp);
	}
	free(rel);
	free(shown);
}

static void list_route(httpd_exchange *ex, void *ud)
{
	sbxd_daemon *d = ud;
	char *rel;
	if (runtime_path(d, ex, "/list/", &rel, NULL))
		return;
	sbxd_list_answer(d, ex, rel, NULL, SBXD_LISTING_RUNTIME);
}

static void exists_route(httpd_exchange *ex, void *ud)
{
	sbxd_daemon *d = ud;
	char *rel, *shown;
	if (runtime_path(d, ex, "/exists/", &rel, &shown))
		return;
	struct stat st;
	int rc = sbxd_stat(d->root, rel, &st);
	free(rel);
	if (rc == ASB_EFORBIDDEN && strcmp(asb_error_last()->reason, SBXD_REASON_ESCAPE) == 0) {
		sbxd_respond_message(ex, 403, "Access denied");
		free(shown);
		return;
	}
	cJSON *j = cJSON_CreateObject();
	char *p = sbxd_utf8_clean(shown, strlen(shown));
	cJSON_AddStringToObject(j, "path", p ? p : "");
	cJSON_AddBoolToObject(j, "exists", rc == 0);
	free(p);
	free(shown);
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (s)
		sbxd_respond_json(ex, 200, s, strlen(s));
	else
		sbxd_respond_message(ex, 500, "out of memory");
	free(s);
}

int sbxd_http_runtime_routes(sbxd_daemon *d, httpd_server *s)
{
	int rc;
	if ((rc = httpd_server_route_stream(s, "GET", "/", root_route, d)) ||
	    (rc = httpd_server_route_stream(s, "POST", "/execute", execute_route, d)) ||
	    (rc = httpd_server_route_stream(s, "POST", "/upload", upload_route, d)) ||
	    (rc = httpd_server_route_stream(s, "GET", "/download/*", download_route, d)) ||
	    (rc = httpd_server_route_stream(s, "GET", "/list/*", list_route, d)) ||
	    (rc = httpd_server_route_stream(s, "GET", "/exists/*", exists_route, d)))
		return rc;
	return 0;
}
