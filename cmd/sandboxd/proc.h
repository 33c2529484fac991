/*
 * proc.h - one child process run for a client, on a libuv loop: spawned in
 * a session (and so a process group) of its own, with pipes or a
 * pseudo-terminal, its output delivered in chunks as it is produced and
 * bounded per stream, stdin fed from a queue, a timeout that ends the
 * whole group (SIGTERM, then SIGKILL after a grace period), signals and
 * terminal resizes (spec/surfaces.md C.6).
 *
 * Why fork+exec and not uv_spawn: the child must become the session leader
 * AND take the pseudo-terminal as its controlling terminal (TIOCSCTTY),
 * get an RLIMIT_NPROC (the fork-bomb bound) and change to a directory
 * given as a descriptor confined beneath the root; uv_spawn does none of
 * these. The child only makes system calls between fork and exec
 * (async-signal-safe), the executable is looked up in the parent, and an
 * exec failure travels back through a close-on-exec pipe. The exit is
 * seen through a libuv SIGCHLD watcher started before the fork, followed
 * by waitpid() of that one pid (never -1), so other children of the
 * process are not reaped. (A pidfd would be neater, but valgrind, under
 * which the unit tests run, does not know pidfd_open.)
 *
 * Threads: every call on the loop's thread; callbacks run there too.
 * Errors: libk8s codes (k8s/common.h) with the last-error message.
 */
#ifndef SBXD_PROC_H
#define SBXD_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "reaper.h"

typedef struct sbxd_proc sbxd_proc;

/** Which output stream a chunk comes from (a terminal's is STDOUT). */
typedef enum { SBXD_STDOUT = 1, SBXD_STDERR = 2 } sbxd_stream;

/** How a process ended. */
typedef struct {
	int exit_code;        /**< exit status, or -1 when killed by a signal */
	int signal;           /**< the signal that killed it, 0 if it exited */
	bool timed_out;       /**< the timeout ended it */
	bool truncated[3];    /**< [SBXD_STDOUT], [SBXD_STDERR]: output beyond the bound was dropped */
} sbxd_exit;

typedef struct {
	/** A chunk of output (at most chunk_size bytes), in read order per
	 *  stream; `data` is valid during the call only. */
	void (*on_output)(sbxd_proc *p, sbxd_stream s, const char *data, size_t len, void *ud);
	/** The process ended and its output is drained (or given up on after
	 *  drain_ms). Called once; `p` stays valid until sbxd_proc_free(). */
	void (*on_exit)(sbxd_proc *p, const sbxd_exit *ex, void *ud);
} sbxd_proc_callbacks;

#define SBXD_PROC_OPTIONS_VERSION 1

typedef struct {
	unsigned int version;        /**< SBXD_PROC_OPTIONS_VERSION */
	/** argv, NULL-terminated, argv[0] non-empty: without '/', looked up in
	 *  the PATH of `env` when it sets one, else the daemon's PATH. */
	char *const *argv;
	/** "NAME=value" strings appended to the daemon's environment (they
	 *  override same-named variables); NULL-terminated; may be NULL. */
	char *const *env;
	int cwd_fd;                  /**< directory to run in (borrowed); -1: the daemon's */
	bool pty;                    /**< a pseudo-terminal instead of pipes */
	unsigned short cols, rows;   /**< initial terminal size when both > 0 */
	bool stdin_pipe;             /**< false: stdin is /dev/null (reads see EOF) */
	long timeout_ms;             /**< <= 0: none */
	long kill_grace_ms;          /**< SIGTERM to SIGKILL; 0: 2000 */
	size_t chunk_size;           /**< bytes per on_output at most; 0: 4096 */
	/** Bytes delivered per stream at most; the rest is read and dropped
	 *  (the child never blocks on it) and sbxd_exit.truncated says so.
	 *  0: no bound. */
	uint64_t max_output_bytes;
	/** RLIMIT_NPROC of the child: processes (and threads) its user may
	 *  have at once, so a fork bomb fails with EAGAIN. 0: inherited. Has
	 *  no effect for root (the kernel exempts CAP_SYS_RESOURCE). */
	long max_tasks;
	/** After the exit, wait this long for the output's EOF (a background
	 *  child may hold it), then stop reading and report; 0: 5000. Only
	 *  without a timeout: with one, the output is awaited until the
	 *  timeout, which then ends the whole group (timed_out is set). */
	long drain_ms;
	/** The daemon's orphan reaper (borrowed; must outlive the process):
	 *  the child is claimed there from fork() until it is waited for, so
	 *  that the reaper never takes its exit status. NULL: none. */
	sbxd_reaper *reaper;
} sbxd_proc_options;

#define SBXD_PROC_OPTIONS_INIT { SBXD_PROC_OPTIONS_VERSION, NULL, NULL, -1, false, 0, 0, \
	false, 0, 0, 0, 0, 0, 0, NULL }

/**
 * Starts a process. On success `*out` is running and owned by the caller
 * (sbxd_proc_free). `loop` must outlive it.
 * @return 0; K8S_EINVAL (no argv, version); K8S_ENOTFOUND (the executable
 *         or the working directory is not there: "command or path not
 *         found: ..."); K8S_EFORBIDDEN (not executable, permission);
 *         K8S_ETOOMANYREQUESTS (fork said EAGAIN); K8S_ERROR, K8S_ENOMEM.
 *         Nothing runs and no callback is called on an error.
 */
int sbxd_proc_spawn(sbxd_proc **out, uv_loop_t *loop, const sbxd_proc_options *o,
                    const sbxd_proc_callbacks *cb, void *ud);

/** Stops (pause) or restarts (resume) reading output, for backpressure.
 *  While paused the child blocks once its pipe is full; output past the
 *  bound is still read and dropped. */
void sbxd_proc_pause_output(sbxd_proc *p);
void sbxd_proc_resume_output(sbxd_proc *p);

/**
 * Queues `len` bytes (copied) for the child's stdin. `done` (may be NULL)
 * runs once they are written, or with status != 0 when they cannot be.
 * @return 0; K8S_EINVAL (stdin closed or never opened: "stdin is closed");
 *         K8S_ENOMEM. An empty write is a no-op success.
 */
int sbxd_proc_write_stdin(sbxd_proc *p, const void *data, size_t len,
                          void (*done)(int status, void *ud), void *ud);

/** Bytes queued for stdin, not yet written. */
size_t sbxd_proc_stdin_pending(const sbxd_proc *p);

/**
 * Closes stdin once the queue is written (EOF for the child; for a
 * terminal, this hangs it up, as upstream does). A second call:
 * K8S_EINVAL ("stdin is already closed").
 */
int sbxd_proc_close_stdin(sbxd_proc *p);

/** Sends `sig` to the process group (the process alone if that fails);
 *  a no-op once it has ended. Returns 0 or K8S_EINVAL (bad signal). */
int sbxd_proc_signal(sbxd_proc *p, int sig);

/**
 * Ends the group as a timeout does: SIGTERM now, SIGKILL after the grace
 * period. For a client gone or a daemon shutting down. Idempotent.
 */
void sbxd_proc_terminate(sbxd_proc *p);

/** Sets the terminal size; K8S_EINVAL (no terminal, zero size) or
 *  K8S_ESHUTDOWN (the process has ended). */
int sbxd_proc_resize(sbxd_proc *p, unsigned short cols, unsigned short rows);

/** True once on_exit has been called. */
bool sbxd_proc_done(const sbxd_proc *p);

/** The child's OS pid (also its process group id). */
pid_t sbxd_proc_pid(const sbxd_proc *p);

/** Whether it runs on a terminal. */
bool sbxd_proc_is_pty(const sbxd_proc *p);

/**
 * Releases the caller's hold: no callback runs after this. A process still
 * running is killed (SIGKILL to its group); the memory goes once it has
 * been reaped and the loop handles are closed, so the loop must run on.
 * NULL is accepted.
 */
void sbxd_proc_free(sbxd_proc *p);

#endif
