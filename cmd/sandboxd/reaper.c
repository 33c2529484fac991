/*
 * reaper.c - orphans reparented to sandboxd are waited for (reaper.h): a
 * list of claimed pids under a mutex, and a thread running a libuv loop
 * whose only handles are a SIGCHLD watcher and a wake-up for the end.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "asb/array.h"
#include "asb/common.h"
#include "reaper.h"

struct sbxd_reaper {
	pthread_mutex_t lock;
	pid_t *claimed;
	size_t len, cap;
	bool watching;
	uv_loop_t loop;
	uv_signal_t sigchld;
	uv_async_t stop;
	pthread_t thread;
};

static bool is_claimed(const sbxd_reaper *r, pid_t pid)
{
	for (size_t i = 0; i < r->len; i++)
		if (r->claimed[i] == pid)
			return true;
	return false;
}

/* Waits for `pid` when it has ended and is not claimed; 1 when reaped. */
static int reap_one(sbxd_reaper *r, pid_t pid)
{
	if (pid <= 0 || is_claimed(r, pid))
		return 0;
	int st;
	return waitpid(pid, &st, WNOHANG) == pid;
}

/* Each child pid listed in a /proc/self/task/TID/children file. */
static int reap_task_children(sbxd_reaper *r, const char *tid, bool *readable)
{
	char path[300];
	snprintf(path, sizeof(path), "/proc/self/task/%s/children", tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	*readable = true;
	int n = 0;
	long pid;
	while (fscanf(f, "%ld", &pid) == 1)
		n += reap_one(r, (pid_t)pid);
	fclose(f);
	return n;
}

/* Without CONFIG_PROC_CHILDREN: every process whose parent is us. */
static int reap_proc_scan(sbxd_reaper *r)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	pid_t self = getpid();
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[300], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		/* "pid (comm) state ppid ...": comm may hold anything, ')' last */
		char *close = strrchr(buf, ')');
		char state;
		long ppid;
		if (close && sscanf(close + 1, " %c %ld", &state, &ppid) == 2 && ppid == self)
			n += reap_one(r, (pid_t)atol(de->d_name));
	}
	closedir(d);
	return n;
}

int sbxd_reaper_reap(sbxd_reaper *r)
{
	pthread_mutex_lock(&r->lock);
	int n = 0;
	bool readable = false;
	DIR *d = opendir("/proc/self/task");
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				n += reap_task_children(r, de->d_name, &readable);
		closedir(d);
	}
	if (!readable)
		n += reap_proc_scan(r);
	pthread_mutex_unlock(&r->lock);
	return n;
}

static void on_sigchld(uv_signal_t *h, int signum)
{
	sbxd_reaper_reap(h->data);
}

static void on_stop(uv_async_t *h)
{
	sbxd_reaper *r = h->data;
	uv_close((uv_handle_t *)&r->sigchld, NULL);
	uv_close((uv_handle_t *)&r->stop, NULL);
}

static void *run(void *arg)
{
	sbxd_reaper *r = arg;
	uv_run(&r->loop, UV_RUN_DEFAULT);
	return NULL;
}

int sbxd_reaper_new(sbxd_reaper **out, bool watch)
{
	*out = NULL;
	sbxd_reaper *r = calloc(1, sizeof(*r));
	if (!r)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	if (watch) {
		int e = uv_loop_init(&r->loop);
		if (e == 0) {
			uv_signal_init(&r->loop, &r->sigchld);
			r->sigchld.data = r;
			uv_async_init(&r->loop, &r->stop, on_stop);
			r->stop.data = r;
			e = uv_signal_start(&r->sigchld, on_sigchld, SIGCHLD);
			if (e == 0)
				e = -pthread_create(&r->thread, NULL, run, r);
			if (e) {
				uv_close((uv_handle_t *)&r->sigchld, NULL);
				uv_close((uv_handle_t *)&r->stop, NULL);
				uv_run(&r->loop, UV_RUN_DEFAULT);
				uv_loop_close(&r->loop);
			}
		}
		if (e) {
			pthread_mutex_destroy(&r->lock);
			free(r);
			return asb_error_set(ASB_ERROR, 0, NULL, "the reaper cannot start: %s",
			                     uv_strerror(e));
		}
		r->watching = true;
	}
	*out = r;
	return 0;
}

void sbxd_reaper_free(sbxd_reaper *r)
{
	if (!r)
		return;
	if (r->watching) {
		uv_async_send(&r->stop);
		pthread_join(r->thread, NULL);
		uv_loop_close(&r->loop);
	}
	pthread_mutex_destroy(&r->lock);
	free(r->claimed);
	free(r);
}

void sbxd_reaper_lock(sbxd_reaper *r)
{
	pthread_mutex_lock(&r->lock);
}

void sbxd_reaper_unlock(sbxd_reaper *r)
{
	pthread_mutex_unlock(&r->lock);
}

int sbxd_reaper_claim_locked(sbxd_reaper *r, pid_t pid)
{
	if (ASB_ARRAY_GROW(r->claimed, r->cap, r->len + 1, 16))
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	r->claimed[r->len++] = pid;
	return 0;
}

void sbxd_reaper_release(sbxd_reaper *r, pid_t pid)
{
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->len; i++)
		if (r->claimed[i] == pid) {
			r->claimed[i] = r->claimed[--r->len];
			break;
		}
	pthread_mutex_unlock(&r->lock);
}
