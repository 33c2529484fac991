/*
 * keeper.c - the process that keeps one command's tree (keeper.h). It
 * runs in a fork of the threaded daemon, so everything here is a system
 * call or plain arithmetic on stack and static buffers: no malloc, no
 * stdio, no opendir.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"

#define MAX_WALK 32768
/* SIGKILL rounds stop after this long even if something survives (a
 * process the keeper may not signal, such as a set-user-ID program, or
 * one stuck in the kernel): the command is reported ended all the same */
#define KILL_DEADLINE_MS 5000
/* pause between SIGKILL rounds, unless a child's end wakes the keeper first */
#define KILL_ROUND_MS 20

/* The walk's queue; a keeper is a process of its own, so static is private. */
static pid_t walk[MAX_WALK];
static size_t walk_len;

/* ---- small helpers, system calls only ---- */

static size_t put_str(char *b, size_t at, const char *s)
{
	while (*s)
		b[at++] = *s++;
	b[at] = '\0';
	return at;
}

static size_t put_num(char *b, size_t at, long v)
{
	char t[24];
	int n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	while (n > 0)
		b[at++] = t[--n];
	b[at] = '\0';
	return at;
}

/* (A pid read twice in a tree that changes under the walk is signalled
 * twice, which does no harm; the queue's bound ends any repetition.) */
static void walk_push(long pid)
{
	if (pid > 0 && walk_len < MAX_WALK)
		walk[walk_len++] = (pid_t)pid;
}

/* Pushes every number in the file at `path`; -1 when it cannot be opened. */
static int push_numbers(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[4096];
	long cur = 0;
	bool in = false;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				cur = cur * 10 + (buf[i] - '0');
				in = true;
			} else if (in) {
				walk_push(cur);
				cur = 0;
				in = false;
			}
		}
	}
	if (in)
		walk_push(cur);
	close(fd);
	return 0;
}

struct dirent64_raw {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Calls fn(number, ud) for each entry of directory `path` named by a
 * number; -1 when it cannot be opened. */
static int each_numbered_entry(const char *path, void (*fn)(long n, void *ud), void *ud)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[8192] __attribute__((aligned(8)));
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);
			off += d->d_reclen;
			long v = 0;
			const char *c = d->d_name;
			if (*c < '1' || *c > '9')
				continue;
			for (; *c >= '0' && *c <= '9'; c++)
				v = v * 10 + (*c - '0');
			if (*c == '\0')
				fn(v, ud);
		}
	}
	close(fd);
	return 0;
}

/* /proc/PID/task/TID/children of one thread. */
static void push_task_children(long tid, void *ud)
{
	long pid = *(long *)ud;
	char path[96];
	size_t at = put_str(path, 0, "/proc/");
	at = put_num(path, at, pid);
	at = put_str(path, at, "/task/");
	at = put_num(path, at, tid);
	put_str(path, at, "/children");
	push_numbers(path);
}

/* The children of `pid`, from every thread's children file; -1 when the
 * kernel has no such files (or the process is gone). */
static int push_children(long pid)
{
	char path[64];
	size_t at = put_str(path, 0, "/proc/");
	at = put_num(path, at, pid);
	put_str(path, at, "/task");
	return each_numbered_entry(path, push_task_children, &pid);
}

/* Without children files: a process whose parent is `self`. */
static void push_if_child(long pid, void *ud)
{
	long self = *(long *)ud;
	char path[64], buf[512];
	size_t at = put_str(path, 0, "/proc/");
	at = put_num(path, at, pid);
	put_str(path, at, "/stat");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	/* "pid (comm) state ppid ...": comm may hold anything, ')' is the last */
	ssize_t rp = -1;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == ')')
			rp = i;
	if (rp < 0 || rp + 4 >= n)
		return;
	long ppid = 0;
	for (ssize_t i = rp + 4; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		ppid = ppid * 10 + (buf[i] - '0');
	if (ppid == self)
		walk_push(pid);
}

int sbxd_keeper_signal_descendants(int sig)
{
	long self = (long)getpid();
	walk_len = 0;
	bool tree = push_children(self) == 0;
	if (!tree)
		each_numbered_entry("/proc", push_if_child, &self);
	/* For SIGKILL, stop each process before reading its children, so that
	 * the list cannot grow behind the walk, and kill them all after. */
	int first = sig == SIGKILL ? SIGSTOP : sig;
	int n = 0;
	for (size_t i = 0; i < walk_len; i++) {
		if (kill(walk[i], first) == 0)
			n++;
		if (tree)
			push_children(walk[i]);
	}
	if (sig == SIGKILL)
		for (size_t i = 0; i < walk_len; i++)
			kill(walk[i], SIGKILL);
	return n;
}

/* ---- the keeper ---- */

static void report(int fd, int32_t kind, int32_t value)
{
	sbxd_keeper_msg m = { kind, value };
	while (write(fd, &m, sizeof(m)) < 0 && errno == EINTR)
		;
}

static void list_fd(long fd, void *ud)
{
	walk_push(fd + 1);  /* walk_push takes numbers > 0 */
}

/* Every descriptor but `keep`: the daemon's sockets and other commands'
 * pipes must not stay open in a process that outlives a fork. Without
 * close_range (Linux < 5.9): what /proc/self/fd lists, listed first and
 * closed after, until a listing finds nothing more to close. */
static void close_all_but(int keep)
{
	long r = keep > 0 ? syscall(SYS_close_range, 0U, (unsigned)keep - 1, 0U) : 0;
	if (r == 0 && syscall(SYS_close_range, (unsigned)keep + 1, ~0U, 0U) == 0)
		return;
	for (bool closed = true; closed;) {
		closed = false;
		walk_len = 0;
		each_numbered_entry("/proc/self/fd", list_fd, NULL);
		if (keep != 0 && close(0) == 0)  /* "0" is not a numbered entry there */
			closed = true;
		for (size_t i = 0; i < walk_len; i++)
			if (walk[i] - 1 != keep && close(walk[i] - 1) == 0)
				closed = true;
	}
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The command's process group (while it may exist) and every descendant. */
static void signal_tree(pid_t cmd, bool *group, bool cmd_reaped, int sig)
{
	if (*group && kill(-cmd, sig) < 0 && errno == ESRCH && cmd_reaped)
		*group = false;  /* gone for good: its id may be reused from now on */
	sbxd_keeper_signal_descendants(sig);
}

_Noreturn void sbxd_keeper_run(int status_fd, pid_t daemon, void (*start)(void *arg),
                               void *arg)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);   /* never SIG_IGN: children must be waited for */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);   /* a daemon gone: the report fails, no more */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* the daemon's thread that forked us ends: end the command */
	prctl(PR_SET_PDEATHSIG, SBXD_KEEPER_KILL, 0, 0, 0);
	if (getppid() != daemon)
		_exit(1);  /* gone before the death signal was set up */
	/* vfork: the keeper is a copy of the whole daemon, and copying its page
	 * tables once more per command cost a quarter of the command rate.
	 * start() makes system calls only and ends in execve or _exit, and the
	 * keeper, suspended meanwhile, reads nothing the child writes. */
	pid_t cmd = vfork();
	if (cmd == 0) {
		start(arg);
		_exit(127);
	}
	if (cmd < 0) {
		report(status_fd, SBXD_KEEPER_FORK_FAILED, errno);
		_exit(1);
	}
	report(status_fd, SBXD_KEEPER_PID, cmd);
	close_all_but(status_fd);

	enum { RUNNING, TERMINATING, KILLING } mode = RUNNING;
	sigset_t wanted;
	sigemptyset(&wanted);
	sigaddset(&wanted, SIGCHLD);
	sigaddset(&wanted, SBXD_KEEPER_TERMINATE);
	sigaddset(&wanted, SBXD_KEEPER_KILL);
	int status = 0;
	bool cmd_reaped = false, group = true;
	long kill_deadline = 0;
	for (;;) {
		bool none_left = false;
		for (;;) {
			int st;
			pid_t r = waitpid(-1, &st, WNOHANG);
			if (r > 0) {
				if (r == cmd) {
					status = st;
					cmd_reaped = true;
				}
				continue;
			}
			if (r < 0 && errno == EINTR)
				continue;
			none_left = r < 0 && errno == ECHILD;
			break;
		}
		if (mode == RUNNING && cmd_reaped)
			break;  /* ended by itself: what it left in the background goes on */
		if (mode != RUNNING && none_left)
			break;  /* the whole tree is gone */
		if (mode == KILLING) {
			if (now_ms() >= kill_deadline)
				break;
			signal_tree(cmd, &group, cmd_reaped, SIGKILL);
		}
		struct timespec round = { 0, KILL_ROUND_MS * 1000000L };
		int s = sigtimedwait(&wanted, NULL, mode == KILLING ? &round : NULL);
		if (s == SBXD_KEEPER_KILL && mode != KILLING) {
			mode = KILLING;
			kill_deadline = now_ms() + KILL_DEADLINE_MS;
		} else if (s == SBXD_KEEPER_TERMINATE && mode == RUNNING) {
			mode = TERMINATING;
			signal_tree(cmd, &group, cmd_reaped, SIGTERM);
			signal_tree(cmd, &group, cmd_reaped, SIGCONT);  /* a stopped one never sees SIGTERM */
		}
	}
	/* not reaped (it survived every SIGKILL round): say it was killed */
	report(status_fd, SBXD_KEEPER_EXIT, cmd_reaped ? status : SIGKILL);
	_exit(0);
}
