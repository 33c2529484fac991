/*
 * proc.h - one command run for a client, on a libuv loop: spawned in a
 * session (and so a process group) of its own under a keeper process
 * (keeper.h) that finds everything the command starts, with pipes or a
 * pseudo-terminal, its output delivered in chunks as it is produced and
 * bounded per stream, stdin fed from a queue, a timeout that ends the
 * whole tree (SIGTERM, then SIGKILL after a grace period), signals and
 * terminal resizes (docs/upstream.md#process-semantics).
 *
 * Ends (docs/sandboxd.md):
 *   - the command exits by itself (the process sandboxd started, even if
 *     it left others running): what is in its pipes is collected for
 *     drain_ms, then on_exit; what it left in the background lives on, and
 *     once the process is freed, output it still writes is read and
 *     dropped (see sbxd_proc_lingering) so that it never blocks or gets
 *     EPIPE, as on a terminal nobody watches;
 *   - the timeout, sbxd_proc_terminate() or sbxd_proc_free() while it
 *     runs: every process of the tree is ended, those that left its
 *     session included, and on_exit comes once they all are gone.
 *
 * Why fork+exec and not uv_spawn: the child must become the session leader
 * AND take the pseudo-terminal as its controlling terminal (TIOCSCTTY),
 * get an RLIMIT_NPROC (the fork-bomb bound) and change to a directory
 * given as a descriptor confined beneath the root, under a keeper; uv_spawn
 * does none of these. The keeper (from the loop's pool, keeperpool.h) gets
 * the command as a job on its socket and vforks it; the child only makes
 * system calls before exec, the executable is looked up in the parent,
 * and the keeper reports the pid (or why the exec failed), then the
 * command's end, on a pipe per command whose EOF ends the keeper's part.
 *
 * Threads: every call on the loop's thread; callbacks run there too.
 * Errors: error codes (asb/common.h) with the last-error message.
 */
#ifndef SBXD_PROC_H
#define SBXD_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "keeperpool.h"

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

/**
 * The processes of one loop that were freed after their command ended by
 * itself while a background process still held their output: it is read
 * and dropped until that process closes it. Owned by the caller (one per
 * loop, loop thread only); zero-initialise. `max` (0: 256) bounds how many
 * are drained at once: beyond it the oldest stops (its pipes are closed,
 * so its holder gets EPIPE or EIO from then on).
 */
typedef struct {
	sbxd_proc *head, *tail;
	unsigned int count;
	unsigned int max;
} sbxd_proc_lingering;

/** Stops every drain of `l` (at shutdown: nothing is left open on the loop). */
void sbxd_proc_lingering_stop(sbxd_proc_lingering *l);

typedef struct {
	/** A chunk of output (at most chunk_size bytes), in read order per
	 *  stream; `data` is valid during the call only. */
	void (*on_output)(sbxd_proc *p, sbxd_stream s, const char *data, size_t len, void *ud);
	/** The command ended and its output is drained (or, held open by a
	 *  background process, collected for drain_ms). Called once; `p` stays
	 *  valid until sbxd_proc_free(). */
	void (*on_exit)(sbxd_proc *p, const sbxd_exit *ex, void *ud);
	/** Optional. Set: sbxd_proc_spawn() returns once a keeper took the
	 *  job, without waiting for the exec (the loop serves others
	 *  meanwhile), and this runs once the exec's outcome is known: `rc` 0,
	 *  the command runs (sbxd_proc_pid() is valid from here, output and
	 *  on_exit follow; the pid is -1 when the keeper ended after taking
	 *  the job without a word, the command killing it say: the command
	 *  may have run, and on_exit says exit_code -1); else a code sbxd_proc_spawn() would have returned
	 *  (ASB_ENOTFOUND, ASB_EFORBIDDEN, ASB_ETOOMANYREQUESTS, ASB_ERROR,
	 *  ASB_ENOMEM, with the last-error message), nothing runs, no other
	 *  callback follows and the caller frees `p`. Until then no output is
	 *  delivered, sbxd_proc_pid() is -1 and sbxd_proc_signal() does
	 *  nothing; sbxd_proc_terminate() and sbxd_proc_free() work (the
	 *  command is ended as soon as it runs). NULL: sbxd_proc_spawn()
	 *  waits for the exec. */
	void (*on_start)(sbxd_proc *p, int rc, void *ud);
} sbxd_proc_callbacks;

#define SBXD_PROC_OPTIONS_VERSION 3

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
	/** After the command exited by itself, collect what its pipes hold
	 *  for this long at most (a background child may keep them open), then
	 *  report; 0: 100. With or without a timeout. */
	long drain_ms;
	/** The loop's keepers (keeperpool.h; borrowed; must outlive the
	 *  process): the command runs under one of them. Required. */
	sbxd_keeper_pool *keepers;
	/** Where the process goes on draining after sbxd_proc_free() when its
	 *  command ended by itself and a background process still holds the
	 *  output (borrowed; must outlive it). NULL: the output is closed at
	 *  the free. */
	sbxd_proc_lingering *lingering;
} sbxd_proc_options;

#define SBXD_PROC_OPTIONS_INIT { .version = SBXD_PROC_OPTIONS_VERSION, .cwd_fd = -1 }

/**
 * Starts a process. On success `*out` is running and owned by the caller
 * (sbxd_proc_free). `loop` must outlive it.
 * @return 0; ASB_EINVAL (no argv, version); ASB_ENOTFOUND (the executable
 *         or the working directory is not there: "command or path not
 *         found: ..."); ASB_EFORBIDDEN (not executable, permission);
 *         ASB_ETOOMANYREQUESTS (fork said EAGAIN); ASB_ERROR, ASB_ENOMEM.
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
 * @return 0; ASB_EINVAL (stdin closed or never opened: "stdin is closed");
 *         ASB_ENOMEM. An empty write is a no-op success.
 */
int sbxd_proc_write_stdin(sbxd_proc *p, const void *data, size_t len,
                          void (*done)(int status, void *ud), void *ud);

/** Bytes queued for stdin, not yet written. */
size_t sbxd_proc_stdin_pending(const sbxd_proc *p);

/**
 * Closes stdin once the queue is written (EOF for the child; for a
 * terminal, this hangs it up, as upstream does). A second call:
 * ASB_EINVAL ("stdin is already closed").
 */
int sbxd_proc_close_stdin(sbxd_proc *p);

/** Sends `sig` to the command's process group (the process alone if that
 *  fails), as upstream does; a no-op once it has ended. Returns 0 or
 *  ASB_EINVAL (bad signal). */
int sbxd_proc_signal(sbxd_proc *p, int sig);

/**
 * Ends the command's whole tree as a timeout does: SIGTERM to every
 * process of it now, SIGKILL to all after the grace period; on_exit comes
 * once none is left. For a daemon shutting down. Idempotent; a no-op once
 * the command has ended by itself (what it left in the background is not
 * its any more).
 */
void sbxd_proc_terminate(sbxd_proc *p);

/** Sets the terminal size; ASB_EINVAL (no terminal, zero size) or
 *  ASB_ESHUTDOWN (the process has ended). */
int sbxd_proc_resize(sbxd_proc *p, unsigned short cols, unsigned short rows);

/** True once on_exit has been called. */
bool sbxd_proc_done(const sbxd_proc *p);

/** The command's OS pid (also its process group id); -1 before on_start,
 *  or when its keeper ended before reporting it. */
pid_t sbxd_proc_pid(const sbxd_proc *p);

/** Whether it runs on a terminal. */
bool sbxd_proc_is_pty(const sbxd_proc *p);

/**
 * Releases the caller's hold: no callback runs after this. A command still
 * running is killed with its whole tree (SIGKILL to every process, at
 * once). One that ended by itself keeps what it left in the background,
 * and its output is drained on the options' `lingering` list while held.
 * The memory goes once the keeper is done with it, the drain is over and
 * the loop handles are closed, so the loop must run on. NULL is accepted.
 */
void sbxd_proc_free(sbxd_proc *p);

#endif
