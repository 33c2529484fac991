/*
 * keeper.h - the keeper: a small process between sandboxd and each command
 * it runs, so that everything the command starts can be found and ended.
 *
 * sandboxd forks the keeper (a copy of itself that never execs); the
 * keeper makes itself a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER)
 * and forks the command. Every process the command starts is then a
 * descendant of the keeper for as long as it lives: a process whose
 * parent dies is reparented to the nearest subreaper above it, which is
 * the keeper, whatever sessions or process groups it made (setsid, a
 * double fork, a daemon). To end a command, the keeper signals all its
 * descendants, again and again in the SIGKILL phase (a process forked
 * meanwhile is reparented to it once its parent is dead), until it has no
 * child left.
 *
 * Why not the alternatives: a cgroup per command would be exact, but a
 * pod's cgroup file system is usually read-only; sandboxd as the
 * subreaper (or PID 1) receives the orphans of every command at once and
 * cannot tell whose they are; process groups and sessions are left by a
 * single setsid(). The price is one more process (and task, for
 * --max-tasks) per running command.
 *
 * Life of a keeper:
 *   running: waits for its children; when the command exits by itself,
 *     it reports the command's wait status and exits: what the command
 *     left running in the background goes on (reparented further up, to
 *     sandboxd when it is PID 1 or a subreaper, else to init).
 *   SBXD_KEEPER_TERMINATE (SIGTERM) from the daemon: SIGTERM and SIGCONT
 *     to the command's process group and every descendant, then it waits
 *     for them all to end.
 *   SBXD_KEEPER_KILL (SIGUSR1) from the daemon, or the death of the daemon
 *     thread that forked it (PR_SET_PDEATHSIG): SIGKILL to every
 *     descendant until none is left.
 *   Once terminating or killing, it reports the command's status only
 *   when no descendant is left, and exits.
 *
 * Reports travel on a pipe as sbxd_keeper_msg records (8 bytes: atomic).
 *
 * Threads: sbxd_keeper_run() runs in a process forked from a threaded
 * one, so it makes system calls only (async-signal-safe), never malloc or
 * stdio.
 */
#ifndef SBXD_KEEPER_H
#define SBXD_KEEPER_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/** What a record on the keeper's pipe says. */
enum {
	SBXD_KEEPER_PID = 1,          /**< value: the command's pid (first record) */
	SBXD_KEEPER_EXIT = 2,         /**< value: the command's wait status (last record) */
	SBXD_KEEPER_FORK_FAILED = 3,  /**< value: fork()'s errno; nothing runs */
};

/** One record on the keeper's pipe. */
typedef struct {
	int32_t kind;
	int32_t value;
} sbxd_keeper_msg;

/** Signal asking a keeper to end its command gracefully (see above). */
#define SBXD_KEEPER_TERMINATE SIGTERM
/** Signal asking a keeper to kill its command's whole tree now. */
#define SBXD_KEEPER_KILL SIGUSR1

/**
 * The keeper's body, in a process just forked by the daemon with every
 * signal blocked (the keeper takes them with sigtimedwait). Forks the
 * command, whose child side runs `start(arg)`, which must exec or _exit
 * (it gets every descriptor the keeper had, and resets its own signal
 * mask); then closes every descriptor but `status_fd` (the write end of
 * the report pipe) and keeps the command's tree as described above.
 * `daemon` is the daemon's pid, to notice a daemon already gone.
 * Never returns.
 */
_Noreturn void sbxd_keeper_run(int status_fd, pid_t daemon, void (*start)(void *arg),
                               void *arg);

/**
 * Sends `sig` to every descendant of the calling process that it can
 * find now: a breadth-first walk of /proc/PID/task/TID/children (only the
 * direct children, from a scan of /proc, where the kernel lacks those
 * files). At most 32768 processes per call; the next call finds the rest.
 * Async-signal-safe. Returns the number of processes signalled.
 */
int sbxd_keeper_signal_descendants(int sig);

#endif
