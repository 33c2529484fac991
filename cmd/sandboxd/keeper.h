/*
 * keeper.h - the keeper: a small process between sandboxd and the commands
 * it runs, so that everything a command starts can be found and ended.
 *
 * sandboxd forks the keeper (a copy of itself that never execs); the
 * keeper makes itself a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER)
 * and forks each command it is given. Every process the command starts is
 * then a descendant of the keeper for as long as it lives: a process whose
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
 * single setsid().
 *
 * A keeper runs one command at a time and is reused: forking a copy of
 * the daemon (page tables, then a copy-on-write fault in the daemon for
 * every page it writes afterwards, then the copy's teardown) cost more
 * than the command `true` itself. Jobs come on a SOCK_SEQPACKET socket
 * (sbxd_keeper_send_job): the command's path, argv and environment, its
 * descriptors (SCM_RIGHTS) and the write end of a report pipe of its own.
 * A keeper takes a next job only when the last one left nothing behind
 * (no child of its own remains) and left the keeper as it started: its
 * resource limits, nice value, scheduling policy and attributes, CPU
 * affinity, I/O priority, timer slack, session keyring, cgroup,
 * oom_score_adj and coredump_filter, which a command inherits and which a
 * process of the same user (the command, whose parent the keeper is, or
 * another command) may change. A keeper changed by its command exits
 * after its report, as one whose command left something behind; one
 * changed while idle exits when it receives the next job, before its
 * TAKEN record, and the daemon gives the job to another keeper. A command that leaves background
 * processes keeps its keeper, which then exits once it has reported, so
 * that they are reparented further up (to sandboxd when it is PID 1 or a
 * subreaper, else to init) as before. Signals the daemon sent for an
 * earlier job are discarded when the next one starts (the daemon sends
 * none after it read the end of that job's reports, and sends the next
 * job after that).
 *
 * Life of a job:
 *   running: waits for its children; when the command exits by itself,
 *     it reports the command's wait status.
 *   SBXD_KEEPER_TERMINATE (SIGTERM) from the daemon: SIGTERM and SIGCONT
 *     to the command's process group and every descendant, then it waits
 *     for them all to end.
 *   SBXD_KEEPER_KILL (SIGUSR1) from the daemon, or the death of the daemon
 *     thread that forked it (PR_SET_PDEATHSIG): SIGKILL to every
 *     descendant until none is left.
 *   Once terminating or killing, it reports the command's status only
 *   when no descendant is left.
 *   Then SBXD_KEEPER_IDLE when it takes another job, and it closes the
 *   report pipe: EOF there is the end of the job for the daemon.
 * An idle keeper exits when its socket reaches EOF (the daemon closed it,
 * or is gone).
 *
 * Reports travel on the job's pipe as sbxd_keeper_msg records (8 bytes:
 * atomic).
 *
 * Threads: sbxd_keeper_run() runs in a process forked from a threaded
 * one, so it makes system calls only (async-signal-safe), never malloc or
 * stdio. sbxd_keeper_send_job() is the daemon's side, any thread.
 */
#ifndef SBXD_KEEPER_H
#define SBXD_KEEPER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** What a record on a job's report pipe says. */
enum {
	SBXD_KEEPER_TAKEN = 6,        /**< the job was received whole (first record) */
	SBXD_KEEPER_PID = 1,          /**< value: the command's pid (after TAKEN) */
	SBXD_KEEPER_EXIT = 2,         /**< value: the command's wait status */
	SBXD_KEEPER_FORK_FAILED = 3,  /**< value: fork()'s errno; nothing runs */
	SBXD_KEEPER_EXEC_FAILED = 4,  /**< value: the errno of the child's setup or execve; nothing runs */
	SBXD_KEEPER_IDLE = 5,         /**< the keeper takes another job (last record) */
};

/** One record on a report pipe. */
typedef struct {
	int32_t kind;
	int32_t value;
} sbxd_keeper_msg;

/** Signal asking a keeper to end its command gracefully (see above). */
#define SBXD_KEEPER_TERMINATE SIGTERM
/** Signal asking a keeper to kill its command's whole tree now. */
#define SBXD_KEEPER_KILL SIGUSR1

/** The job's command runs on a terminal: fds[1] is its slave side. */
#define SBXD_KEEPER_JOB_PTY 1u
/** The job has a working directory: the last descriptor. */
#define SBXD_KEEPER_JOB_CWD 2u

/** Largest path + argv + environment of a job, in bytes (with NULs). */
#define SBXD_KEEPER_JOB_MAX (16u << 20)
/** Most strings (argv and environment together) of a job. */
#define SBXD_KEEPER_JOB_MAX_STRINGS 65536u

/** What a job is, besides its strings and descriptors. */
typedef struct {
	uint32_t flags;     /**< SBXD_KEEPER_JOB_* */
	long max_tasks;     /**< RLIMIT_NPROC of the command; 0: inherited */
} sbxd_keeper_job;

/**
 * The keeper's body, in a process just forked by the daemon with every
 * signal blocked (the keeper takes them with sigtimedwait). `sock` is its
 * end of the job socket (SOCK_SEQPACKET); `daemon` is the daemon's pid,
 * to notice a daemon already gone. Closes every other descriptor, then
 * runs jobs as described above until the socket reaches EOF. Never
 * returns.
 */
_Noreturn void sbxd_keeper_run(int sock, pid_t daemon);

/**
 * Sends a job on the daemon's end `sock` of a keeper's socket (blocking;
 * the first message carries the descriptors and up to 64 KiB of strings,
 * the rest follows in messages of that size).
 * `path` is the executable (absolute), `argv` and `envp` NULL-terminated;
 * `fds`: the write end of the job's report pipe, then stdin, stdout and
 * stderr (or, with SBXD_KEEPER_JOB_PTY, the terminal's slave side alone),
 * then the working directory with SBXD_KEEPER_JOB_CWD. The descriptors
 * are duplicated into the keeper; the caller keeps and closes its own.
 * @return 0, or an errno: E2BIG (over SBXD_KEEPER_JOB_MAX or
 *         SBXD_KEEPER_JOB_MAX_STRINGS), ENOMEM, EPIPE or ECONNRESET (the
 *         keeper is gone), another sendmsg(2) error.
 */
int sbxd_keeper_send_job(int sock, const sbxd_keeper_job *job, const char *path,
                         char *const *argv, char *const *envp, const int *fds, int nfds);

/**
 * Sends `sig` to every descendant of the calling process that it can
 * find now: a breadth-first walk of /proc/PID/task/TID/children (only the
 * direct children, from a scan of /proc, where the kernel lacks those
 * files). At most 32768 processes per call; the next call finds the rest.
 * Async-signal-safe. Returns the number of processes signalled.
 */
int sbxd_keeper_signal_descendants(int sig);

#endif
