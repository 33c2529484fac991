/*
 * reaper.h - reaps the orphans that the kernel hands to sandboxd. The
 * image's ENTRYPOINT makes sandboxd PID 1 of its container, so every
 * process whose parent ends (an agent's `server &` once its command
 * returned, a daemonised tool) becomes its child; unreaped, each stays a
 * zombie that holds a pid and counts against --max-tasks (RLIMIT_NPROC)
 * until the pod dies. The same holds when sandboxd is a child subreaper
 * (prctl(2) PR_SET_CHILD_SUBREAPER).
 *
 * The daemon's own children (proc.c) are waited for by their owners,
 * with waitpid() of their pid: they are "claimed" here from fork() to
 * that wait, and the reaper never waits for a claimed pid. The claim is
 * made with the reaper's lock held across fork(), so no scan can see the
 * new child unclaimed.
 *
 * On SIGCHLD (a libuv signal watcher on a thread of the reaper's own) it
 * lists the children of the process (/proc/self/task/TID/children, else
 * a scan of /proc) and waits, without blocking, for each unclaimed one.
 *
 * Threads: every function is thread-safe, except that new/free must not
 * race the others.
 * Errors: error codes (asb/common.h) with the last-error message.
 */
#ifndef SBXD_REAPER_H
#define SBXD_REAPER_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct sbxd_reaper sbxd_reaper;

/**
 * Creates a reaper. With `watch`, a thread of its own reaps on every
 * SIGCHLD until sbxd_reaper_free(); without, only sbxd_reaper_reap() does
 * (tests). Owned by the caller.
 * @return 0; ASB_ENOMEM; ASB_ERROR (the thread or its loop cannot start).
 */
int sbxd_reaper_new(sbxd_reaper **out, bool watch);

/** Stops the thread (when watching) and frees; NULL is accepted. Claims
 *  still held are dropped. */
void sbxd_reaper_free(sbxd_reaper *r);

/** Takes the reaper's lock: held from just before fork() to
 *  sbxd_reaper_claim_locked() of the new child (or to the failed fork). */
void sbxd_reaper_lock(sbxd_reaper *r);

/** Releases the lock taken by sbxd_reaper_lock(). */
void sbxd_reaper_unlock(sbxd_reaper *r);

/**
 * Claims `pid` (> 0) for its owner, with the lock held: the reaper leaves
 * it alone until sbxd_reaper_release(). @return 0; ASB_ENOMEM.
 */
int sbxd_reaper_claim_locked(sbxd_reaper *r, pid_t pid);

/** Drops the claim on `pid`, once its owner has waited for it (no-op
 *  when not claimed). */
void sbxd_reaper_release(sbxd_reaper *r, pid_t pid);

/**
 * Waits, without blocking, for every child of the process that has ended
 * and is not claimed. @return the number reaped (>= 0).
 */
int sbxd_reaper_reap(sbxd_reaper *r);

#endif
