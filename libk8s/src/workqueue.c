/*
 * workqueue.c - client-go style work queue (see workqueue.h).
 *
 * State, all under one mutex:
 * - `fifo`: keys ready to be handed out, each at most once (`dirty` says
 *   which keys are queued or must run again);
 * - `processing`: keys a worker holds; a key added meanwhile stays only in
 *   `dirty` and is put back on the FIFO by done();
 * - `delayed`: a binary min-heap of (ready time, key). There is no timer
 *   thread: get() moves due entries to the FIFO and sleeps on the condition
 *   variable until the earliest deadline;
 * - `failures`: per-key failure counts for the exponential backoff, and
 *   `overall`, a token bucket all keys share (the larger delay wins).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "asb/array.h"
#include "asb/clock.h"
#include "k8s/workqueue.h"
#include "k8s/object.h"
#include "k8s/ratelimit.h"
#include "asb/map.h"
#include "workqueue_metrics.h"

typedef struct fifo_node {
	char *key;
	struct fifo_node *next;
} fifo_node;

typedef struct {
	int64_t ready_at;  /* monotonic ms */
	char *key;
} delayed_item;

struct k8s_workqueue {
	pthread_mutex_t lock;
	/* Idle workers wait on `cond`, untimed, except one: the timer, which
	 * waits on `timer_cond` until the earliest delayed item is due. With
	 * every idle worker in a timed wait, each due time woke them all
	 * (a hundred Sandbox workers, for requeues every few ms). */
	pthread_cond_t cond, timer_cond;
	int plain_waiters;   /* workers in the untimed wait */
	int plain_signalled; /* of those, signalled and not yet awake */
	bool timer_waiting;  /* a worker holds the timer */
	bool timer_signalled;
	fifo_node *head, *tail;
	size_t fifo_len;
	asb_map dirty;       /* key -> (void*)1 */
	asb_map processing;  /* key -> (void*)1 */
	asb_map failures;    /* key -> (intptr_t) count */
	delayed_item *heap;
	size_t heap_len, heap_cap;
	long base_delay_ms, max_delay_ms;
	bool shutdown;
	k8s__wq_metrics *metrics;  /* NULL: off */
	k8s_ratelimiter *overall;  /* NULL: no overall bucket */
};

static void *const PRESENT = (void *)1;

int k8s_workqueue_new(k8s_workqueue **out, const k8s_workqueue_options *opts)
{
	k8s_workqueue_options def = K8S_WORKQUEUE_OPTIONS_INIT;
	if (!opts)
		opts = &def;
	if (opts->version != K8S_WORKQUEUE_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "workqueue: unknown options version %u", opts->version);
	k8s_workqueue *q = calloc(1, sizeof(*q));
	if (!q)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	pthread_mutex_init(&q->lock, NULL);
	asb_cond_init_monotonic(&q->cond);
	asb_cond_init_monotonic(&q->timer_cond);
	asb_map_init(&q->dirty);
	asb_map_init(&q->processing);
	asb_map_init(&q->failures);
	q->base_delay_ms = opts->base_delay_ms > 0 ? opts->base_delay_ms : 5;
	q->max_delay_ms = opts->max_delay_ms > 0 ? opts->max_delay_ms : 1000000;
	int rc = k8s__wq_metrics_new(&q->metrics, opts->metrics, opts->name);
	if (rc == 0 && opts->overall_qps > 0)
		rc = k8s_ratelimiter_new(&q->overall, opts->overall_qps,
		                         opts->overall_burst > 0 ? opts->overall_burst : 100);
	if (rc < 0) {
		k8s_workqueue_free(q);
		return rc;
	}
	*out = q;
	return 0;
}

void k8s_workqueue_free(k8s_workqueue *q)
{
	if (!q)
		return;
	k8s_ratelimiter_free(q->overall);
	while (q->head) {
		fifo_node *n = q->head;
		q->head = n->next;
		free(n->key);
		free(n);
	}
	for (size_t i = 0; i < q->heap_len; i++)
		free(q->heap[i].key);
	free(q->heap);
	asb_map_clear(&q->dirty, NULL);
	asb_map_clear(&q->processing, NULL);
	asb_map_clear(&q->failures, NULL);
	k8s__wq_metrics_free(q->metrics);
	pthread_cond_destroy(&q->cond);
	pthread_cond_destroy(&q->timer_cond);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/* Appends to the FIFO; the caller has marked the key dirty. */
static int fifo_push(k8s_workqueue *q, const char *key)
{
	fifo_node *n = malloc(sizeof(*n));
	if (!n || !(n->key = strdup(key))) {
		free(n);
		return ASB_ENOMEM;
	}
	n->next = NULL;
	if (q->tail)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
	q->fifo_len++;
	return 0;
}

/* The core of add(): dedupe against dirty, defer while processing. */
/* An item is ready: wake an idle worker not woken already, else the
 * timer (each signal counted, so two items in a row wake two workers). */
/* Wakes an idle worker in the untimed wait not woken already; false if none. */
static bool wake_plain(k8s_workqueue *q)
{
	if (q->plain_waiters <= q->plain_signalled)
		return false;
	q->plain_signalled++;
	pthread_cond_signal(&q->cond);
	return true;
}

static void wake_for_item(k8s_workqueue *q)
{
	if (wake_plain(q))
		return;
	if (q->timer_waiting && !q->timer_signalled) {
		q->timer_signalled = true;
		pthread_cond_signal(&q->timer_cond);
	}
}

static int add_locked(k8s_workqueue *q, const char *key)
{
	if (q->shutdown || asb_map_has(&q->dirty, key))
		return 0;
	if (asb_map_set(&q->dirty, key, PRESENT, NULL) < 0)
		return ASB_ENOMEM;
	k8s__wq_metrics_add(q->metrics, key);
	if (asb_map_has(&q->processing, key))
		return 0;
	if (fifo_push(q, key) < 0) {
		asb_map_remove(&q->dirty, key, NULL);
		return ASB_ENOMEM;
	}
	wake_for_item(q);
	return 0;
}

int k8s_workqueue_add(k8s_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	int rc = add_locked(q, key);
	pthread_mutex_unlock(&q->lock);
	return rc < 0 ? asb_error_set(rc, 0, NULL, "workqueue: out of memory") : 0;
}

static void heap_swap(delayed_item *a, delayed_item *b)
{
	delayed_item t = *a;
	*a = *b;
	*b = t;
}

static int heap_push(k8s_workqueue *q, int64_t ready_at, const char *key)
{
	if (ASB_ARRAY_GROW(q->heap, q->heap_cap, q->heap_len + 1, 16))
		return ASB_ENOMEM;
	char *k = strdup(key);
	if (!k)
		return ASB_ENOMEM;
	size_t i = q->heap_len++;
	q->heap[i].ready_at = ready_at;
	q->heap[i].key = k;
	while (i > 0 && q->heap[(i - 1) / 2].ready_at > q->heap[i].ready_at) {
		heap_swap(&q->heap[(i - 1) / 2], &q->heap[i]);
		i = (i - 1) / 2;
	}
	return 0;
}

/* Removes the root; returns its key (caller frees). */
static char *heap_pop(k8s_workqueue *q)
{
	char *key = q->heap[0].key;
	q->heap[0] = q->heap[--q->heap_len];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < q->heap_len && q->heap[l].ready_at < q->heap[m].ready_at)
			m = l;
		if (r < q->heap_len && q->heap[r].ready_at < q->heap[m].ready_at)
			m = r;
		if (m == i)
			break;
		heap_swap(&q->heap[i], &q->heap[m]);
		i = m;
	}
	return key;
}

int k8s_workqueue_add_after(k8s_workqueue *q, const char *key, long delay_ms)
{
	pthread_mutex_lock(&q->lock);
	int rc = 0;
	if (!q->shutdown)
		k8s__wq_metrics_retry(q->metrics);  /* client-go counts every delayed add */
	if (delay_ms <= 0) {
		rc = add_locked(q, key);
	} else if (!q->shutdown) {
		rc = heap_push(q, k8s_monotonic_ms() + delay_ms, key);
		/* the timer shortens its sleep to the new deadline; without one,
		 * an idle worker becomes it */
		if (q->timer_waiting) {
			q->timer_signalled = true;
			pthread_cond_signal(&q->timer_cond);
		} else {
			wake_plain(q);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return rc < 0 ? asb_error_set(rc, 0, NULL, "workqueue: out of memory") : 0;
}

static long backoff_ms(const k8s_workqueue *q, int failures)
{
	double d = (double)q->base_delay_ms;
	for (int i = 0; i < failures && d < (double)q->max_delay_ms; i++)
		d *= 2;
	return d > (double)q->max_delay_ms ? q->max_delay_ms : (long)d;
}

/* Counts one more failure of `key`; returns its backoff delay in ms. */
static long count_failure(k8s_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	intptr_t n = (intptr_t)asb_map_get(&q->failures, key);
	asb_map_set(&q->failures, key, (void *)(n + 1), NULL);
	long delay = backoff_ms(q, (int)n);
	pthread_mutex_unlock(&q->lock);
	return delay;
}

int k8s_workqueue_add_rate_limited(k8s_workqueue *q, const char *key)
{
	long delay = count_failure(q, key);
	long overall = k8s_ratelimiter_reserve(q->overall);  /* thread-safe; NULL: 0 */
	return k8s_workqueue_add_after(q, key, overall > delay ? overall : delay);
}

int k8s_workqueue_add_backoff(k8s_workqueue *q, const char *key)
{
	return k8s_workqueue_add_after(q, key, count_failure(q, key));
}

void k8s_workqueue_forget(k8s_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	asb_map_remove(&q->failures, key, NULL);
	pthread_mutex_unlock(&q->lock);
}

int k8s_workqueue_num_requeues(k8s_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	intptr_t n = (intptr_t)asb_map_get(&q->failures, key);
	pthread_mutex_unlock(&q->lock);
	return (int)n;
}

/* Moves due delayed keys to the FIFO; returns ms until the next deadline or -1. */
static long promote_due(k8s_workqueue *q)
{
	int64_t now = k8s_monotonic_ms();
	while (q->heap_len > 0 && q->heap[0].ready_at <= now) {
		char *key = heap_pop(q);
		add_locked(q, key);
		free(key);
	}
	return q->heap_len > 0 ? (long)(q->heap[0].ready_at - now) : -1;
}

int k8s_workqueue_get(k8s_workqueue *q, char **key)
{
	*key = NULL;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		long wait_ms = q->shutdown ? -1 : promote_due(q);
		if (q->head)
			break;
		if (q->shutdown) {
			pthread_mutex_unlock(&q->lock);
			return ASB_ESHUTDOWN;
		}
		if (wait_ms < 0 || q->timer_waiting) {
			q->plain_waiters++;
			pthread_cond_wait(&q->cond, &q->lock);
			q->plain_waiters--;
			if (q->plain_signalled > 0)
				q->plain_signalled--;
		} else {
			struct timespec ts;
			asb_deadline_after_ms(&ts, wait_ms);
			q->timer_waiting = true;
			pthread_cond_timedwait(&q->timer_cond, &q->lock, &ts);
			q->timer_waiting = false;
			q->timer_signalled = false;
		}
	}
	/* leaving with an item: hand the timer to an idle worker */
	if (q->heap_len > 0 && !q->timer_waiting)
		wake_plain(q);
	fifo_node *n = q->head;
	q->head = n->next;
	if (!q->head)
		q->tail = NULL;
	q->fifo_len--;
	asb_map_remove(&q->dirty, n->key, NULL);
	asb_map_set(&q->processing, n->key, PRESENT, NULL);
	k8s__wq_metrics_get(q->metrics, n->key);
	*key = n->key;
	free(n);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

void k8s_workqueue_done(k8s_workqueue *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	k8s__wq_metrics_done(q->metrics, key);
	asb_map_remove(&q->processing, key, NULL);
	/* added while it was processed: hand it out again */
	if (asb_map_has(&q->dirty, key) && fifo_push(q, key) == 0)
		wake_for_item(q);
	pthread_mutex_unlock(&q->lock);
}

size_t k8s_workqueue_len(k8s_workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	size_t n = q->fifo_len;
	pthread_mutex_unlock(&q->lock);
	return n;
}

void k8s_workqueue_shutdown(k8s_workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	q->shutdown = true;
	for (size_t i = 0; i < q->heap_len; i++)
		free(q->heap[i].key);
	q->heap_len = 0;
	pthread_cond_broadcast(&q->cond);
	pthread_cond_broadcast(&q->timer_cond);
	pthread_mutex_unlock(&q->lock);
}

bool k8s_workqueue_is_shutdown(k8s_workqueue *q)
{
	pthread_mutex_lock(&q->lock);
	bool s = q->shutdown;
	pthread_mutex_unlock(&q->lock);
	return s;
}
