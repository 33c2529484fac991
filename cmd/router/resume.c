/*
 * resume.c - single-flight resume patches on threads of their own
 * (resume.h).
 *
 * One map from "ns/name" to the Sandbox's resume state, bounded by
 * max_pending, and a FIFO of the queued ones. Workers take the oldest
 * queued job, send its patch without the lock, and record the outcome;
 * finished jobs stay in the map for their settle or retry time (so the
 * requests that keep asking while the cache catches up send nothing),
 * then are swept when room is needed.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/common.h"
#include "asb/map.h"
#include "k8s/object.h"
#include "resume.h"

typedef enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE } job_state;

typedef struct job {
	char key[128];
	char ns[64], name[64];
	job_state state;
	int rc;                 /* of the latest finished patch */
	int64_t done_at;        /* when it finished (clock) */
	struct job *next;       /* the FIFO while queued */
} job;

struct rt_resumeq {
	rt_resume_fn resume;
	void *resume_ud;
	rt_clock_fn clock;
	int max_pending;
	long settle_ms, retry_ms;
	pthread_mutex_t lock;   /* guards everything below */
	pthread_cond_t wake;
	asb_map jobs;           /* key -> job */
	job *head, *tail;       /* queued, oldest first */
	int pending;            /* queued or running */
	bool stopping;
	pthread_t *threads;
	int nthreads;
};

static int64_t default_clock(void)
{
	return k8s_monotonic_ms();
}

static void *worker(void *ud)
{
	rt_resumeq *q = ud;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		job *j = q->head;
		if (!j) {
			if (q->stopping)
				break;
			pthread_cond_wait(&q->wake, &q->lock);
			continue;
		}
		if (q->stopping)
			break;
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
		j->next = NULL;
		j->state = JOB_RUNNING;
		pthread_mutex_unlock(&q->lock);
		/* the job stays in the map while running: nobody frees it */
		int rc = q->resume(q->resume_ud, j->ns, j->name);
		int64_t t = q->clock();
		pthread_mutex_lock(&q->lock);
		j->state = JOB_DONE;
		j->rc = rc;
		j->done_at = t;
		q->pending--;
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int rt_resumeq_new(rt_resumeq **out, const rt_resumeq_options *o)
{
	if (!out || !o || !o->resume || o->workers < 1 || o->max_pending < 1 || o->settle_ms < 0 ||
	    o->retry_ms < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "resume queue: invalid options");
	rt_resumeq *q = calloc(1, sizeof(*q));
	if (!q || !(q->threads = calloc((size_t)o->workers, sizeof(pthread_t)))) {
		free(q);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "resume queue: out of memory");
	}
	q->resume = o->resume;
	q->resume_ud = o->resume_ud;
	q->clock = o->clock ? o->clock : default_clock;
	q->max_pending = o->max_pending;
	q->settle_ms = o->settle_ms;
	q->retry_ms = o->retry_ms;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	asb_map_init(&q->jobs);
	for (int i = 0; i < o->workers; i++) {
		if (pthread_create(&q->threads[i], NULL, worker, q) != 0) {
			rt_resumeq_free(q);
			return asb_error_set(ASB_ERROR, 0, NULL, "resume queue: cannot start a thread");
		}
		q->nthreads++;
	}
	*out = q;
	return 0;
}

/* Whether a finished job's quiet time is over at `now`. */
static bool expired(const rt_resumeq *q, const job *j, int64_t now)
{
	return j->state == JOB_DONE &&
	       now - j->done_at >= (j->rc == 0 ? q->settle_ms : q->retry_ms);
}

/* Drops the finished jobs whose quiet time is over. Lock held. */
static void sweep(rt_resumeq *q, int64_t now)
{
	size_t n = asb_map_count(&q->jobs), nv = 0, bucket = 0;
	job **victims = n ? malloc(n * sizeof(*victims)) : NULL;
	if (!victims)
		return;
	asb_map_entry *it = NULL;
	while ((it = asb_map_next(&q->jobs, &bucket, &it)))
		if (expired(q, it->value, now))
			victims[nv++] = it->value;
	for (size_t i = 0; i < nv; i++) {
		asb_map_remove(&q->jobs, victims[i]->key, NULL);
		free(victims[i]);
	}
	free(victims);
}

static void enqueue(rt_resumeq *q, job *j)
{
	j->state = JOB_QUEUED;
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->pending++;
	pthread_cond_signal(&q->wake);
}

int rt_resumeq_request(rt_resumeq *q, const char *ns, const char *name, int *last_rc)
{
	size_t nl = ns ? strlen(ns) : 0, ml = name ? strlen(name) : 0;
	if (last_rc)
		*last_rc = 0;
	if (!nl || !ml || nl > 63 || ml > 63)
		return ASB_EINVAL;
	char key[128];
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	int64_t now = q->clock();
	int rc;
	pthread_mutex_lock(&q->lock);
	job *j = asb_map_get(&q->jobs, key);
	if (q->stopping) {
		rc = ASB_ESERVICEUNAVAILABLE;
	} else if (j) {
		if (last_rc)
			*last_rc = j->rc;
		if (j->state != JOB_DONE) {
			rc = RT_RESUME_SHARED;
		} else if (!expired(q, j, now)) {
			rc = j->rc == 0 ? RT_RESUME_SETTLING : RT_RESUME_BACKOFF;
		} else {
			enqueue(q, j);
			rc = RT_RESUME_QUEUED;
		}
	} else {
		if (asb_map_count(&q->jobs) >= (size_t)q->max_pending)
			sweep(q, now);
		if (asb_map_count(&q->jobs) >= (size_t)q->max_pending) {
			rc = ASB_ESERVICEUNAVAILABLE;
		} else if (!(j = calloc(1, sizeof(*j)))) {
			rc = ASB_ENOMEM;
		} else {
			memcpy(j->key, key, sizeof(key));
			memcpy(j->ns, ns, nl + 1);
			memcpy(j->name, name, ml + 1);
			if (asb_map_set(&q->jobs, key, j, NULL) < 0) {
				free(j);
				rc = ASB_ENOMEM;
			} else {
				enqueue(q, j);
				rc = RT_RESUME_QUEUED;
			}
		}
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

int rt_resumeq_pending(rt_resumeq *q)
{
	pthread_mutex_lock(&q->lock);
	int n = q->pending;
	pthread_mutex_unlock(&q->lock);
	return n;
}

void rt_resumeq_free(rt_resumeq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	/* queued jobs are not sent: the requests that wanted them are gone */
	for (job *j = q->head; j; j = j->next) {
		j->state = JOB_DONE;
		q->pending--;
	}
	q->head = q->tail = NULL;
	pthread_cond_broadcast(&q->wake);
	pthread_mutex_unlock(&q->lock);
	for (int i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	asb_map_clear(&q->jobs, free);
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	free(q->threads);
	free(q);
}
