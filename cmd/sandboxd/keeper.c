/*
 * keeper.c - the process that keeps its commands' trees (keeper.h), one
 * job at a time, and the daemon's side of the job socket. The keeper runs
 * in a fork of the threaded daemon, so everything it does is a system
 * call or plain arithmetic on stack and static buffers: no malloc, no
 * stdio, no opendir.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

/* Bytes per message on the job socket. */
#define CHUNK 65536
#define JOB_MAGIC 0x4a425853u  /* "SXBJ" */

/* The first message of a job; its strings follow (keeper.h). */
typedef struct {
	uint32_t magic;
	uint32_t flags;
	int64_t max_tasks;
	uint32_t nstrings;   /* path, argv..., envp... */
	uint32_t argc;
	uint64_t strings_len;
} wire_header;

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

/* ---- helpers of the keeper ---- */

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

/* ---- what a command may change in its keeper ---- */

/* Attributes of the keeper that its commands inherit and that another
 * process of the same user can change: a command can change them in its
 * keeper ($PPID) for the commands after it, and any command in an idle
 * keeper. Compared with what the keeper started with before each job (a
 * keeper changed exits without taking it: the daemon gives the job to
 * another) and after it (a keeper changed is not reused). */
typedef struct {
	struct rlimit lim[RLIM_NLIMITS];
	int nice;
	int policy;
	struct sched_param param;
	long ioprio;
	long affinity_len;
	unsigned char affinity[128];   /* 1024 CPUs; more: the length is -1 both times */
	long sched_attr_rc;
	uint32_t sched_attr[14];       /* struct sched_attr (56 bytes): custom slices, uclamp */
	long timerslack;
	long keyring;                  /* the session keyring's id (a key joined into it) */
	long oom_len, coredump_len, cgroup_len;
	char oom[16];                  /* oom_score_adj, as the file says it */
	char coredump[24];             /* coredump_filter */
	char cgroup[512];              /* /proc/self/cgroup (its first 512 bytes) */
} attrs;

static attrs baseline, now_attrs;
/* /proc/self files kept open (the keeper closed everything else) */
static int oom_fd = -1, coredump_fd = -1, cgroup_fd = -1;

static long read_file(int fd, char *buf, size_t cap)
{
	return fd >= 0 ? (long)pread(fd, buf, cap, 0) : -1;
}

static void read_attrs(attrs *a)
{
	memset(a, 0, sizeof(*a));
	for (int r = 0; r < RLIM_NLIMITS; r++)
		getrlimit(r, &a->lim[r]);
	errno = 0;
	a->nice = getpriority(PRIO_PROCESS, 0);
	if (errno)
		a->nice = 1000;
	a->policy = sched_getscheduler(0);
	sched_getparam(0, &a->param);
	a->ioprio = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
	a->affinity_len = syscall(SYS_sched_getaffinity, 0, sizeof(a->affinity), a->affinity);
	a->sched_attr_rc = syscall(SYS_sched_getattr, 0, a->sched_attr,
	                           (unsigned)sizeof(a->sched_attr), 0U);
	a->timerslack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	a->keyring = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */,
	                     -3 /* KEY_SPEC_SESSION_KEYRING */, 0);
	a->oom_len = read_file(oom_fd, a->oom, sizeof(a->oom));
	a->coredump_len = read_file(coredump_fd, a->coredump, sizeof(a->coredump));
	a->cgroup_len = read_file(cgroup_fd, a->cgroup, sizeof(a->cgroup));
}

static bool attrs_unchanged(void)
{
	read_attrs(&now_attrs);
	return memcmp(&now_attrs, &baseline, sizeof(baseline)) == 0;
}

/* ---- the daemon's side ---- */

int sbxd_keeper_send_job(int sock, const sbxd_keeper_job *job, const char *path,
                         char *const *argv, char *const *envp, const int *fds, int nfds)
{
	uint64_t len = strlen(path) + 1;
	uint32_t argc = 0, n = 1;
	for (char *const *a = argv; *a; a++, argc++, n++)
		len += strlen(*a) + 1;
	for (char *const *e = envp; e && *e; e++, n++)
		len += strlen(*e) + 1;
	if (len > SBXD_KEEPER_JOB_MAX || n > SBXD_KEEPER_JOB_MAX_STRINGS + 1)
		return E2BIG;
	char *buf = malloc(len);
	if (!buf)
		return ENOMEM;
	size_t at = 0;
	size_t l = strlen(path) + 1;
	memcpy(buf, path, l);
	at += l;
	for (char *const *a = argv; *a; a++) {
		l = strlen(*a) + 1;
		memcpy(buf + at, *a, l);
		at += l;
	}
	for (char *const *e = envp; e && *e; e++) {
		l = strlen(*e) + 1;
		memcpy(buf + at, *e, l);
		at += l;
	}
	wire_header h = { JOB_MAGIC, job->flags, job->max_tasks, n, argc, len };
	size_t first = len < CHUNK - sizeof(h) ? (size_t)len : CHUNK - sizeof(h);
	struct iovec iov[2] = { { &h, sizeof(h) }, { buf, first } };
	union {
		struct cmsghdr c;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	memset(&ctl, 0, sizeof(ctl));
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	if (nfds > 0 && nfds <= 8) {
		m.msg_control = ctl.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	int err = 0;
	ssize_t w;
	while ((w = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (w < 0)
		err = errno;
	for (at = first; !err && at < len;) {
		size_t k = len - at < CHUNK ? (size_t)(len - at) : CHUNK;
		while ((w = send(sock, buf + at, k, MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
		if (w < 0)
			err = errno;
		else
			at += (size_t)w;
	}
	free(buf);
	return err;
}

/* ---- the keeper ---- */

/* A job as received: the first message's buffer, the strings (in it, or
 * mapped when they did not fit), the pointers into them, the descriptors. */
static char first_msg[CHUNK] __attribute__((aligned(8)));
static char *ptrs[SBXD_KEEPER_JOB_MAX_STRINGS + 3];

typedef struct {
	wire_header h;
	char *strings;       /* first_msg + sizeof(h), or a mapping of strings_len */
	bool mapped;
	char *path;
	char **argv, **envp;
	int fds[8];
	int nfds;
	int report, in, out, err, tty, cwd;
} job_t;

static void report(int fd, int32_t kind, int32_t value)
{
	sbxd_keeper_msg m = { kind, value };
	while (write(fd, &m, sizeof(m)) < 0 && errno == EINTR)
		;
}

static void close_job_fds(job_t *j)
{
	for (int i = 0; i < j->nfds; i++)
		if (j->fds[i] >= 0 && j->fds[i] != j->report)
			close(j->fds[i]);
	j->nfds = 0;
}

static void job_done(job_t *j)
{
	if (j->mapped)
		munmap(j->strings, j->h.strings_len);
	j->mapped = false;
}

/* Splits the strings into path, argv and envp; false when they are not
 * exactly nstrings NUL-terminated strings. */
static bool split_strings(job_t *j)
{
	uint64_t len = j->h.strings_len;
	uint32_t n = j->h.nstrings;
	if (n < 2 || n > SBXD_KEEPER_JOB_MAX_STRINGS + 1 || j->h.argc < 1 || j->h.argc > n - 1 ||
	    len == 0 || j->strings[len - 1] != '\0')
		return false;
	uint32_t k = 0;
	size_t slot = 0;
	for (uint64_t i = 0; i < len; i++) {
		if (i == 0 || j->strings[i - 1] == '\0') {
			if (k == n)
				return false;
			ptrs[slot++] = j->strings + i;
			k++;
			if (k == 1 + j->h.argc)
				ptrs[slot++] = NULL;  /* argv ends, envp starts */
		}
	}
	if (k != n)
		return false;
	ptrs[slot] = NULL;
	j->path = ptrs[0];
	j->argv = &ptrs[1];
	j->envp = &ptrs[2 + j->h.argc];
	return true;
}

/* Receives the next job. 1: a job; 0: EOF (the daemon closed the socket);
 * -1: a malformed job (its descriptors closed). */
static int receive_job(int sock, job_t *j)
{
	memset(j, 0, sizeof(*j));
	for (int i = 0; i < 8; i++)
		j->fds[i] = -1;
	j->report = j->in = j->out = j->err = j->tty = j->cwd = -1;
	union {
		struct cmsghdr c;
		char b[CMSG_SPACE(sizeof(int) * 8)];
	} ctl;
	struct iovec iov = { first_msg, sizeof(first_msg) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
	                    .msg_controllen = sizeof(ctl.b) };
	ssize_t n;
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n == 0)
		return 0;
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < k && j->nfds < 8; i++)
				memcpy(&j->fds[j->nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
		}
	bool ok = (size_t)n >= sizeof(wire_header) && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
	if (ok) {
		memcpy(&j->h, first_msg, sizeof(j->h));
		bool pty = j->h.flags & SBXD_KEEPER_JOB_PTY, cwd = j->h.flags & SBXD_KEEPER_JOB_CWD;
		ok = j->h.magic == JOB_MAGIC && j->h.strings_len <= SBXD_KEEPER_JOB_MAX &&
		     j->nfds == (pty ? 2 : 4) + (cwd ? 1 : 0);
		if (ok) {
			j->report = j->fds[0];
			if (pty)
				j->tty = j->in = j->out = j->err = j->fds[1];
			else
				j->in = j->fds[1], j->out = j->fds[2], j->err = j->fds[3];
			if (cwd)
				j->cwd = j->fds[j->nfds - 1];
		}
	}
	size_t got = ok ? (size_t)n - sizeof(wire_header) : 0;
	if (ok && got < j->h.strings_len) {
		void *map = mmap(NULL, j->h.strings_len, PROT_READ | PROT_WRITE,
		                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ok = map != MAP_FAILED;
		if (ok) {
			j->strings = map;
			j->mapped = true;
			memcpy(j->strings, first_msg + sizeof(wire_header), got);
		}
		while (ok && got < j->h.strings_len) {
			size_t want = j->h.strings_len - got;
			ssize_t r = recv(sock, j->strings + got, want < CHUNK ? want : CHUNK, 0);
			if (r < 0 && errno == EINTR)
				continue;
			ok = r > 0;
			if (ok)
				got += (size_t)r;
		}
	} else if (ok) {
		ok = got == j->h.strings_len;
		j->strings = first_msg + sizeof(wire_header);
	}
	if (ok && split_strings(j))
		return 1;
	job_done(j);
	for (int i = 0; i < j->nfds; i++)
		close(j->fds[i]);
	j->nfds = 0;
	return -1;
}

/* Child side, between vfork and exec: system calls only. The keeper set
 * every signal but SIGPIPE to its default. What fails sends its errno on
 * the error pipe (wherever it is by then), and the child exits. */
_Noreturn static void child(const job_t *j, int errpipe)
{
	int rc = 0;
	sigset_t none;
	sigemptyset(&none);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL);  /* ignored by the keeper (and the daemon) */
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0)
		rc = errno;
	if (!rc && j->tty >= 0 && ioctl(j->tty, TIOCSCTTY, 0) < 0)
		rc = errno;
	/* first: the cwd may be one of the numbers about to be reused */
	if (!rc && j->cwd >= 0 && fchdir(j->cwd) < 0)
		rc = errno;
	/* Move every descriptor we need above 9 first, so that putting them in
	 * place (0..2, and the error pipe at 3) never overwrites another. */
	int ep = rc ? -1 : fcntl(errpipe, F_DUPFD_CLOEXEC, 10);
	int in = rc ? -1 : fcntl(j->in, F_DUPFD, 10);
	int out = rc ? -1 : fcntl(j->out, F_DUPFD, 10);
	int err = rc ? -1 : fcntl(j->err, F_DUPFD, 10);
	if (!rc && (ep < 0 || in < 0 || out < 0 || err < 0))
		rc = errno;
	if (ep >= 0)
		errpipe = ep;
	if (!rc && (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0))
		rc = errno;
	if (!rc && (dup2(ep, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0))
		rc = errno;
	if (!rc && j->h.max_tasks > 0) {
		struct rlimit rl = { (rlim_t)j->h.max_tasks, (rlim_t)j->h.max_tasks };
		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			rc = errno;
	}
	if (!rc) {
		/* everything else goes, except the error pipe (close-on-exec) */
		syscall(SYS_close_range, 4U, ~0U, 0U);
		errpipe = 3;
		execve(j->path, j->argv, j->envp);
		rc = errno;
	}
	ssize_t w = write(errpipe, &rc, sizeof(rc));
	(void)w;
	_exit(127);
}

/* Discards every signal pending from an earlier job (keeper.h). */
static void drain_signals(void)
{
	sigset_t all;
	sigfillset(&all);
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&all, NULL, &zero) > 0)
		;
}

/* Waits for the command's tree as keeper.h says; `*none_left`: no child
 * of the keeper remains. Returns the command's wait status. */
static int keep(pid_t cmd, bool *none_left_out)
{
	enum { RUNNING, TERMINATING, KILLING } mode = RUNNING;
	sigset_t wanted;
	sigemptyset(&wanted);
	sigaddset(&wanted, SIGCHLD);
	sigaddset(&wanted, SBXD_KEEPER_TERMINATE);
	sigaddset(&wanted, SBXD_KEEPER_KILL);
	int status = 0;
	bool cmd_reaped = false, group = true, none_left = false;
	long kill_deadline = 0;
	for (;;) {
		none_left = false;
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
	*none_left_out = none_left;
	/* not reaped (it survived every SIGKILL round): say it was killed */
	return cmd_reaped ? status : SIGKILL;
}

/* Whether the keeper has no child left (the command's tree is all gone). */
static bool no_children(void)
{
	siginfo_t si;
	si.si_pid = 0;
	/* WNOWAIT: a child that ended stays to be waited for by keep() */
	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

/* Runs one job; true when the keeper takes another (IDLE was reported). */
static bool run_job(job_t *j)
{
	/* first: a keeper that ends before this record never started the job,
	 * so the daemon may give it to another; after it, never */
	report(j->report, SBXD_KEEPER_TAKEN, 0);
	int ep[2];
	if (pipe2(ep, O_CLOEXEC) < 0) {
		report(j->report, SBXD_KEEPER_FORK_FAILED, errno);
		close_job_fds(j);
		job_done(j);
		report(j->report, SBXD_KEEPER_IDLE, 0);
		close(j->report);
		return true;
	}
	/* vfork: no copy of the keeper's page tables per command. child()
	 * makes system calls only and ends in execve or _exit, and the keeper,
	 * suspended meanwhile, reads nothing the child writes: the exec's
	 * outcome comes on the close-on-exec error pipe (valgrind turns vfork
	 * into fork, so shared memory would not do). */
	pid_t cmd = vfork();
	if (cmd == 0)
		child(j, ep[1]);
	int fork_err = errno;
	close(ep[1]);
	close_job_fds(j);
	job_done(j);
	bool again = true;
	/* the last record and IDLE in one write: the daemon sees the keeper
	 * free as soon as it sees the command's end */
	sbxd_keeper_msg last[2] = { { SBXD_KEEPER_FORK_FAILED, fork_err }, { SBXD_KEEPER_IDLE, 0 } };
	if (cmd >= 0) {
		int cerr = 0;
		ssize_t n;
		while ((n = read(ep[0], &cerr, sizeof(cerr))) < 0 && errno == EINTR)
			;
		if (n == (ssize_t)sizeof(cerr)) {
			while (waitpid(cmd, NULL, 0) < 0 && errno == EINTR)
				;
			last[0].kind = SBXD_KEEPER_EXEC_FAILED;
			last[0].value = cerr ? cerr : EINVAL;
			again = no_children();
		} else {
			report(j->report, SBXD_KEEPER_PID, cmd);
			last[0].kind = SBXD_KEEPER_EXIT;
			last[0].value = keep(cmd, &again);
		}
	}
	close(ep[0]);
	if (again && !attrs_unchanged())
		again = false;  /* the command changed its keeper: a fresh one for the next */
	size_t len = again ? sizeof(last) : sizeof(last[0]);
	while (write(j->report, last, len) < 0 && errno == EINTR)
		;
	close(j->report);
	return again;
}

_Noreturn void sbxd_keeper_run(int sock, pid_t daemon)
{
	/* every disposition to its default, so that a command's child never
	 * runs one of the daemon's handlers between vfork and exec (the
	 * keeper takes its signals with sigtimedwait) */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);   /* a daemon gone: the report fails, no more */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* the daemon's thread that forked us ends: end the command */
	prctl(PR_SET_PDEATHSIG, SBXD_KEEPER_KILL, 0, 0, 0);
	if (getppid() != daemon)
		_exit(1);  /* gone before the death signal was set up */
	/* the daemon's sockets and other commands' pipes must not stay open in
	 * a process that outlives a fork */
	close_all_but(sock);
	oom_fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
	coredump_fd = open("/proc/self/coredump_filter", O_RDONLY | O_CLOEXEC);
	cgroup_fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	read_attrs(&baseline);
	for (;;) {
		job_t j;
		int r = receive_job(sock, &j);
		if (r <= 0)
			_exit(r == 0 ? 0 : 1);
		if (!attrs_unchanged())
			_exit(0);  /* changed while idle: no TAKEN, the daemon gives the job to another */
		drain_signals();
		if (!run_job(&j))
			_exit(0);
	}
}
