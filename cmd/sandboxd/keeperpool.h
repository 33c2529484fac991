/*
 * keeperpool.h - the keepers (keeper.h) of one libuv loop, daemon side:
 * forked when a command finds none idle, given back after each job, kept
 * idle up to a bound for the next commands, and reaped when they exit
 * (one SIGCHLD watcher for all of them, waitpid() of their own pids only,
 * so other children of the process are left to their owners).
 *
 * Each keeper is claimed in the daemon's orphan reaper (reaper.h) from
 * its fork to its reaping. Idle keepers are processes of the daemon's
 * user: they count as tasks for --max-tasks (RLIMIT_NPROC).
 *
 * Threads: every call on the loop's thread.
 * Errors: error codes (asb/common.h) with the last-error message.
 */
#ifndef SBXD_KEEPERPOOL_H
#define SBXD_KEEPERPOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "reaper.h"

typedef struct sbxd_keeper_pool sbxd_keeper_pool;

/** One keeper process, as the pool knows it (owned by the pool). */
typedef struct sbxd_keeper sbxd_keeper;

/**
 * Creates the pool of `loop` (which must outlive it). `max_idle`: keepers
 * kept for the next commands (0: a fresh keeper per command, which exits
 * after it). `reaper` (borrowed, may be NULL): where keepers are claimed.
 * @return 0; ASB_ENOMEM; ASB_ERROR (the SIGCHLD watcher).
 */
int sbxd_keeper_pool_new(sbxd_keeper_pool **out, uv_loop_t *loop, unsigned int max_idle,
                         sbxd_reaper *reaper);

/**
 * Lets go of the pool: idle keepers are told to exit (their sockets
 * closed), keepers still running a job exit when it ends. The memory goes
 * once every keeper is reaped and the watcher closed, so the loop must
 * run on. NULL is accepted.
 */
void sbxd_keeper_pool_free(sbxd_keeper_pool *pool);

/**
 * An idle keeper (woken with SIGCONT, in case something stopped it; idle
 * ones that have ended are reaped and skipped), or a new one forked now. The caller sends it one job (sbxd_keeper_socket)
 * and gives it back with sbxd_keeper_pool_give_back() once the job's
 * reports reached EOF.
 * @return 0; ASB_ETOOMANYREQUESTS (fork said EAGAIN); ASB_ENOMEM;
 *         ASB_ESHUTDOWN (the pool was freed); ASB_ERROR.
 */
int sbxd_keeper_pool_take(sbxd_keeper_pool *pool, sbxd_keeper **out);

/**
 * Gives a keeper back after its job. `reusable`: it reported
 * SBXD_KEEPER_IDLE (it waits for another job): kept idle unless the pool
 * holds max_idle already or was freed, or the keeper was forked while the
 * daemon's resident anonymous memory was over 8 MiB above its level when
 * the pool was made (the pages the daemon changed or freed since stay
 * with the keeper: an idle keeper holds at most about that much), else
 * its socket is closed and it exits. Otherwise it exits by itself; either
 * way it is reaped later.
 */
void sbxd_keeper_pool_give_back(sbxd_keeper_pool *pool, sbxd_keeper *k, bool reusable);

/** The keeper's pid (for signals; valid until it is given back). */
pid_t sbxd_keeper_pid(const sbxd_keeper *k);

/** The daemon's end of the keeper's job socket (keeper.h). */
int sbxd_keeper_socket(const sbxd_keeper *k);

/**
 * True when `k` was forked by the take that handed it out (it ran no job
 * before): a job it cannot take is not worth another try.
 */
bool sbxd_keeper_fresh(const sbxd_keeper *k);

/**
 * True once the pool reaped `k` (it ended): its pid may belong to another
 * process now, so it must not be signalled.
 */
bool sbxd_keeper_reaped(const sbxd_keeper *k);

/** Keepers idle now. */
unsigned int sbxd_keeper_pool_idle(const sbxd_keeper_pool *pool);

/** Keepers forked since the pool was made. */
uint64_t sbxd_keeper_pool_forked(const sbxd_keeper_pool *pool);

#endif
