/*
 * reviewq.c - token reviews on threads of their own (reviewq.h).
 *
 * One list holds every pending review, queued or running, in arrival
 * order; it is at most max_pending long, so the scans below (a shared
 * review, a client's count) stay short. Workers take the next queued one
 * (next_job: clients take turns), run it without the lock, then hand the
 * verdict to each requester.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/common.h"
#include "reviewq.h"

typedef struct waiter {
	rt_review_cb cb;
	void *ud;
	const atomic_bool *gone;
	struct waiter *next;
} waiter;

typedef struct job {
	char *authorization;
	char ns[64], id[64], client[64];
	bool running;
	bool skip;                     /* running, but not sent: every requester left */
	int round;                     /* its client's reviews pending when it came */
	waiter *waiters;
	struct job *next;
} job;

struct rt_reviewq {
	rt_review_fn review;
	void *review_ud;
	int max_pending, max_per_client;
	pthread_mutex_t lock;          /* guards everything below */
	pthread_cond_t wake;
	job *head, *tail;
	int pending;
	bool stopping;
	pthread_t *threads;
	int nthreads;
};

static void job_free(job *j)
{
	while (j->waiters) {
		waiter *w = j->waiters;
		j->waiters = w->next;
		free(w);
	}
	free(j->authorization);
	free(j);
}

/* Every waiter's verdict, then the job freed; no lock held. */
static void job_answer(job *j, rt_verdict v, const char *detail)
{
	for (waiter *w = j->waiters; w; w = w->next)
		w->cb(v, detail, w->ud);
	job_free(j);
}

static bool all_gone(const job *j)
{
	for (const waiter *w = j->waiters; w; w = w->next)
		if (!w->gone || !atomic_load(w->gone))
			return false;
	return true;
}

static void unlink_job(rt_reviewq *q, job *j)
{
	job **link = &q->head, *prev = NULL;
	while (*link && *link != j) {
		prev = *link;
		link = &(*link)->next;
	}
	if (!*link)
		return;
	*link = j->next;
	if (q->tail == j)
		q->tail = prev;
	q->pending--;
}

/* The queued review to run next: the one with the lowest round (how many
 * reviews its client had pending when it was asked), oldest first among
 * equals. A client's first pending review goes before another client's
 * tenth, so one client with many pending reviews takes turns with the
 * others instead of holding every worker. Lock held. */
static job *next_job(rt_reviewq *q)
{
	job *best = NULL;
	for (job *j = q->head; j; j = j->next)
		if (!j->running && (!best || j->round < best->round)) {
			best = j;
			if (!best->round)
				break;
		}
	return best;
}

static void *worker(void *ud)
{
	rt_reviewq *q = ud;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		job *j = next_job(q);
		if (!j) {
			if (q->stopping)
				break;
			pthread_cond_wait(&q->wake, &q->lock);
			continue;
		}
		j->running = true;
		j->skip = all_gone(j);   /* no one joins a skipped review (submit) */
		bool skip = j->skip;
		pthread_mutex_unlock(&q->lock);
		char detail[256] = "";
		rt_verdict v;
		if (skip) {
			v = RT_VERDICT_ERROR;
			snprintf(detail, sizeof(detail), "tokenreview: client gone");
		} else {
			v = q->review(q->review_ud, j->authorization, j->ns, j->id, detail,
			              sizeof(detail));
		}
		pthread_mutex_lock(&q->lock);
		unlink_job(q, j);   /* waiters that joined meanwhile get this verdict too */
		pthread_mutex_unlock(&q->lock);
		job_answer(j, v, detail);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static rt_verdict authz_review(void *ud, const char *authorization, const char *ns,
                               const char *id, char *detail, size_t cap)
{
	return rt_authz_review(ud, authorization, ns, id, detail, cap);
}

int rt_reviewq_new(rt_reviewq **out, const rt_reviewq_options *o)
{
	if (!out || !o || (!o->authz && !o->review) || o->workers < 1 || o->max_pending < 1 ||
	    o->max_per_client < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "token review queue: invalid options");
	rt_reviewq *q = calloc(1, sizeof(*q));
	if (!q || !(q->threads = calloc((size_t)o->workers, sizeof(pthread_t)))) {
		free(q);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "token review queue: out of memory");
	}
	q->review = o->review ? o->review : authz_review;
	q->review_ud = o->review ? o->review_ud : o->authz;
	q->max_pending = o->max_pending;
	q->max_per_client = o->max_per_client;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
	for (int i = 0; i < o->workers; i++) {
		if (pthread_create(&q->threads[i], NULL, worker, q) != 0) {
			rt_reviewq_free(q);
			return asb_error_set(ASB_ERROR, 0, NULL, "token review queue: cannot start a thread");
		}
		q->nthreads++;
	}
	*out = q;
	return 0;
}

/* The client a review counts for: an IPv4 address as it is, an IPv6 one
 * by its /64 (one host may hold all of it), anything else as given. */
static void client_key(const char *client, char *out, size_t cap)
{
	unsigned char a[16];
	if (strchr(client, ':') && inet_pton(AF_INET6, client, a) == 1) {
		static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (memcmp(a, mapped, 12) == 0) {
			inet_ntop(AF_INET, a + 12, out, (socklen_t)cap);
			return;
		}
		memset(a + 8, 0, 8);
		char text[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET6, a, text, sizeof(text));
		snprintf(out, cap, "%s/64", text);
		return;
	}
	snprintf(out, cap, "%s", client);
}

int rt_reviewq_submit(rt_reviewq *q, const char *authorization, const char *ns, const char *id,
                      const char *raw_client, const atomic_bool *gone, rt_review_cb cb, void *ud)
{
	char client[64];
	client_key(raw_client ? raw_client : "", client, sizeof(client));
	waiter *w = calloc(1, sizeof(*w));
	if (!w)
		return ASB_ENOMEM;
	*w = (waiter){ cb, ud, gone, NULL };
	pthread_mutex_lock(&q->lock);
	int mine = 0;
	for (job *j = q->head; j; j = j->next) {
		if (!j->skip && strcmp(j->authorization, authorization) == 0 && strcmp(j->ns, ns) == 0 &&
		    strcmp(j->id, id) == 0) {
			w->next = j->waiters;   /* the same question: share its answer */
			j->waiters = w;
			pthread_mutex_unlock(&q->lock);
			return 0;
		}
		mine += strcmp(j->client, client) == 0;
	}
	int rc = 0;
	job *j = NULL;
	if (q->stopping || q->pending >= q->max_pending)
		rc = ASB_ESERVICEUNAVAILABLE;
	else if (q->max_per_client > 0 && mine >= q->max_per_client)
		rc = ASB_ETOOMANYREQUESTS;
	else if (!(j = calloc(1, sizeof(*j))) || !(j->authorization = strdup(authorization)))
		rc = ASB_ENOMEM;
	if (rc < 0) {
		pthread_mutex_unlock(&q->lock);
		if (j)
			free(j);
		free(w);
		return rc;
	}
	snprintf(j->ns, sizeof(j->ns), "%s", ns);
	snprintf(j->id, sizeof(j->id), "%s", id);
	snprintf(j->client, sizeof(j->client), "%s", client);
	j->waiters = w;
	j->round = mine;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->pending++;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

int rt_reviewq_pending(rt_reviewq *q)
{
	pthread_mutex_lock(&q->lock);
	int n = q->pending;
	pthread_mutex_unlock(&q->lock);
	return n;
}

void rt_reviewq_free(rt_reviewq *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	/* the queued ones are answered here, not run: a worker takes no more */
	job *queued = NULL, **tail = &queued;
	for (job **link = &q->head; *link;) {
		job *j = *link;
		if (j->running) {
			link = &j->next;
			continue;
		}
		*link = j->next;
		q->pending--;
		j->next = NULL;
		*tail = j;
		tail = &j->next;
	}
	q->tail = NULL;
	for (job *j = q->head; j; j = j->next)
		q->tail = j;
	pthread_cond_broadcast(&q->wake);
	pthread_mutex_unlock(&q->lock);
	while (queued) {
		job *j = queued;
		queued = j->next;
		job_answer(j, RT_VERDICT_ERROR, "tokenreview: shutting down");
	}
	for (int i = 0; i < q->nthreads; i++)
		pthread_join(q->threads[i], NULL);
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	free(q->threads);
	free(q);
}
