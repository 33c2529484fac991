/*
 * keeperpool.c - the keepers of one loop (keeperpool.h): a list of every
 * keeper not yet reaped, a stack of the idle ones, one SIGCHLD watcher.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asb/common.h"
#include "keeper.h"
#include "keeperpool.h"

struct sbxd_keeper {
	sbxd_keeper *prev, *next;   /* every keeper not yet reaped and released */
	sbxd_keeper *next_idle;
	pid_t pid;
	int sock;                   /* daemon's end; -1 once closed */
	bool idle, busy, reaped;
	bool fresh;                 /* forked by the take that handed it out */
	bool reusable;              /* forked while the daemon's heap was small */
};

/* A keeper is a copy of the daemon: the pages the daemon changes after
 * the fork stay with the keeper (a big answer's buffers, freed in the
 * daemon, live on in every keeper forked while they existed). One forked
 * while the daemon's anonymous memory is more than this above what it was
 * when the pool was made serves one command only, so that an idle keeper
 * holds at most about this much beyond the daemon's start. (Relative, so
 * that a sanitizer's or valgrind's own memory does not count.) */
#define REUSE_MAX_GROWTH_BYTES (8u << 20)

struct sbxd_keeper_pool {
	uv_loop_t *loop;
	uv_signal_t sigchld;
	sbxd_reaper *reaper;
	unsigned int max_idle, n_idle;
	sbxd_keeper *all, *idle;
	uint64_t forked;
	uint64_t anon_base;         /* the daemon's anonymous memory at the pool's start */
	bool closing;
};

static void pool_closed(uv_handle_t *h)
{
	free(h->data);
}

static void unlink_keeper(sbxd_keeper_pool *pool, sbxd_keeper *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		pool->all = k->next;
	if (k->next)
		k->next->prev = k->prev;
	free(k);
	if (pool->closing && !pool->all)
		uv_close((uv_handle_t *)&pool->sigchld, pool_closed);
}

static void close_socket(sbxd_keeper *k)
{
	if (k->sock >= 0) {
		close(k->sock);
		k->sock = -1;
		if (!k->reaped)
			kill(k->pid, SIGCONT);  /* a stopped keeper must see the EOF */
	}
}

static void remove_idle(sbxd_keeper_pool *pool, sbxd_keeper *k)
{
	for (sbxd_keeper **pp = &pool->idle; *pp; pp = &(*pp)->next_idle)
		if (*pp == k) {
			*pp = k->next_idle;
			k->next_idle = NULL;
			k->idle = false;
			pool->n_idle--;
			return;
		}
}

/* Reaps `k` if it has ended (true); an idle one leaves the pool then. */
static bool reap(sbxd_keeper_pool *pool, sbxd_keeper *k)
{
	if (k->reaped)
		return true;
	int st;
	pid_t r;
	while ((r = waitpid(k->pid, &st, WNOHANG)) < 0 && errno == EINTR)
		;
	if (r == 0)
		return false;
	k->reaped = true;
	if (pool->reaper)
		sbxd_reaper_release(pool->reaper, k->pid);
	close_socket(k);
	if (k->idle)
		remove_idle(pool, k);
	if (!k->busy)
		unlink_keeper(pool, k);  /* a busy one goes at its give-back */
	return true;
}

static void on_sigchld(uv_signal_t *h, int signum)
{
	sbxd_keeper_pool *pool = h->data;
	for (sbxd_keeper *k = pool->all, *next; k; k = next) {
		next = k->next;
		if (!k->reaped)
			reap(pool, k);
	}
}

/* The daemon's resident anonymous memory in bytes (statm: resident less
 * file-backed and shared pages); 0 when unknown. */
static uint64_t anon_bytes(void)
{
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[128];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	unsigned long long size, resident, shared;
	if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) != 3 || shared > resident)
		return 0;
	return (uint64_t)(resident - shared) * (uint64_t)sysconf(_SC_PAGESIZE);
}

int sbxd_keeper_pool_new(sbxd_keeper_pool **out, uv_loop_t *loop, unsigned int max_idle,
                         sbxd_reaper *reaper)
{
	*out = NULL;
	sbxd_keeper_pool *pool = calloc(1, sizeof(*pool));
	if (!pool)
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	pool->loop = loop;
	pool->max_idle = max_idle;
	pool->anon_base = max_idle > 0 ? anon_bytes() : 0;
	pool->reaper = reaper;
	uv_signal_init(loop, &pool->sigchld);
	pool->sigchld.data = pool;
	/* watched from before the first fork, so no keeper's end is missed */
	int e = uv_signal_start(&pool->sigchld, on_sigchld, SIGCHLD);
	if (e) {
		uv_close((uv_handle_t *)&pool->sigchld, pool_closed);
		return asb_error_set(ASB_ERROR, 500, NULL, "SIGCHLD watcher: %s", uv_strerror(e));
	}
	/* idle keepers alone do not keep the loop running; once the pool is
	 * let go, the keepers still to be reaped do (sbxd_keeper_pool_free) */
	uv_unref((uv_handle_t *)&pool->sigchld);
	*out = pool;
	return 0;
}

void sbxd_keeper_pool_free(sbxd_keeper_pool *pool)
{
	if (!pool || pool->closing)
		return;
	pool->closing = true;
	while (pool->idle) {
		sbxd_keeper *k = pool->idle;
		remove_idle(pool, k);
		close_socket(k);  /* it exits at the EOF; reaped by the watcher */
	}
	if (!pool->all)
		uv_close((uv_handle_t *)&pool->sigchld, pool_closed);
	else
		uv_ref((uv_handle_t *)&pool->sigchld);
}

static int fork_keeper(sbxd_keeper_pool *pool, sbxd_keeper **out)
{
	sbxd_keeper *k = calloc(1, sizeof(*k));
	if (!k)
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		int e = errno;
		free(k);
		return asb_error_set(e == EMFILE || e == ENFILE ? ASB_ETOOMANYREQUESTS : ASB_ERROR,
		                     e == EMFILE || e == ENFILE ? 429 : 500, NULL,
		                     "keeper socket: %s", strerror(e));
	}
	pid_t self = getpid();
	k->reusable = pool->max_idle > 0 && anon_bytes() <= pool->anon_base + REUSE_MAX_GROWTH_BYTES;
	/* the keeper starts with every signal blocked: it takes them with
	 * sigtimedwait, and one sent early must not kill it */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* claimed before the reaper can see it (reaper.h) */
	if (pool->reaper)
		sbxd_reaper_lock(pool->reaper);
	pid_t pid = fork();
	if (pid == 0)
		sbxd_keeper_run(sv[1], self);
	int fork_err = errno;
	int rc = 0;
	if (pid > 0 && pool->reaper && sbxd_reaper_claim_locked(pool->reaper, pid) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
		rc = asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	}
	if (pool->reaper)
		sbxd_reaper_unlock(pool->reaper);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		free(k);
		if (rc)
			return rc;
		return asb_error_set(fork_err == EAGAIN ? ASB_ETOOMANYREQUESTS : ASB_ERROR,
		                     fork_err == EAGAIN ? 429 : 500, NULL, "fork: %s",
		                     strerror(fork_err));
	}
	k->pid = pid;
	k->sock = sv[0];
	k->next = pool->all;
	if (pool->all)
		pool->all->prev = k;
	pool->all = k;
	pool->forked++;
	*out = k;
	return 0;
}

int sbxd_keeper_pool_take(sbxd_keeper_pool *pool, sbxd_keeper **out)
{
	*out = NULL;
	if (pool->closing)
		return asb_error_set(ASB_ESHUTDOWN, 503, NULL, "sandboxd is shutting down");
	sbxd_keeper *k;
	/* an idle one that has ended (a command can kill it) is reaped here
	 * rather than handed out: the SIGCHLD watcher may not have run yet */
	while ((k = pool->idle) && reap(pool, k))
		;
	if (k) {
		remove_idle(pool, k);
		kill(k->pid, SIGCONT);
		k->fresh = false;
	} else {
		int rc = fork_keeper(pool, &k);
		if (rc)
			return rc;
		k->fresh = true;
	}
	k->busy = true;
	*out = k;
	return 0;
}

void sbxd_keeper_pool_give_back(sbxd_keeper_pool *pool, sbxd_keeper *k, bool reusable)
{
	k->busy = false;
	if (k->reaped) {
		unlink_keeper(pool, k);
		return;
	}
	if (reusable && k->reusable && !pool->closing && pool->n_idle < pool->max_idle &&
	    k->sock >= 0) {
		k->idle = true;
		k->next_idle = pool->idle;
		pool->idle = k;
		pool->n_idle++;
		return;
	}
	/* not kept: an idle-capable keeper exits at the EOF, the others on
	 * their own; the watcher reaps them */
	close_socket(k);
}

pid_t sbxd_keeper_pid(const sbxd_keeper *k)
{
	return k->pid;
}

int sbxd_keeper_socket(const sbxd_keeper *k)
{
	return k->sock;
}

bool sbxd_keeper_fresh(const sbxd_keeper *k)
{
	return k->fresh;
}

bool sbxd_keeper_reaped(const sbxd_keeper *k)
{
	return k->reaped;
}

unsigned int sbxd_keeper_pool_idle(const sbxd_keeper_pool *pool)
{
	return pool->n_idle;
}

uint64_t sbxd_keeper_pool_forked(const sbxd_keeper_pool *pool)
{
	return pool->forked;
}
