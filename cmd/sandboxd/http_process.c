/*
 * http_process.c - process execution over HTTP with the semantics of
 * upstream's gRPC ProcessService (docs/upstream.md#processservice, #process-semantics):
 *
 *   POST /v1/processes                  Start: the response is a chunked
 *        stream of NDJSON events, one JSON object a line (the proto3 JSON
 *        of StartResponse): {"init":{"processId":N}}, then {"stdout":b64} /
 *        {"stderr":b64} as output is produced, then {"exit":{...}}.
 *   POST /v1/execute                    Execute: buffered, one JSON answer.
 *   POST /v1/processes/{id}/stdin       WriteStdin: JSON {"input"}/{"eof"},
 *        or any other Content-Type: the raw body streamed into stdin
 *        (with ?eof=true to close it after).
 *   POST /v1/processes/{id}/signal      SendSignal.
 *   POST /v1/processes/{id}/resize      ResizeTTY.
 *
 * Why NDJSON over a chunked response and not WebSocket: it is plain
 * HTTP/1.1 that every client, curl and the router's proxying handle, it
 * needs no framing code on either side, and the control calls (stdin,
 * signal, resize) are separate requests anyway, as they are RPCs
 * upstream. Backpressure: while more than 1 MiB of events waits for the
 * client, the process's output is not read (the child then blocks on its
 * pipe); output past --max-output-bytes is dropped and the exit event
 * says so. A client that goes away kills the process group (noticed at
 * its connection's EOF, or, behind a proxy that keeps the connection,
 * at the next write: a quiet stream gets an empty event "{}" every
 * --stream-keepalive). Execute's client going away kills it the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "asb/common.h"
#include "codec.h"
#include "http.h"
#include "http_answer.h"

#define REQUEST_LIMIT (1024 * 1024)
#define EVENTS_HIGH (1024 * 1024)
#define EVENTS_LOW (256 * 1024)
#define STDIN_HIGH (1024 * 1024)

/* A growable byte buffer for Execute's output, bounded by the flag. */
/* One Start or Execute request and its process. */
typedef struct {
	sbxd_run run;
	sbxd_daemon *d;
	httpd_exchange *ex;   /* NULL once the exchange closed */
	bool streaming;          /* Start (events) or Execute (buffered) */
	bool head_sent;
	sbxd_bytes out, err;
	sbxd_answer answer;      /* Execute's, streamed from out and err (http_answer.h) */
	uv_timer_t *keepalive;   /* its own allocation: closed asynchronously */
	sbxd_stall *stall;       /* --stall-timeout on the events or the answer */
	char *argv0;             /* for the log line of its start */
	bool pty;
} proc_req;

static void keepalive_closed(uv_handle_t *h)
{
	free(h);
}

static void req_free(proc_req *r)
{
	if (r->keepalive)
		uv_close((uv_handle_t *)r->keepalive, keepalive_closed);
	sbxd_run_release(&r->run);
	sbxd_stall_free(r->stall);
	sbxd_answer_clear(&r->answer);
	sbxd_bytes_free(&r->out);
	sbxd_bytes_free(&r->err);
	free(r->argv0);
	free(r);
}

static void req_close(httpd_exchange *ex, int reason, void *ud)
{
	proc_req *r = ud;
	r->ex = NULL;
	if (r->run.proc && !sbxd_proc_done(r->run.proc))
		asb_log_typed(r->d->log, ASB_LOG_INFO, "client went away: process killed",
		              ASB_LOG_INT("process_id", r->run.id));  /* 0: not registered */
	req_free(r);  /* kills the group if it still runs */
}

static void events_drained(httpd_exchange *ex, void *ud)
{
	proc_req *r = ud;
	sbxd_stall_progress(r->stall);
	if (r->run.proc && httpd_exchange_pending(ex) < EVENTS_LOW)
		sbxd_proc_resume_output(r->run.proc);
}

static void send_event(proc_req *r, char *line, size_t len)
{
	if (!line) {
		httpd_exchange_abort(r->ex);
		return;
	}
	httpd_exchange_write(r->ex, line, len, events_drained, r);
	free(line);
}

static void on_output(sbxd_proc *p, sbxd_stream s, const char *data, size_t n, void *ud)
{
	proc_req *r = ud;
	if (!r->ex)
		return;
	if (!r->streaming) {
		sbxd_bytes_add(s == SBXD_STDERR ? &r->err : &r->out, data, n);
		return;
	}
	size_t len = 0;
	char *line = sbxd_event_output(s, data, n, &len);
	send_event(r, line, len);
	if (r->ex && httpd_exchange_pending(r->ex) > EVENTS_HIGH)
		sbxd_proc_pause_output(p);
}

static void on_exit_ev(sbxd_proc *p, const sbxd_exit *ex, void *ud)
{
	proc_req *r = ud;
	asb_log_typed(r->d->log, ASB_LOG_INFO, "process exited", ASB_LOG_INT("exit_code", ex->exit_code),
	              ASB_LOG_INT("signal", ex->signal), ASB_LOG_BOOL("timed_out", ex->timed_out));
	/* docs/upstream.md#process-semantics: unregistered when its Start call ends; the slot goes too */
	sbxd_run_release(&r->run);
	if (!r->ex)
		return;
	size_t len = 0;
	if (r->streaming) {
		char *line = sbxd_event_exit(ex, &len);
		send_event(r, line, len);
		if (r->ex)
			httpd_exchange_finish(r->ex);
		return;
	}
	/* the answer of sbxd_execute_response(), in pieces (codec.h) */
	char *head = sbxd_execute_answer_head(ex, &len);
	if (!head) {
		sbxd_respond_error(r->ex, 500, "INTERNAL", "out of memory");
		return;
	}
	static const char mid[] = SBXD_EXECUTE_ANSWER_MID, tail[] = SBXD_EXECUTE_ANSWER_TAIL;
	sbxd_answer *a = &r->answer;
	a->stall = r->stall = sbxd_stall_start(r->d, r->ex, r->d->flags->stall_timeout_ms, true);
	sbxd_answer_add(a, SBXD_PART_LITERAL, head, len, NULL, head);
	sbxd_answer_add(a, SBXD_PART_BASE64, r->out.data, r->out.len, &r->out, NULL);
	sbxd_answer_add(a, SBXD_PART_LITERAL, mid, sizeof(mid) - 1, NULL, NULL);
	sbxd_answer_add(a, SBXD_PART_BASE64, r->err.data, r->err.len, &r->err, NULL);
	sbxd_answer_add(a, SBXD_PART_LITERAL, tail, sizeof(tail) - 1, NULL, NULL);
	sbxd_answer_send(a, r->ex, true);
}

static void on_started(sbxd_proc *p, int rc, void *ud);

/* the exec's outcome comes asynchronously: the loop serves other requests
 * while a keeper starts the command */
static const sbxd_proc_callbacks callbacks = { on_output, on_exit_ev, on_started };

/*
 * An empty event ("{}", a StartResponse with no field set) on a quiet
 * stream: proxies keep the stream open, and a client that went away is
 * noticed by the failed write (the server cannot tell a closed client
 * from a half-closed one until then), so its process is killed.
 */
static void on_keepalive(uv_timer_t *t)
{
	proc_req *r = t->data;
	if (r->ex && r->head_sent && httpd_exchange_pending(r->ex) == 0)
		httpd_exchange_write(r->ex, "{}\n", 3, NULL, NULL);
}

/* The working directory of a request, beneath the root (docs/upstream.md#process-semantics: escape is
 * PERMISSION_DENIED with "cwd: ", missing is NOT_FOUND). */
static int open_cwd(sbxd_daemon *d, const char *cwd, int *fd)
{
	char *rel;
	int rc = sbxd_path_clean(sbxd_root_path(d->root), SBXD_CLEAN_STRIP_ROOT, cwd ? cwd : "",
	                         cwd ? strlen(cwd) : 0, &rel);
	if (rc == 0) {
		rc = sbxd_root_openat(d->root, rel, O_PATH | O_DIRECTORY, 0, fd);
		free(rel);
	}
	if (rc == ASB_EFORBIDDEN)
		return asb_error_set(rc, 403, NULL, "cwd: %s",
		                     strcmp(asb_error_last()->reason, SBXD_REASON_ESCAPE) == 0
		                     ? "path traversal outside sandbox root is forbidden"
		                     : "permission denied");
	if (rc == ASB_ENOTFOUND || (rc == ASB_ERROR && errno == ENOTDIR)) {
		/* the path as the client wrote it, never the host path */
		bool notdir = rc == ASB_ERROR;
		return asb_error_set(ASB_ENOTFOUND, 404, NULL,
		                     "command or path not found: cwd \"%.1024s\": %s", cwd ? cwd : "",
		                     notdir ? "not a directory" : "no such directory");
	}
	return rc;
}

/* Starts the process of a parsed request; answers the error itself. */
static void start(proc_req *r, sbxd_proc_request *pr)
{
	sbxd_daemon *d = r->d;
	const sandboxd_flags *f = d->flags;
	int cwd = -1;
	int rc = open_cwd(d, pr->cwd, &cwd);
	if (rc == 0)
		rc = sbxd_cap_acquire(d);
	if (rc) {
		if (cwd >= 0)
			close(cwd);
		sbxd_respond_k8s_error(r->ex, rc);
		return;
	}
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	rc = sbxd_server_keepers(&d->rest, httpd_exchange_loop(r->ex), &o.keepers);
	if (rc) {
		close(cwd);
		sbxd_cap_release(d);
		sbxd_respond_k8s_error(r->ex, rc);
		return;
	}
	o.lingering = &d->rest.lingering;
	o.argv = pr->argv;
	o.env = pr->env;
	o.cwd_fd = cwd;
	o.pty = pr->pty;
	o.cols = pr->cols;
	o.rows = pr->rows;
	o.stdin_pipe = r->streaming;
	o.timeout_ms = pr->timeout_ms;
	o.kill_grace_ms = f->kill_grace_ms;
	o.chunk_size = f->stream_chunk_size;
	o.max_output_bytes = f->max_output_bytes;
	o.max_tasks = f->max_tasks;
	rc = sbxd_proc_spawn(&r->run.proc, httpd_exchange_loop(r->ex), &o, &callbacks, r);
	close(cwd);
	if (rc) {
		sbxd_cap_release(d);
		sbxd_respond_k8s_error(r->ex, rc);
		return;
	}
	r->run.srv = &d->rest;
	sbxd_run_link(&r->run);
	/* the process's own timeout bounds it, not the server's request timeout */
	httpd_exchange_set_timeout(r->ex, 0);
	r->argv0 = strdup(pr->argv[0]);
	r->pty = pr->pty;
	/* on_started goes on once the exec's outcome is known */
}

/* The command runs (rc 0), or could not start: answer the error. */
static void on_started(sbxd_proc *p, int rc, void *ud)
{
	proc_req *r = ud;
	sbxd_daemon *d = r->d;
	const sandboxd_flags *f = d->flags;
	if (rc) {
		sbxd_respond_k8s_error(r->ex, rc);  /* on_close comes later */
		sbxd_run_release(&r->run);  /* the process and its slot */
		return;
	}
	const char *argv0 = r->argv0 ? r->argv0 : "";
	int pid = (int)sbxd_proc_pid(r->run.proc);
	if (!r->streaming) {
		asb_log_typed(d->log, ASB_LOG_INFO, "process started", ASB_LOG_STR("api", "execute"),
		              ASB_LOG_INT("pid", pid), ASB_LOG_STR("command", argv0));
		return;
	}
	pthread_mutex_lock(&d->cap_lock);
	r->run.id = sbxd_proctable_add(d->cap, r);
	pthread_mutex_unlock(&d->cap_lock);
	asb_log_typed(d->log, ASB_LOG_INFO, "process started", ASB_LOG_STR("api", "start"),
	              ASB_LOG_INT("process_id", r->run.id), ASB_LOG_INT("pid", pid),
	              ASB_LOG_STR("command", argv0), ASB_LOG_BOOL("pty", r->pty));
	if (r->run.id < 0) {
		r->run.id = 0;
		sbxd_respond_error(r->ex, 500, "INTERNAL", "out of memory");
		return;
	}
	httpd_response *res = httpd_exchange_response(r->ex);
	httpd_response_add_header(res, "Content-Type", "application/x-ndjson");
	httpd_response_add_header(res, "Cache-Control", "no-store");
	if (httpd_exchange_send_head(r->ex, -1) != 0)
		return;
	r->head_sent = true;
	r->stall = sbxd_stall_start(d, r->ex, f->stall_timeout_ms, true);
	if (f->stream_keepalive_ms > 0 && (r->keepalive = malloc(sizeof(uv_timer_t)))) {
		uv_timer_init(httpd_exchange_loop(r->ex), r->keepalive);
		r->keepalive->data = r;
		uv_timer_start(r->keepalive, on_keepalive, (uint64_t)f->stream_keepalive_ms,
		               (uint64_t)f->stream_keepalive_ms);
	}
	size_t len = 0;
	char *line = sbxd_event_init(r->run.id, &len);
	send_event(r, line, len);
}

static void proc_body(httpd_exchange *ex, const char *body, size_t len, void *ud)
{
	proc_req *r = ud;
	if (atomic_load(&r->d->shutting_down)) {
		sbxd_respond_error(ex, 503, "UNAVAILABLE", "sandboxd is shutting down");
		return;
	}
	sbxd_proc_request pr;
	int rc = sbxd_proc_request_parse(body, len, r->streaming, &pr);
	if (rc) {
		sbxd_respond_k8s_error(ex, rc);
		return;
	}
	start(r, &pr);
	sbxd_proc_request_clear(&pr);
}

static void proc_route(httpd_exchange *ex, sbxd_daemon *d, bool streaming)
{
	proc_req *r = calloc(1, sizeof(*r));
	if (!r) {
		sbxd_respond_error(ex, 500, "INTERNAL", "out of memory");
		return;
	}
	r->d = d;
	r->ex = ex;
	r->streaming = streaming;
	r->run.srv = &d->rest;
	httpd_exchange_on_close(ex, req_close, r);
	/* a client that closes the connection ends its command at once */
	httpd_exchange_end_on_client_eof(ex);
	sbxd_read_body(ex, REQUEST_LIMIT, proc_body, r, NULL);
}

static void start_route(httpd_exchange *ex, void *ud)
{
	proc_route(ex, ud, true);
}

static void execute_route(httpd_exchange *ex, void *ud)
{
	proc_route(ex, ud, false);
}

/* ---- stdin, signal, resize: /v1/processes/{id}/{action} ---- */

typedef struct {
	sbxd_daemon *d;
	httpd_exchange *ex;
	int32_t id;
	bool raw, eof_after, failed, answered;
	uv_timer_t timer;        /* stdin: waits for the queue to drain */
	bool timer_on;
	unsigned char *held;     /* JSON stdin input waiting for room in the queue */
	size_t held_len;
	sbxd_stall *stall;       /* raw stdin: --stall-timeout on the body */
} ctl_req;

static sbxd_proc *lookup(sbxd_daemon *d, int32_t id)
{
	pthread_mutex_lock(&d->cap_lock);
	proc_req *r = sbxd_proctable_get(d->cap, id);
	pthread_mutex_unlock(&d->cap_lock);
	return r ? r->run.proc : NULL;
}

static void ctl_not_found(ctl_req *c)
{
	char msg[64];
	snprintf(msg, sizeof(msg), "process %d not found", (int)c->id);
	sbxd_respond_error(c->ex, 404, "NOT_FOUND", msg);
}

static void ctl_ok(httpd_exchange *ex)
{
	sbxd_respond_json(ex, 200, "{}\n", 3);
}

static void timer_closed(uv_handle_t *h)
{
	free(h->data);
}

static void ctl_close(httpd_exchange *ex, int reason, void *ud)
{
	ctl_req *c = ud;
	free(c->held);
	c->held = NULL;
	sbxd_stall_free(c->stall);
	c->stall = NULL;
	if (c->timer_on) {
		uv_timer_stop(&c->timer);
		uv_close((uv_handle_t *)&c->timer, timer_closed);  /* frees c */
	} else {
		free(c);
	}
}

/* Raw stdin: resume reading the body once the process took what we queued. */
static void stdin_poll(uv_timer_t *t)
{
	ctl_req *c = t->data;
	sbxd_proc *p = lookup(c->d, c->id);
	if (!p) {
		uv_timer_stop(t);
		if (!c->answered) {
			c->answered = c->failed = true;
			ctl_not_found(c);
		}
		return;
	}
	if (sbxd_proc_stdin_pending(p) < STDIN_HIGH / 2) {
		uv_timer_stop(t);
		sbxd_stall_pause(c->stall, false);
		httpd_exchange_read_resume(c->ex);
	}
}

static void stdin_raw_data(httpd_exchange *ex, const char *data, size_t len, void *ud)
{
	ctl_req *c = ud;
	sbxd_stall_progress(c->stall);
	if (c->failed)
		return;
	sbxd_proc *p = lookup(c->d, c->id);
	int rc = p ? sbxd_proc_write_stdin(p, data, len, NULL, NULL) : ASB_ENOTFOUND;
	if (rc) {
		c->failed = c->answered = true;
		if (!p) {
			ctl_not_found(c);
		} else {
			char msg[160];
			snprintf(msg, sizeof(msg), "failed to write stdin: %s", asb_error_last()->message);
			sbxd_respond_error(ex, 500, "INTERNAL", msg);
		}
		return;
	}
	if (sbxd_proc_stdin_pending(p) > STDIN_HIGH) {
		httpd_exchange_read_pause(ex);
		sbxd_stall_pause(c->stall, true);  /* held back by the process, not the client */
		uv_timer_start(&c->timer, stdin_poll, 5, 5);
	}
}

/* JSON stdin: a write joins the queue when the queue has room for it
 * (or is empty), so that the queue stays under STDIN_HIGH and a client
 * writing faster than the process reads waits for its answer. */
static bool stdin_fits(sbxd_proc *p, size_t n)
{
	size_t q = sbxd_proc_stdin_pending(p);
	return q == 0 || q + n <= STDIN_HIGH;
}

static void stdin_write_answer(ctl_req *c, sbxd_proc *p, const unsigned char *data, size_t n)
{
	if (sbxd_proc_write_stdin(p, data, n, NULL, NULL) != 0) {
		char msg[160];
		snprintf(msg, sizeof(msg), "failed to write stdin: %s", asb_error_last()->message);
		sbxd_respond_error(c->ex, 500, "INTERNAL", msg);
		return;
	}
	ctl_ok(c->ex);
}

static void stdin_held_poll(uv_timer_t *t)
{
	ctl_req *c = t->data;
	sbxd_proc *p = lookup(c->d, c->id);
	if (p && !stdin_fits(p, c->held_len))
		return;
	uv_timer_stop(t);
	if (p)
		stdin_write_answer(c, p, c->held, c->held_len);
	else
		ctl_not_found(c);
	free(c->held);
	c->held = NULL;
}

static void stdin_raw_end(httpd_exchange *ex, void *ud)
{
	ctl_req *c = ud;
	if (c->failed)
		return;
	sbxd_proc *p = lookup(c->d, c->id);
	if (!p) {
		ctl_not_found(c);
		return;
	}
	if (c->eof_after && sbxd_proc_close_stdin(p) != 0) {
		char msg[160];
		snprintf(msg, sizeof(msg), "failed to close stdin: %s", asb_error_last()->message);
		sbxd_respond_error(ex, 500, "INTERNAL", msg);
		return;
	}
	c->answered = true;
	ctl_ok(ex);
}

static void ctl_body(httpd_exchange *ex, const char *body, size_t len, void *ud)
{
	ctl_req *c = ud;
	const char *path = httpd_request_path(httpd_exchange_request(ex));
	const char *action = strrchr(path, '/') + 1;
	sbxd_proc *p = lookup(c->d, c->id);
	int rc = 0;
	if (strcmp(action, "stdin") == 0) {
		unsigned char *data;
		size_t n;
		bool eof;
		rc = sbxd_stdin_request_parse(body, len, &data, &n, &eof);
		if (rc) {
			sbxd_respond_k8s_error(ex, rc);
			return;
		}
		if (!p) {
			free(data);
			ctl_not_found(c);
			return;
		}
		if (!eof) {
			if (stdin_fits(p, n) || n == 0) {
				stdin_write_answer(c, p, data, n);
				free(data);
				return;
			}
			/* backpressure: answered once the process has read enough */
			c->held = data;
			c->held_len = n;
			if (!c->timer_on) {
				uv_timer_init(httpd_exchange_loop(ex), &c->timer);
				c->timer.data = c;
				c->timer_on = true;
			}
			httpd_exchange_set_timeout(ex, 0);
			uv_timer_start(&c->timer, stdin_held_poll, 5, 5);
			return;
		}
		free(data);
		if (sbxd_proc_close_stdin(p) != 0) {
			char msg[160];
			snprintf(msg, sizeof(msg), "failed to close stdin: %s", asb_error_last()->message);
			sbxd_respond_error(ex, 500, "INTERNAL", msg);
			return;
		}
	} else if (strcmp(action, "signal") == 0) {
		int sig;
		rc = sbxd_signal_request_parse(body, len, &sig);
		if (rc) {
			sbxd_respond_k8s_error(ex, rc);
			return;
		}
		if (!p) {
			ctl_not_found(c);
			return;
		}
		sbxd_proc_signal(p, sig);
	} else {
		unsigned short cols, rows;
		rc = sbxd_resize_request_parse(body, len, &cols, &rows);
		if (rc) {
			sbxd_respond_k8s_error(ex, rc);
			return;
		}
		if (!p) {
			ctl_not_found(c);
			return;
		}
		rc = sbxd_proc_resize(p, cols, rows);
		if (rc == ASB_EINVAL || rc == ASB_ESHUTDOWN) {
			sbxd_respond_error(ex, 400, "FAILED_PRECONDITION", asb_error_last()->message);
			return;
		}
		if (rc) {
			sbxd_respond_k8s_error(ex, rc);
			return;
		}
	}
	ctl_ok(ex);
}

static void ctl_route(httpd_exchange *ex, void *ud)
{
	sbxd_daemon *d = ud;
	const httpd_request *req = httpd_exchange_request(ex);
	const char *rest = httpd_request_path(req) + strlen("/v1/processes/");
	char *end;
	errno = 0;
	long id = strtol(rest, &end, 10);
	const char *action = *end == '/' ? end + 1 : NULL;
	if (end == rest || errno || id <= 0 || id > INT32_MAX || !action ||
	    (strcmp(action, "stdin") && strcmp(action, "signal") && strcmp(action, "resize"))) {
		httpd_exchange_respond(ex, 404, "text/plain; charset=utf-8",
		                          "404 page not found\n", 19);
		return;
	}
	ctl_req *c = calloc(1, sizeof(*c));
	if (!c) {
		sbxd_respond_error(ex, 500, "INTERNAL", "out of memory");
		return;
	}
	c->d = d;
	c->ex = ex;
	c->id = (int32_t)id;
	httpd_exchange_on_close(ex, ctl_close, c);
	const char *ct = httpd_request_header(req, "Content-Type");
	bool json = !ct || strncasecmp(ct, "application/json", 16) == 0;
	if (strcmp(action, "stdin") == 0 && !json) {
		/* raw bytes streamed into stdin, without a size limit */
		c->raw = true;
		char *eof = sbxd_query_param(httpd_request_query(req), "eof");
		c->eof_after = eof && (strcmp(eof, "true") == 0 || strcmp(eof, "1") == 0);
		free(eof);
		if (!lookup(d, c->id)) {
			ctl_not_found(c);
			return;
		}
		uv_timer_init(httpd_exchange_loop(ex), &c->timer);
		c->timer.data = c;
		c->timer_on = true;
		httpd_exchange_set_timeout(ex, 0);
		httpd_exchange_set_max_body(ex, 0);
		static const httpd_body_reader reader = { stdin_raw_data, stdin_raw_end, NULL };
		c->stall = sbxd_stall_start(d, ex, d->flags->stall_timeout_ms, false);
		httpd_exchange_read_start(ex, &reader, c);
		return;
	}
	sbxd_read_body(ex, REQUEST_LIMIT, ctl_body, c, NULL);
}

int sbxd_http_process_routes(sbxd_daemon *d, httpd_server *s)
{
	int rc;
	if ((rc = httpd_server_route_stream(s, "POST", "/v1/processes", start_route, d)) ||
	    (rc = httpd_server_route_stream(s, "POST", "/v1/execute", execute_route, d)) ||
	    (rc = httpd_server_route_stream(s, "POST", "/v1/processes/*", ctl_route, d)))
		return rc;
	return 0;
}
