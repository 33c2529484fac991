/*
 * proc.c - child processes on a libuv loop (proc.h): a keeper process
 * (keeper.c, from the loop's pool, keeperpool.c) that forks each command
 * into a new session, pipes or a pseudo-terminal polled with uv_poll, the
 * keeper's reports on a pipe per command (its EOF ends the keeper's part),
 * timers for the timeout, the SIGKILL grace and the output drain, and the
 * drain that goes on after the end for output a background process still
 * holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asb/common.h"
#include "keeper.h"
#include "keeperpool.h"
#include "proc.h"

extern char **environ;

#define DEFAULT_GRACE_MS 2000
#define DEFAULT_CHUNK 4096
#define DEFAULT_DRAIN_MS 100
#define DEFAULT_LINGER_MAX 256
/* chunks read per readiness callback before yielding to other handles */
#define READS_PER_WAKEUP 16
/* read size for output past the bound, which is dropped */
#define DRAIN_BUF 65536
/* read size once the process is freed and its output only drained */
#define LINGER_BUF 4096

/* A queued stdin write. */
typedef struct wreq {
	struct wreq *next;
	char *data;
	size_t len, off;
	void (*done)(int status, void *ud);
	void *ud;
} wreq;

/* One descriptor polled on the loop: an output pipe, the stdin pipe, or
 * the terminal master (both directions). */
typedef struct {
	sbxd_proc *p;
	uv_poll_t poll;
	int fd;             /* -1 once closed */
	bool readable;      /* carries output */
	bool writable;      /* carries stdin */
	bool eof;           /* output ended (or the descriptor is closed) */
	bool discard;       /* past the drain after the end: read and dropped */
	bool handle_open;   /* poll initialised and not yet closed */
	sbxd_stream stream;
	uint64_t delivered;
} chan;

enum { CH_OUT, CH_ERR, CH_IN, CH_COUNT };

struct sbxd_proc {
	uv_loop_t *loop;
	sbxd_proc_callbacks cb;
	void *ud;
	pid_t pid;               /* the command */
	sbxd_keeper_pool *pool;  /* the keeper's pool (borrowed) */
	sbxd_keeper *keeper;     /* its keeper (keeper.h), the pool's; until released */
	pid_t keeper_pid;
	bool keeper_idle;        /* the keeper reported SBXD_KEEPER_IDLE: it takes another job */
	bool pty;
	chan ch[CH_COUNT];       /* with a pty, ch[CH_OUT] is the master, both ways */
	uv_poll_t report;        /* the keeper's report pipe */
	int report_fd;           /* -1 once closed */
	bool report_open;        /* `report` initialised and not yet closed */
	uv_timer_t timeout, grace, drain;
	unsigned int open_handles;
	wreq *wq_head, *wq_tail;
	size_t wq_bytes;
	bool stdin_closed;       /* close requested (or never opened) */
	bool paused;
	bool exited;             /* the command's end is known: reported, or the keeper is lost */
	bool released;           /* the keeper's reports ended (EOF): it was given back */
	bool done, freed, killing, group_gone;
	bool starting;           /* async start: the job is taken, the pid not known yet */
	char *argv0;             /* for a start error's message (async start) */
	sbxd_proc_lingering *linger_list;  /* borrowed; NULL: no drain after free */
	bool lingering;          /* on linger_list */
	sbxd_proc *lprev, *lnext;
	size_t chunk, buf_size;
	uint64_t max_out;
	long grace_ms, drain_ms;
	sbxd_exit exit;
	char *buf;
};

static void unref(sbxd_proc *p)
{
	if (--p->open_handles == 0 && p->freed) {
		free(p->buf);
		free(p->argv0);
		free(p);
	}
}

static void handle_closed(uv_handle_t *h)
{
	unref(h->data);
}

static void chan_closed(uv_handle_t *h)
{
	unref(((chan *)h->data)->p);
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, handle_closed);
}

static void fail_queue(sbxd_proc *p, int status)
{
	wreq *w = p->wq_head;
	p->wq_head = p->wq_tail = NULL;
	p->wq_bytes = 0;
	while (w) {
		wreq *n = w->next;
		if (w->done && !p->freed)
			w->done(status, w->ud);
		free(w->data);
		free(w);
		w = n;
	}
}

static void chan_update(chan *c);
static void maybe_release(sbxd_proc *p);
static void linger_end(sbxd_proc *p);

static void chan_close(chan *c)
{
	if (c->fd < 0)
		return;
	if (c->handle_open) {
		uv_poll_stop(&c->poll);
		uv_close((uv_handle_t *)&c->poll, chan_closed);
		c->handle_open = false;
	}
	close(c->fd);
	c->fd = -1;
	c->eof = true;
}

static bool outputs_open(const sbxd_proc *p)
{
	return p->ch[CH_OUT].fd >= 0 || p->ch[CH_ERR].fd >= 0;
}

/* Signals the command's process group (API signals, as upstream); the
 * keeper is not in it. Remembers when the group is gone, so that a
 * recycled id is never signalled. */
static void kill_group(sbxd_proc *p, int sig)
{
	if (p->group_gone || p->pid <= 0)
		return;  /* gone, or not started yet */
	if (kill(-p->pid, sig) < 0 && errno == ESRCH) {
		p->group_gone = true;
		if (!p->exited)
			kill(p->pid, sig);
	}
}

/* Asks the keeper (SBXD_KEEPER_TERMINATE or _KILL), waking it first in
 * case something stopped it. */
static void tell_keeper(sbxd_proc *p, int sig)
{
	if (p->released || sbxd_keeper_reaped(p->keeper))
		return;  /* gone: its pid may be another process's now */
	kill(p->keeper_pid, SIGCONT);
	kill(p->keeper_pid, sig);
}

static void maybe_finish(sbxd_proc *p)
{
	if (p->done || !p->exited)
		return;
	const chan *o = &p->ch[CH_OUT], *e = &p->ch[CH_ERR];
	if (!(o->eof || o->discard) || !(e->eof || e->discard))
		return;
	p->done = true;
	uv_timer_stop(&p->timeout);
	uv_timer_stop(&p->drain);
	/* the grace timer keeps running after a timeout: the keeper gets its
	 * SIGKILL request for whatever ignored SIGTERM */
	p->stdin_closed = true;
	if (!p->pty)
		chan_close(&p->ch[CH_IN]);
	fail_queue(p, ASB_ESHUTDOWN);
	if (p->cb.on_exit && !p->freed)
		p->cb.on_exit(p, &p->exit, p->ud);
}

static void on_drain_timeout(uv_timer_t *t)
{
	sbxd_proc *p = t->data;
	/* something still holds the output open (a background child): stop
	 * waiting for it; what it writes from now on is read and dropped, so
	 * that it never blocks nor gets EPIPE */
	for (int i = CH_OUT; i <= CH_ERR; i++)
		if (!p->ch[i].eof) {
			p->ch[i].discard = true;
			chan_update(&p->ch[i]);
		}
	maybe_finish(p);
}

static void output_eof(chan *c)
{
	sbxd_proc *p = c->p;
	if (p->pty) {
		/* the master also carries stdin: keep the descriptor until the end
		 * (or release), just stop reading */
		c->eof = true;
		c->readable = false;
		chan_update(c);
		if (p->lingering)
			chan_close(c);
	} else {
		chan_close(c);
	}
	if (p->lingering && !outputs_open(p))
		linger_end(p);
	else
		maybe_finish(p);
}

static void read_some(chan *c)
{
	sbxd_proc *p = c->p;
	for (int i = 0; i < READS_PER_WAKEUP && c->fd >= 0 && !c->eof; i++) {
		bool over = c->discard || (p->max_out && c->delivered >= p->max_out);
		if (p->paused && !over)
			return;
		/* output that is dropped is only counted: read it in big gulps */
		ssize_t n = read(c->fd, p->buf, over ? p->buf_size : p->chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			/* EIO: the terminal's last slave closed; anything else: treat
			 * as the end of the output too */
			output_eof(c);
			return;
		}
		if (n == 0) {
			output_eof(c);
			return;
		}
		if (c->discard)
			continue;
		size_t len = (size_t)n;
		if (p->max_out) {
			uint64_t room = c->delivered >= p->max_out ? 0 : p->max_out - c->delivered;
			if (len > room) {
				p->exit.truncated[c->stream] = true;
				len = (size_t)room;
			}
		}
		c->delivered += len;
		if (len && p->cb.on_output && !p->freed)
			p->cb.on_output(p, c->stream, p->buf, len, p->ud);
		if (p->freed && !p->lingering)
			return;
	}
}

static void write_some(chan *c)
{
	sbxd_proc *p = c->p;
	while (p->wq_head && c->fd >= 0) {
		wreq *w = p->wq_head;
		ssize_t n = write(c->fd, w->data + w->off, w->len - w->off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			/* the child closed its end (EPIPE) */
			fail_queue(p, ASB_ETRANSPORT);
			if (!p->pty)
				chan_close(c);
			return;
		}
		w->off += (size_t)n;
		p->wq_bytes -= (size_t)n;
		if (w->off == w->len) {
			p->wq_head = w->next;
			if (!p->wq_head)
				p->wq_tail = NULL;
			if (w->done && !p->freed)
				w->done(0, w->ud);
			free(w->data);
			free(w);
		}
	}
	if (!p->wq_head && p->stdin_closed && !p->done) {
		if (p->pty) {
			/* hang up the terminal: its master goes, output ends */
			chan_close(&p->ch[CH_OUT]);
			maybe_finish(p);
		} else {
			chan_close(&p->ch[CH_IN]);
		}
	}
}

static void on_chan(uv_poll_t *h, int status, int events)
{
	chan *c = h->data;
	if (status < 0) {
		if (c->readable)
			output_eof(c);
		else
			chan_close(c);
		return;
	}
	if ((events & UV_WRITABLE) && c->writable)
		write_some(c);
	if (c->fd >= 0 && (events & (UV_READABLE | UV_DISCONNECT)) && c->readable)
		read_some(c);
	if (c->fd >= 0)
		chan_update(c);
}

/* Sets what to poll for: output unless paused (or past the bound, or
 * dropped), stdin while there is something queued. */
static void chan_update(chan *c)
{
	if (c->fd < 0 || !c->handle_open)
		return;
	sbxd_proc *p = c->p;
	int ev = 0;
	/* no output before the start is told: the caller answers on_start first */
	if (c->readable && !c->eof && !p->starting) {
		bool over = c->discard || (p->max_out && c->delivered >= p->max_out);
		if (!p->paused || over)
			ev |= UV_READABLE;
	}
	if (c->writable && p->wq_head)
		ev |= UV_WRITABLE;
	if (ev)
		uv_poll_start(&c->poll, ev, on_chan);
	else
		uv_poll_stop(&c->poll);
}

/* ---- the command's end, from the keeper ---- */

static void report_close(sbxd_proc *p)
{
	if (p->report_fd < 0)
		return;
	if (p->report_open) {
		uv_poll_stop(&p->report);
		close_handle((uv_handle_t *)&p->report);
		p->report_open = false;
	}
	close(p->report_fd);
	p->report_fd = -1;
}

/* The command ended (`status` from waitpid, or `lost`: the keeper died
 * without a word, killed by the command itself, say). */
static void command_ended(sbxd_proc *p, int status, bool lost)
{
	if (p->exited)
		return;
	p->exited = true;
	if (!lost && WIFEXITED(status)) {
		p->exit.exit_code = WEXITSTATUS(status);
	} else {
		p->exit.exit_code = -1;
		p->exit.signal = !lost && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	}
	if (p->freed)
		return;
	/* Output still open: a background process holds it. Collect what is
	 * there for drain_ms and answer; it lives on. (After a timeout or a
	 * terminate the keeper reports only once the whole tree is gone, so
	 * the output has ended by then.) */
	if (!p->done && (!p->ch[CH_OUT].eof || !p->ch[CH_ERR].eof))
		uv_timer_start(&p->drain, on_drain_timeout, (uint64_t)p->drain_ms, 0);
	maybe_finish(p);
}

static void maybe_release(sbxd_proc *p);
static int start_error(const char *argv0, ssize_t n, const sbxd_keeper_msg *m);

/* The exec's outcome, read asynchronously (on_start): the pid, then the
 * output flows; or why nothing runs, and no on_exit comes. */
static void started(sbxd_proc *p, ssize_t n, const sbxd_keeper_msg *m)
{
	p->starting = false;
	int rc = 0;
	if (n == (ssize_t)sizeof(*m) && m->kind == SBXD_KEEPER_PID) {
		p->pid = m->value;
	} else if (n == 0) {
		/* the keeper ended after TAKEN without a word (the command may
		 * have killed it): the command may have run, so it is not a
		 * failed start (a client would retry it) but a command whose end
		 * is unknown, as when the keeper is lost after the pid */
	} else {
		rc = start_error(p->argv0, n, m);
		p->exited = p->done = true;
		p->exit.exit_code = -1;
	}
	for (int i = 0; i < CH_COUNT; i++)
		chan_update(&p->ch[i]);
	if (p->cb.on_start && !p->freed)
		p->cb.on_start(p, rc, p->ud);
}

/* The keeper is done with this command (its reports reached EOF). */
static void keeper_released(sbxd_proc *p)
{
	if (p->released)
		return;
	p->released = true;
	sbxd_keeper_pool_give_back(p->pool, p->keeper, p->keeper_idle);
	p->keeper = NULL;
}

/* Reads the keeper's records that are there; EOF: it is done with the
 * command (or gone). */
static void read_report(sbxd_proc *p)
{
	while (p->report_fd >= 0) {
		sbxd_keeper_msg m;
		ssize_t n = read(p->report_fd, &m, sizeof(m));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n == (ssize_t)sizeof(m)) {
			if (p->starting)
				started(p, n, &m);
			else if (m.kind == SBXD_KEEPER_EXIT)
				command_ended(p, m.value, false);
			else if (m.kind == SBXD_KEEPER_IDLE)
				p->keeper_idle = true;
			continue;
		}
		/* EOF (or a torn record, which a pipe never makes) */
		if (p->starting)
			started(p, 0, NULL);  /* the keeper ended before the exec's outcome */
		report_close(p);
		command_ended(p, 0, true);
		keeper_released(p);
		maybe_release(p);
		return;
	}
}

static void on_report(uv_poll_t *h, int status, int events)
{
	read_report(h->data);
}

static void on_grace(uv_timer_t *t)
{
	tell_keeper(t->data, SBXD_KEEPER_KILL);
}

void sbxd_proc_terminate(sbxd_proc *p)
{
	if (p->killing || p->exited)
		return;
	p->killing = true;
	tell_keeper(p, SBXD_KEEPER_TERMINATE);
	uv_timer_start(&p->grace, on_grace, (uint64_t)p->grace_ms, 0);
}

static void on_timeout(uv_timer_t *t)
{
	sbxd_proc *p = t->data;
	if (p->done || p->exited)
		return;  /* ended by itself just in time */
	p->exit.timed_out = true;
	sbxd_proc_terminate(p);
}

/* ---- after the caller let go ---- */

/* Closes every handle; the memory goes with the last close callback. */
static void release(sbxd_proc *p)
{
	for (int i = 0; i < CH_COUNT; i++)
		chan_close(&p->ch[i]);
	report_close(p);
	fail_queue(p, ASB_ESHUTDOWN);
	close_handle((uv_handle_t *)&p->timeout);
	close_handle((uv_handle_t *)&p->drain);
	close_handle((uv_handle_t *)&p->grace);
}

/* Freed by its owner: goes once the keeper is released and no drain is left. */
static void maybe_release(sbxd_proc *p)
{
	if (p->freed && p->released && !p->lingering)
		release(p);
}

static void linger_unlink(sbxd_proc *p)
{
	sbxd_proc_lingering *l = p->linger_list;
	if (p->lprev)
		p->lprev->lnext = p->lnext;
	else
		l->head = p->lnext;
	if (p->lnext)
		p->lnext->lprev = p->lprev;
	else
		l->tail = p->lprev;
	p->lprev = p->lnext = NULL;
	l->count--;
	p->lingering = false;
}

/* The drain after free is over (the output ended, or it was stopped). */
static void linger_end(sbxd_proc *p)
{
	if (!p->lingering)
		return;
	linger_unlink(p);
	for (int i = 0; i < CH_COUNT; i++)
		chan_close(&p->ch[i]);
	maybe_release(p);
}

/* After a command that ended by itself, output a background process still
 * holds is read and dropped until it closes: that process goes on as if
 * on a terminal nobody watches, instead of dying of EPIPE at its next
 * write (a server logging its requests). */
static void linger_start(sbxd_proc *p)
{
	sbxd_proc_lingering *l = p->linger_list;
	chan_close(&p->ch[CH_IN]);
	fail_queue(p, ASB_ESHUTDOWN);
	uv_timer_stop(&p->timeout);
	uv_timer_stop(&p->drain);
	char *small = malloc(LINGER_BUF);
	if (small) {
		free(p->buf);
		p->buf = small;
		p->buf_size = p->chunk = LINGER_BUF;
	}
	p->paused = false;
	p->lingering = true;
	p->lnext = l->head;
	if (l->head)
		l->head->lprev = p;
	else
		l->tail = p;
	l->head = p;
	l->count++;
	for (int i = CH_OUT; i <= CH_ERR; i++) {
		p->ch[i].discard = true;
		if (p->pty && i == CH_OUT && p->ch[i].eof)
			chan_close(&p->ch[i]);  /* the terminal ended already */
		chan_update(&p->ch[i]);
	}
	unsigned int max = l->max ? l->max : DEFAULT_LINGER_MAX;
	while (l->count > max)
		linger_end(l->tail);  /* the oldest: its holder gets EPIPE from now on */
}

void sbxd_proc_lingering_stop(sbxd_proc_lingering *l)
{
	while (l->head)
		linger_end(l->head);
}

void sbxd_proc_free(sbxd_proc *p)
{
	if (!p)
		return;
	p->freed = true;
	if (!p->exited) {
		/* still running: the keeper ends the whole tree at once (also
		 * after a terminate, whose grace is not awaited any more) */
		tell_keeper(p, SBXD_KEEPER_KILL);
	} else if (!p->killing && outputs_open(p) && p->linger_list) {
		/* ended by itself: what it left in the background lives on */
		linger_start(p);
	}
	if (!p->lingering)
		for (int i = 0; i < CH_COUNT; i++)
			chan_close(&p->ch[i]);
	maybe_release(p);
}

/* ---- spawning ---- */

/* The value of NAME in a NULL-terminated "NAME=value" list, last one wins. */
static const char *env_lookup(char *const *env, const char *name)
{
	const char *v = NULL;
	size_t n = strlen(name);
	for (; env && *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			v = *env + n + 1;
	return v;
}

/* Finds argv0 in PATH as execvp would, in the parent (malloc'd result). */
static int find_executable(const char *argv0, char *const *env, char **out)
{
	*out = NULL;
	if (strchr(argv0, '/')) {
		*out = strdup(argv0);
		return *out ? 0 : ENOMEM;
	}
	const char *path = env_lookup(env, "PATH");
	if (!path)
		path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int err = ENOENT;
	size_t alen = strlen(argv0);
	for (const char *d = path; *d;) {
		const char *e = strchr(d, ':');
		size_t dl = e ? (size_t)(e - d) : strlen(d);
		if (dl > 0 && d[0] == '/') {  /* relative PATH entries are ignored */
			char *cand = malloc(dl + alen + 2);
			if (!cand)
				return ENOMEM;
			memcpy(cand, d, dl);
			cand[dl] = '/';
			memcpy(cand + dl + 1, argv0, alen + 1);
			struct stat st;
			if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
				if (access(cand, X_OK) == 0) {
					*out = cand;
					return 0;
				}
				err = EACCES;
			}
			free(cand);
		}
		d += dl + (e ? 1 : 0);
	}
	return err;
}

/* The daemon's environment with `extra` appended, same names replaced. */
static char **merge_env(char *const *extra)
{
	size_t n = 0, m = 0;
	for (char **e = environ; e && *e; e++)
		n++;
	for (char *const *e = extra; e && *e; e++)
		m++;
	char **v = calloc(n + m + 1, sizeof(*v));
	if (!v)
		return NULL;
	size_t k = 0;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t nl = eq ? (size_t)(eq - *e) : strlen(*e);
		bool overridden = false;
		for (char *const *x = extra; x && *x && !overridden; x++)
			overridden = strncmp(*x, *e, nl) == 0 && (*x)[nl] == '=';
		if (!overridden)
			v[k++] = *e;
	}
	for (char *const *x = extra; x && *x; x++) {
		/* a later duplicate within `extra` wins too */
		const char *eq = strchr(*x, '=');
		size_t nl = eq ? (size_t)(eq - *x) : strlen(*x);
		bool later = false;
		for (char *const *y = x + 1; *y && !later; y++)
			later = strncmp(*y, *x, nl) == 0 && (*y)[nl] == '=';
		if (!later)
			v[k++] = *x;
	}
	v[k] = NULL;
	return v;
}

static int spawn_error(int err, const char *what)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		return asb_error_set(ASB_ENOTFOUND, 404, NULL, "command or path not found: %s: %s",
		                     what, strerror(err));
	case EACCES:
	case EPERM:
		return asb_error_set(ASB_EFORBIDDEN, 403, NULL, "%s: %s", what, strerror(err));
	case EAGAIN:
		return asb_error_set(ASB_ETOOMANYREQUESTS, 429, NULL, "%s: %s", what,
		                     strerror(err));
	case ENOMEM:
		return asb_error_set(ASB_ENOMEM, 500, NULL, "%s: %s", what, strerror(err));
	default:
		return asb_error_set(ASB_ERROR, 500, NULL, "%s: %s", what, strerror(err));
	}
}

static void chan_init(sbxd_proc *p, chan *c, int fd, bool readable, bool writable,
                      sbxd_stream s)
{
	c->p = p;
	c->fd = fd;
	c->readable = readable;
	c->writable = writable;
	c->stream = s;
	c->eof = !readable;
	if (fd < 0)
		return;
	if (uv_poll_init(p->loop, &c->poll, fd) == 0) {
		c->poll.data = c;
		c->handle_open = true;
		p->open_handles++;
		chan_update(c);
	}
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/* Reads one keeper record, blocking (only during the spawn, when it is
 * written at once). 0 at EOF. */
static ssize_t read_record(int fd, sbxd_keeper_msg *m)
{
	ssize_t n;
	do
		n = read(fd, m, sizeof(*m));
	while (n < 0 && errno == EINTR);
	return n;
}

/* The spawn's file descriptors, -1 when not open. The parent's ends:
 * [0] stdin write, [1] stdout read, [2] stderr read; the child's: [3]
 * stdin, [4] stdout, [5] stderr, [6] tty; [7],[8] the keeper's reports. */
enum { SPAWN_FDS = 9 };

/* Opens the command's stdio: a pty, or pipes (stdin from /dev/null when
 * not piped). Returns 0 or a spawn_error(). */
static int open_stdio(const sbxd_proc_options *o, int *fds)
{
	if (o->pty) {
		struct winsize ws = { .ws_row = o->rows, .ws_col = o->cols };
		if (openpty(&fds[1], &fds[6], NULL, NULL,
		            (o->cols && o->rows) ? &ws : NULL) < 0)
			return spawn_error(errno, "openpty");
		fcntl(fds[1], F_SETFD, FD_CLOEXEC);
		fcntl(fds[6], F_SETFD, FD_CLOEXEC);
		fds[3] = fds[4] = fds[5] = fds[6];
		return 0;
	}
	int rc = 0;
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	if (o->stdin_pipe) {
		if (pipe2(pin, O_CLOEXEC) < 0)
			rc = spawn_error(errno, "pipe");
	} else if ((pin[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		rc = spawn_error(errno, "/dev/null");
	}
	if (!rc && (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0))
		rc = spawn_error(errno, "pipe");
	fds[0] = pin[1]; fds[3] = pin[0];
	fds[1] = pout[0]; fds[4] = pout[1];
	fds[2] = perr[0]; fds[5] = perr[1];
	return rc;
}

/* A close-on-exec pipe into fds[i] (read end) and fds[i + 1]. */
static int open_pipe(int *fds, int i)
{
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0)
		return spawn_error(errno, "pipe");
	fds[i] = pp[0];
	fds[i + 1] = pp[1];
	return 0;
}

/* Closes the child's ends, which belong to the keeper once sent. */
static void close_child_ends(const sbxd_proc_options *o, int *fds)
{
	if (o->pty) {
		if (fds[6] >= 0)
			close(fds[6]);
		fds[3] = fds[4] = fds[5] = fds[6] = -1;
	} else {
		close_fds(&fds[3], 3);
	}
	close_fds(&fds[8], 1);
}

/* Sends the job to a keeper of the pool: an idle one, or a new one when
 * none is (or when the one taken turns out to be gone). */
static int send_job(const sbxd_proc_options *o, const char *path, char **envp,
                    const int *fds, sbxd_keeper **out)
{
	sbxd_keeper_job job = { 0, o->max_tasks };
	int send[6], n = 0;
	send[n++] = fds[8];
	if (o->pty) {
		job.flags |= SBXD_KEEPER_JOB_PTY;
		send[n++] = fds[6];
	} else {
		send[n++] = fds[3];
		send[n++] = fds[4];
		send[n++] = fds[5];
	}
	if (o->cwd_fd >= 0) {
		job.flags |= SBXD_KEEPER_JOB_CWD;
		send[n++] = o->cwd_fd;
	}
	for (;;) {
		sbxd_keeper *k;
		int rc = sbxd_keeper_pool_take(o->keepers, &k);
		if (rc)
			return rc;
		int err = sbxd_keeper_send_job(sbxd_keeper_socket(k), &job, path, o->argv, envp,
		                               send, n);
		if (!err) {
			*out = k;
			return 0;
		}
		bool fresh = sbxd_keeper_fresh(k);
		sbxd_keeper_pool_give_back(o->keepers, k, false);
		/* an idle keeper may have died (a command can kill it): the next
		 * idle one, or a fresh one, whose failure is the answer (each try
		 * takes one keeper out of the pool, so this ends) */
		if ((err != EPIPE && err != ECONNRESET && err != ECONNREFUSED) || fresh)
			return err == E2BIG
			       ? asb_error_set(ASB_EINVAL, 400, NULL,
			                       "command line and environment too long")
			       : spawn_error(err, "keeper");
	}
}

/* Why nothing runs, from the keeper's record after TAKEN (`n` bytes of
 * `m` read; 0: EOF). */
static int start_error(const char *argv0, ssize_t n, const sbxd_keeper_msg *m)
{
	if (n == (ssize_t)sizeof(*m) && m->kind == SBXD_KEEPER_EXEC_FAILED)
		return spawn_error(m->value, m->value == ENOENT || m->value == ENOTDIR ? argv0 : "exec");
	return spawn_error(n == (ssize_t)sizeof(*m) && m->kind == SBXD_KEEPER_FORK_FAILED
	                   ? m->value : EAGAIN, "fork");
}

/* Waits for the keeper's first records: TAKEN, then (`wait_pid`) the
 * command's pid, or why nothing runs; on a failure, reads the rest up to
 * the EOF and gives the keeper back. `*lost`: a reused keeper ended
 * before it took the job (killed while idle, its end closing), so nothing
 * ran and another keeper may run it. Without `wait_pid`, *pid is -1 and
 * the rest comes through the report poll (async start). */
static int await_exec(const sbxd_proc_options *o, int report_fd, sbxd_keeper *k,
                      bool wait_pid, pid_t *pid, bool *lost)
{
	*lost = false;
	*pid = -1;
	sbxd_keeper_msg m = { 0, 0 };
	ssize_t n = read_record(report_fd, &m);
	bool taken = n == (ssize_t)sizeof(m) && m.kind == SBXD_KEEPER_TAKEN;
	if (taken && !wait_pid)
		return 0;
	if (taken)
		n = read_record(report_fd, &m);
	if (n == (ssize_t)sizeof(m) && m.kind == SBXD_KEEPER_PID) {
		*pid = m.value;
		return 0;
	}
	if (!taken && n == 0 && !sbxd_keeper_fresh(k)) {
		*lost = true;
		sbxd_keeper_pool_give_back(o->keepers, k, false);
		return 0;
	}
	if (taken && n == 0)
		return 0;  /* ended after TAKEN: the command may have run; its end is unknown (pid -1) */
	int rc = start_error(o->argv[0], n, &m);
	bool idle = false;
	while (read_record(report_fd, &m) == (ssize_t)sizeof(m))
		idle = idle || m.kind == SBXD_KEEPER_IDLE;
	sbxd_keeper_pool_give_back(o->keepers, k, idle);
	return rc;
}

/* Starts the command: stdio and report pipes, the job to a keeper, and
 * the wait for its exec. Leaves the parent's ends ([0..2], [7]) in `fds`
 * on success; closes everything on failure. The child's stdio ends stay
 * open until a keeper took the job, so that a lost keeper's job can go to
 * the next one (with a report pipe of its own: the lost one's EOF). */
static int launch(const sbxd_proc_options *o, const char *path, char **envp, int *fds,
                  bool wait_pid, sbxd_keeper **keeper, pid_t *pid)
{
	int rc = open_stdio(o, fds);
	if (!rc)
		rc = open_pipe(fds, 7);
	while (!rc) {
		rc = send_job(o, path, envp, fds, keeper);
		close_fds(&fds[8], 1);  /* the keeper's now: its end makes the EOF */
		bool lost = false;
		if (!rc)
			rc = await_exec(o, fds[7], *keeper, wait_pid, pid, &lost);
		if (rc || !lost)
			break;
		close_fds(&fds[7], 1);
		rc = open_pipe(fds, 7);
	}
	close_child_ends(o, fds);
	if (rc) {
		close_fds(fds, 3);
		close_fds(&fds[7], 1);
	}
	return rc;
}

/* Hands the started command's parent ends to the loop: the handle's
 * settings, its timers, its channels and the keeper's report poll. */
static void attach(sbxd_proc *p, uv_loop_t *loop, const sbxd_proc_options *o,
                   const sbxd_proc_callbacks *cb, void *ud, const int *fds)
{
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
	fcntl(fds[7], F_SETFL, fcntl(fds[7], F_GETFL) | O_NONBLOCK);

	p->loop = loop;
	p->pool = o->keepers;
	if (cb)
		p->cb = *cb;
	p->ud = ud;
	p->freed = false;
	p->pty = o->pty;
	p->max_out = o->max_output_bytes;
	p->grace_ms = o->kill_grace_ms > 0 ? o->kill_grace_ms : DEFAULT_GRACE_MS;
	p->drain_ms = o->drain_ms > 0 ? o->drain_ms : DEFAULT_DRAIN_MS;
	p->linger_list = o->lingering;
	p->stdin_closed = !o->stdin_pipe && !o->pty;
	uv_timer_t *timers[] = { &p->timeout, &p->grace, &p->drain };
	for (int i = 0; i < 3; i++) {
		uv_timer_init(loop, timers[i]);
		timers[i]->data = p;
		p->open_handles++;
	}
	if (o->pty) {
		chan_init(p, &p->ch[CH_OUT], fds[1], true, true, SBXD_STDOUT);
		chan_init(p, &p->ch[CH_ERR], -1, false, false, SBXD_STDERR);
		chan_init(p, &p->ch[CH_IN], -1, false, false, SBXD_STDOUT);
	} else {
		chan_init(p, &p->ch[CH_OUT], fds[1], true, false, SBXD_STDOUT);
		chan_init(p, &p->ch[CH_ERR], fds[2], true, false, SBXD_STDERR);
		chan_init(p, &p->ch[CH_IN], fds[0], false, true, SBXD_STDOUT);
	}
	p->report_fd = fds[7];
	if (uv_poll_init(loop, &p->report, fds[7]) == 0) {
		p->report.data = p;
		p->report_open = true;
		p->open_handles++;
		uv_poll_start(&p->report, UV_READABLE | UV_DISCONNECT, on_report);
	}
	if (o->timeout_ms > 0)
		uv_timer_start(&p->timeout, on_timeout, (uint64_t)o->timeout_ms, 0);
}

int sbxd_proc_spawn(sbxd_proc **out, uv_loop_t *loop, const sbxd_proc_options *o,
                    const sbxd_proc_callbacks *cb, void *ud)
{
	*out = NULL;
	if (!o || o->version != SBXD_PROC_OPTIONS_VERSION || !o->argv || !o->argv[0] ||
	    !o->argv[0][0])
		return asb_error_set(ASB_EINVAL, 400, NULL, "command is required");
	if (!o->keepers)
		return asb_error_set(ASB_EINVAL, 500, NULL, "no keeper pool");
	char *path = NULL;
	int err = find_executable(o->argv[0], o->env, &path);
	if (err)
		return spawn_error(err, o->argv[0]);
	char **envp = merge_env(o->env);
	sbxd_proc *p = calloc(1, sizeof(*p));
	size_t chunk = o->chunk_size ? o->chunk_size : DEFAULT_CHUNK;
	size_t buf_size = chunk > DRAIN_BUF ? chunk : DRAIN_BUF;
	char *buf = malloc(buf_size);
	if (!envp || !p || !buf) {
		free(path);
		free(envp);
		free(p);
		free(buf);
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	}
	p->buf = buf;
	p->chunk = chunk;
	p->buf_size = buf_size;
	p->report_fd = -1;
	bool async = cb && cb->on_start;
	if (async && !(p->argv0 = strdup(o->argv[0]))) {
		free(path);
		free(envp);
		free(p);
		free(buf);
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	}
	int fds[SPAWN_FDS];
	for (int i = 0; i < SPAWN_FDS; i++)
		fds[i] = -1;
	sbxd_keeper *keeper = NULL;
	pid_t pid = -1;
	int rc = launch(o, path, envp, fds, !async, &keeper, &pid);
	free(path);
	free(envp);
	if (rc) {
		free(buf);
		free(p->argv0);
		free(p);
		return rc;
	}
	p->pid = pid;
	p->starting = async;
	p->keeper = keeper;
	p->keeper_pid = sbxd_keeper_pid(keeper);
	attach(p, loop, o, cb, ud, fds);
	*out = p;
	return 0;
}

/* ---- control ---- */

static chan *stdin_chan(sbxd_proc *p)
{
	return p->pty ? &p->ch[CH_OUT] : &p->ch[CH_IN];
}

void sbxd_proc_pause_output(sbxd_proc *p)
{
	if (p->paused)
		return;
	p->paused = true;
	chan_update(&p->ch[CH_OUT]);
	chan_update(&p->ch[CH_ERR]);
}

void sbxd_proc_resume_output(sbxd_proc *p)
{
	if (!p->paused)
		return;
	p->paused = false;
	chan_update(&p->ch[CH_OUT]);
	chan_update(&p->ch[CH_ERR]);
}

int sbxd_proc_write_stdin(sbxd_proc *p, const void *data, size_t len,
                          void (*done)(int status, void *ud), void *ud)
{
	chan *c = stdin_chan(p);
	if (p->stdin_closed || c->fd < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     p->stdin_closed ? "stdin is already closed" : "stdin is closed");
	if (len == 0) {
		if (done)
			done(0, ud);
		return 0;
	}
	wreq *w = calloc(1, sizeof(*w));
	if (w)
		w->data = malloc(len);
	if (!w || !w->data) {
		free(w);
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	}
	memcpy(w->data, data, len);
	w->len = len;
	w->done = done;
	w->ud = ud;
	if (p->wq_tail)
		p->wq_tail->next = w;
	else
		p->wq_head = w;
	p->wq_tail = w;
	p->wq_bytes += len;
	chan_update(c);
	return 0;
}

size_t sbxd_proc_stdin_pending(const sbxd_proc *p)
{
	return p->wq_bytes;
}

int sbxd_proc_close_stdin(sbxd_proc *p)
{
	if (p->stdin_closed)
		return asb_error_set(ASB_EINVAL, 0, NULL, "stdin is already closed");
	p->stdin_closed = true;
	chan *c = stdin_chan(p);
	if (c->fd >= 0)
		write_some(c);  /* closes at once when nothing is queued */
	return 0;
}

int sbxd_proc_signal(sbxd_proc *p, int sig)
{
	if (sig <= 0 || sig >= NSIG)
		return asb_error_set(ASB_EINVAL, 400, NULL, "unsupported signal %d", sig);
	if (p->exited || p->group_gone)
		return 0;
	kill_group(p, sig);
	return 0;
}

int sbxd_proc_resize(sbxd_proc *p, unsigned short cols, unsigned short rows)
{
	if (!p->pty)
		return asb_error_set(ASB_EINVAL, 400, NULL, "the process has no terminal");
	if (p->done || p->ch[CH_OUT].fd < 0)
		return asb_error_set(ASB_ESHUTDOWN, 400, NULL, "the process has ended");
	if (!cols || !rows)
		return asb_error_set(ASB_EINVAL, 400, NULL, "cols and rows must be > 0");
	struct winsize ws = { .ws_row = rows, .ws_col = cols };
	if (ioctl(p->ch[CH_OUT].fd, TIOCSWINSZ, &ws) < 0)
		return asb_error_set(ASB_ERROR, 500, NULL, "resize: %s", strerror(errno));
	return 0;
}

bool sbxd_proc_done(const sbxd_proc *p)
{
	return p->done;
}

pid_t sbxd_proc_pid(const sbxd_proc *p)
{
	return p->pid;
}

bool sbxd_proc_is_pty(const sbxd_proc *p)
{
	return p->pty;
}
