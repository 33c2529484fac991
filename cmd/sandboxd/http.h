/*
 * http.h - sandboxd's HTTP surface on libhttpd's server (httpd/exchange.h): the
 * shared daemon state and the helpers the three handler files use.
 *   http_files.c    sandboxd REST: /v1/files/..., /v1/health, /v1/metadata
 *   http_process.c  processes over HTTP: /v1/processes, /v1/execute
 *   http_runtime.c  the python-runtime API: /, /execute, /upload, ...
 * with http_upload.c (bodies into files) and http_answer.c (big answers in
 * pieces). Each server runs one loop thread; handlers and process
 * callbacks run on it. The process cap and the transfer count are shared
 * by both servers, so they are locked (atomic).
 */
#ifndef SBXD_HTTP_H
#define SBXD_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "httpd/exchange.h"
#include "httpd/server.h"
#include "asb/log.h"
#include "codec.h"
#include "confine.h"
#include "flags.h"
#include "reaper.h"
#include "proc.h"
#include "proctable.h"

/** A process run for a request, linked into its server's list (for shutdown). */
typedef struct sbxd_run sbxd_run;

/** Per-server state: the loop's live runs (loop thread only). */
typedef struct {
	struct sbxd_daemon *d;
	httpd_server *srv;
	sbxd_run *runs;              /* every live run of this server's loop */
	sbxd_proc_lingering lingering; /* ended commands' output still held by a background process */
	sbxd_keeper_pool *keepers;   /* the loop's keepers, made at its first command */
	bool shutting_down;          /* set on the loop by sbxd_http_begin_shutdown */
} sbxd_server;

typedef struct sbxd_daemon {
	const sandboxd_flags *flags;
	sbxd_root *root;
	asb_logger *log;
	pthread_mutex_t cap_lock;    /* guards `cap` (both loops take slots) */
	sbxd_proctable *cap;         /* slots for both servers; ids for the REST loop */
	sbxd_reaper *reaper;         /* waits for orphans reparented to us (PID 1) */
	atomic_bool shutting_down;   /* /v1/health answers 503 */
	atomic_uint transfers;       /* file bodies in flight, both servers (SBXD_MAX_TRANSFERS) */
	time_t started;
	char *metadata;              /* /v1/metadata body, computed at start */
	size_t metadata_len;
	sbxd_server rest, runtime;
} sbxd_daemon;

/** Routes of each API on its server. Return 0 or a httpd_server_route error. */
int sbxd_http_files_routes(sbxd_daemon *d, httpd_server *s);
int sbxd_http_process_routes(sbxd_daemon *d, httpd_server *s);
int sbxd_http_runtime_routes(sbxd_daemon *d, httpd_server *s);

/** Builds the /v1/metadata body from the environment (docs/upstream.md#sandboxd-rest-api). */
int sbxd_metadata_build(sbxd_daemon *d);

/** Posted to each server's loop at shutdown: every run's tree gets
 *  SIGTERM, then SIGKILL after the grace period, the drains of ended
 *  commands stop, and the keeper pool is let go (idle keepers exit;
 *  `ud` is the sbxd_server). */
void sbxd_http_begin_shutdown(void *ud);

/** The keeper pool of server `s`'s loop (made at the first call, on that
 *  loop's thread), in `*out` (borrowed). @return 0; ASB_ESHUTDOWN once
 *  shutdown began; a sbxd_keeper_pool_new() error. */
int sbxd_server_keepers(sbxd_server *s, uv_loop_t *loop, sbxd_keeper_pool **out);

/* ---- the process cap ---- */

/** Takes a slot of --max-processes (any thread). 0, or ASB_ETOOMANYREQUESTS
 *  with "too many processes: ..." as the last error. */
int sbxd_cap_acquire(sbxd_daemon *d);
/** Gives a slot back (any thread). */
void sbxd_cap_release(sbxd_daemon *d);

/* ---- transfers and the connections kept for everything else ---- */

/**
 * File bodies in flight at once, both servers together: downloads (GET
 * /v1/files of a file, /download) and uploads (PUT /v1/files, /upload).
 * Each server serves SBXD_MAX_TRANSFERS + SBXD_SPARE_CONNECTIONS
 * connections, so that transfers, however slow, never take the connections
 * that /v1/health, listings and commands need.
 */
#define SBXD_MAX_TRANSFERS 1024
#define SBXD_SPARE_CONNECTIONS 1024

/** Takes a transfer slot (any thread): 0, or ASB_ETOOMANYREQUESTS with
 *  "too many transfers: ..." as the last error. */
int sbxd_transfer_acquire(sbxd_daemon *d);
/** Gives it back (any thread). */
void sbxd_transfer_release(sbxd_daemon *d);

/* ---- the no-progress timeout (--stall-timeout) ---- */

typedef struct sbxd_stall sbxd_stall;

/**
 * Watches `ex` for a transfer that makes no progress, and cuts it
 * (httpd_exchange_abort) after `ms`: when `sending` (a response body),
 * while bytes wait for the client and none of its writes completes; else
 * (a request body), while no body byte arrives and the watch is not
 * paused. Report progress with sbxd_stall_progress(). NULL when `ms` <= 0
 * (off) or out of memory: every function accepts NULL. Free it in the
 * exchange's on_close. Loop thread only.
 */
sbxd_stall *sbxd_stall_start(sbxd_daemon *d, httpd_exchange *ex, long ms, bool sending);
/** Something moved: the watch starts over. */
void sbxd_stall_progress(sbxd_stall *s);
/** Receiving: paused while the body is held back on purpose (backpressure). */
void sbxd_stall_pause(sbxd_stall *s, bool paused);
/** Stops and frees the watch. */
void sbxd_stall_free(sbxd_stall *s);

/* ---- runs: a process with its cap slot, on one server's list ---- */

struct sbxd_run {
	sbxd_run *prev, *next;
	sbxd_server *srv;
	sbxd_proc *proc;
	int32_t id;                  /* > 0 when registered for stdin/signal/resize */
};

/** Links `r` (its srv set) into its server's list. */
void sbxd_run_link(sbxd_run *r);
/** Unlinks, frees the process (killing it if it runs), releases the slot
 *  and the id. Idempotent on the process part. Does not free `r`. */
void sbxd_run_release(sbxd_run *r);

/* ---- responses ---- */

/** REST error: `{code, message}` JSON with `status`. */
void sbxd_respond_error(httpd_exchange *ex, int status, const char *code, const char *msg);
/** REST error from an error code (asb/common.h) and the last error (status from the code;
 *  confine.h reasons give upstream's fixed messages). */
void sbxd_respond_k8s_error(httpd_exchange *ex, int rc);
/** A JSON body with `status`. */
void sbxd_respond_json(httpd_exchange *ex, int status, const char *body, size_t len);
/** python-runtime: `{"message": msg}` with `status`. */
void sbxd_respond_message(httpd_exchange *ex, int status, const char *msg);

/* ---- requests ---- */

/**
 * The client path after `prefix` in the raw request path, percent-decoded
 * `decodes` times (1 for the REST API; 2 for the python-runtime, whose
 * handlers decode the already decoded path once more), then cleaned
 * (sbxd_path_clean) with `mode`. `*shown` (may be NULL) gets the decoded
 * path as the client meant it (malloc'd). Returns 0 or the error.
 */
int sbxd_request_path(sbxd_daemon *d, httpd_exchange *ex, const char *prefix, int decodes,
                      sbxd_clean_mode mode, char **rel, char **shown);

/**
 * Reads a whole request body of at most `limit` bytes, then calls `done`
 * (`body` NUL-terminated, valid during the call) on the loop. Too large:
 * the server answers 413 and `on_fail` (may be NULL) gets the code, as it
 * does for a client gone mid-body. Release state in the exchange's
 * on_close, not here: it runs in every case.
 */
typedef void (*sbxd_body_fn)(httpd_exchange *ex, const char *body, size_t len, void *ud);
void sbxd_read_body(httpd_exchange *ex, size_t limit, sbxd_body_fn done, void *ud,
                    void (*on_fail)(httpd_exchange *ex, int err, void *ud));

#endif
