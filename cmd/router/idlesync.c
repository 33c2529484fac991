/*
 * idlesync.c - publishing activity and resuming Sandboxes by merge
 * patches (idlesync.h).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "k8s/object.h"
#include "sandbox/api.h"
#include "sandbox/idle.h"
#include "idlesync.h"

/* Candidates handled per tick; the rest are due again at the next one. */
#define MAX_PER_TICK 1024
/* A refused write (RBAC, admission) is a deployment problem: said at warn
 * level, at most this often. */
#define WARN_EVERY_MS 60000
/* Writes of one tick not started within this budget wait for the next
 * tick (they stay due): a slow API server delays, never stalls, the rest. */
#define TICK_BUDGET_MS 2000

struct rt_idlesync {
	k8s_client *client;
	rt_cache_view view;
	rt_metrics *metrics;
	asb_logger *log;
	long tick_ms;
	rt_activity *activity;
	rt_resumeq *resumes;
	rt_activity_candidate *cands;  /* MAX_PER_TICK, the publisher's */
	pthread_mutex_t lock;          /* guards stopping and last_warn_ms */
	pthread_cond_t wake;           /* CLOCK_MONOTONIC */
	bool stopping;
	int64_t last_warn_ms;
	pthread_t thread;
	bool started;
	/* the tick's writes, sent by `nworkers` threads at once */
	pthread_mutex_t plock;         /* guards the fields below */
	pthread_cond_t pwork, pdone;
	size_t pnext, pn;              /* next candidate to take, how many this tick */
	int pbusy;                     /* writes being sent */
	int64_t pnow, pdeadline;       /* the tick's time (wall), budget end (monotonic) */
	bool pstop;
	pthread_t *workers;
	int nworkers;
};

static bool refused(int rc)
{
	return rc == ASB_EFORBIDDEN || rc == ASB_EUNAUTHORIZED || rc == ASB_EINVALID;
}

/* Logs a failed write: at debug, or at warn (rate-limited) when the API
 * refused it, which no retry will cure. */
static void log_failure(rt_idlesync *s, const char *what, const char *ns, const char *name,
                        int rc)
{
	if (!s->log)
		return;
	asb_log_level level = ASB_LOG_DEBUG;
	if (refused(rc)) {
		int64_t now = k8s_monotonic_ms();
		pthread_mutex_lock(&s->lock);
		if (!s->last_warn_ms || now - s->last_warn_ms >= WARN_EVERY_MS) {
			s->last_warn_ms = now;
			level = ASB_LOG_WARN;
		}
		pthread_mutex_unlock(&s->lock);
	}
	asb_log(s->log, level, what, "sandbox", name, "namespace", ns, "error",
	        asb_error_last()->message, NULL);
}

static int patch_sandbox(rt_idlesync *s, const char *ns, const char *name, const cJSON *body)
{
	if (!body)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	k8s_write_options wo = K8S_WRITE_OPTIONS_INIT;
	wo.field_manager = "sandbox-router";
	return k8s_client_patch(s->client, &sbx_resource_sandboxes, ns, name, NULL,
	                        K8S_PATCH_MERGE, body, &wo, NULL);
}

/* ---- publishing ---- */

/* One candidate: checked against the cache, written when still due. */
static void publish_one(rt_idlesync *s, const rt_activity_candidate *c, int64_t now)
{
	rt_sandbox_info sb;
	if (!s->view.authoritative(s->view.ud, c->ns) ||
	    s->view.sandbox(s->view.ud, c->ns, c->name, &sb) < 0) {
		rt_activity_forget(s->activity, c->ns, c->name, true);  /* gone */
		return;
	}
	if (!sb.idle.applies) {
		/* no policy any more, suspended, being deleted, a pool member */
		rt_activity_forget(s->activity, c->ns, c->name, true);
		return;
	}
	int64_t published = c->published_ms;
	if (sb.idle.last_activity_ms > published) {
		/* another replica (or a resume) wrote since: it counts as ours */
		published = sb.idle.last_activity_ms;
		rt_activity_published(s->activity, c->ns, c->name, published);
	}
	if (!rt_activity_due(c->last_activity_ms, published,
	                     sbx_idle_publish_interval_ms(sb.idle.timeout_ms), now))
		return;
	int64_t due_at = rt_activity_due_at(c->last_activity_ms, published,
	                                    sbx_idle_publish_interval_ms(sb.idle.timeout_ms));
	rt_metrics_activity_lag(s->metrics, (double)(k8s_now_ms() - due_at) / 1000.0);
	cJSON *body = rt_activity_patch(now);
	int rc = patch_sandbox(s, c->ns, c->name, body);
	cJSON_Delete(body);
	rt_metrics_activity_write(s->metrics, rc);
	if (rc == 0) {
		rt_activity_published(s->activity, c->ns, c->name, now);
		if (s->log) {
			char ts[32];
			asb_log(s->log, ASB_LOG_DEBUG, "sandbox activity published", "sandbox", c->name,
			        "namespace", c->ns, "lastActivity", k8s_time_format(now, ts, sizeof(ts)),
			        NULL);
		}
	} else if (rc == ASB_ENOTFOUND) {
		rt_activity_forget(s->activity, c->ns, c->name, false);
	} else {
		log_failure(s, "sandbox activity not published; retried next tick", c->ns, c->name, rc);
	}
}

/* A publishing thread: takes the tick's candidates one at a time; those
 * left when the budget is over stay due for the next tick. */
static void *publish_worker(void *ud)
{
	rt_idlesync *s = ud;
	pthread_mutex_lock(&s->plock);
	for (;;) {
		while (!s->pstop && s->pnext >= s->pn)
			pthread_cond_wait(&s->pwork, &s->plock);
		if (s->pstop)
			break;
		if (k8s_monotonic_ms() >= s->pdeadline) {
			s->pnext = s->pn;  /* the rest waits for the next tick */
		} else {
			size_t i = s->pnext++;
			int64_t now = s->pnow;
			s->pbusy++;
			pthread_mutex_unlock(&s->plock);
			publish_one(s, &s->cands[i], now);
			pthread_mutex_lock(&s->plock);
			s->pbusy--;
		}
		if (s->pnext >= s->pn && s->pbusy == 0)
			pthread_cond_signal(&s->pdone);
	}
	pthread_cond_signal(&s->pdone);
	pthread_mutex_unlock(&s->plock);
	return NULL;
}

static void tick(rt_idlesync *s)
{
	int64_t now = k8s_now_ms();
	size_t n = rt_activity_collect(s->activity, now, s->cands, MAX_PER_TICK);
	if (n) {
		pthread_mutex_lock(&s->plock);
		s->pnow = now;
		s->pdeadline = k8s_monotonic_ms() + TICK_BUDGET_MS;
		s->pnext = 0;
		s->pn = n;
		pthread_cond_broadcast(&s->pwork);
		while (!s->pstop && (s->pnext < s->pn || s->pbusy > 0))
			pthread_cond_wait(&s->pdone, &s->plock);
		s->pn = s->pnext = 0;
		pthread_mutex_unlock(&s->plock);
	}
	rt_metrics_activity_tracked(s->metrics, rt_activity_count(s->activity));
}

static void *publisher(void *ud)
{
	rt_idlesync *s = ud;
	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		struct timespec at;
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += s->tick_ms / 1000;
		at.tv_nsec += (s->tick_ms % 1000) * 1000000L;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		while (!s->stopping && pthread_cond_timedwait(&s->wake, &s->lock, &at) == 0)
			;
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->lock);
		tick(s);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- resuming ---- */

static int resume_one(void *ud, const char *ns, const char *name)
{
	rt_idlesync *s = ud;
	int64_t now = k8s_now_ms();
	cJSON *body = rt_resume_patch(now);
	int rc = patch_sandbox(s, ns, name, body);
	cJSON_Delete(body);
	rt_metrics_resume(s->metrics, rc);
	if (rc == 0) {
		if (s->log)
			asb_log(s->log, ASB_LOG_INFO, "resuming sandbox on request", "sandbox", name,
			        "namespace", ns, NULL);
	} else {
		log_failure(s, "sandbox resume failed", ns, name, rc);
	}
	return rc;
}

/* ---- life cycle ---- */

int rt_idlesync_new(rt_idlesync **out, const rt_idlesync_options *o)
{
	if (!o || !o->client || !o->cache || !o->metrics)
		return asb_error_set(ASB_EINVAL, 0, NULL, "idle sync: invalid options");
	rt_idlesync *s = calloc(1, sizeof(*s));
	int nworkers = o->publish_workers > 0 ? o->publish_workers : 4;
	if (!s || !(s->cands = calloc(MAX_PER_TICK, sizeof(*s->cands))) ||
	    !(s->workers = calloc((size_t)nworkers, sizeof(pthread_t)))) {
		if (s)
			free(s->cands);
		free(s);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "idle sync: out of memory");
	}
	s->client = o->client;
	rt_cache_view_init(o->cache, &s->view);
	s->metrics = o->metrics;
	s->log = o->log;
	s->tick_ms = o->tick_ms > 0 ? o->tick_ms : 1000;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&s->plock, NULL);
	pthread_cond_init(&s->pwork, NULL);
	pthread_cond_init(&s->pdone, NULL);
	rt_resumeq_options ro = {
		.resume = resume_one, .resume_ud = s,
		.workers = o->resume_workers > 0 ? o->resume_workers : 2,
		.max_pending = o->resume_max_pending > 0 ? o->resume_max_pending : 1024,
		/* the watch shows the patched Sandbox well within this; a patch
		 * sent again after it would change nothing anyway */
		.settle_ms = 10000,
		.retry_ms = 1000,
	};
	int rc;
	if ((rc = rt_activity_new(&s->activity, o->max_entries)) < 0 ||
	    (rc = rt_resumeq_new(&s->resumes, &ro)) < 0) {
		rt_idlesync_free(s);
		return rc == ASB_ENOMEM ? asb_error_set(rc, 0, NULL, "idle sync: out of memory") : rc;
	}
	for (int i = 0; i < nworkers; i++) {
		if (pthread_create(&s->workers[i], NULL, publish_worker, s) != 0) {
			rt_idlesync_free(s);
			return asb_error_set(ASB_ERROR, 0, NULL, "idle sync: cannot start a publisher");
		}
		s->nworkers++;
	}
	if (pthread_create(&s->thread, NULL, publisher, s) != 0) {
		rt_idlesync_free(s);
		return asb_error_set(ASB_ERROR, 0, NULL, "idle sync: cannot start the publisher");
	}
	s->started = true;
	*out = s;
	return 0;
}

rt_activity *rt_idlesync_activity(rt_idlesync *s)
{
	return s->activity;
}

rt_resumeq *rt_idlesync_resumes(rt_idlesync *s)
{
	return s->resumes;
}

void rt_idlesync_free(rt_idlesync *s)
{
	if (!s)
		return;
	/* writes not started are dropped; those being sent finish */
	pthread_mutex_lock(&s->plock);
	s->pstop = true;
	pthread_cond_broadcast(&s->pwork);
	pthread_cond_broadcast(&s->pdone);
	pthread_mutex_unlock(&s->plock);
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_broadcast(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	free(s->workers);
	pthread_cond_destroy(&s->pdone);
	pthread_cond_destroy(&s->pwork);
	pthread_mutex_destroy(&s->plock);
	rt_resumeq_free(s->resumes);
	rt_activity_free(s->activity);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s->cands);
	free(s);
}
