/*
 * workqueue_metrics.c - client-go's work queue metrics (see
 * workqueue_metrics.h). Names, help texts, labels and buckets are those
 * controller-runtime registers, so dashboards written for Go controllers
 * read ours unchanged.
 *
 * Per key it remembers when the key was added (until a worker takes it)
 * and when processing started (until done), like client-go's
 * defaultQueueMetrics. The two gauges client-go refreshes every 500 ms
 * from a goroutine are computed here when they are scraped instead.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "asb/map.h"
#include "metric_family.h"
#include "workqueue_metrics.h"

struct k8s__wq_metrics {
	char *name;
	asb_metric_series *depth, *adds, *queue_duration, *work_duration, *retries;
	asb_metric *unfinished, *longest;
	pthread_mutex_t lock;   /* guards the two maps */
	asb_map added_at;       /* key -> double * (monotonic seconds) */
	asb_map started_at;     /* key -> double * */
};

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const labels[] = { "name", "controller", NULL };
static const char *const depth_labels[] = { "name", "controller", "priority", NULL };

static int family(asb_metric **out, asb_metrics_registry *reg, asb_metric_type type,
                  const char *name, const char *help, const char *const *label_names)
{
	/* ExponentialBuckets(10e-9, 10, 12): 10 ns to 1000 s */
	double buckets[12];
	asb_metrics_exponential_buckets(10e-9, 10, 12, buckets);
	return k8s__metric_family(out, reg, type, name, help, label_names, buckets, 12);
}

static int series(asb_metric_series **out, asb_metric *m, const char *name, bool depth)
{
	const char *v[] = { name, name, "" };
	return asb_metric_series_get(out, m, v, depth ? 3 : 2);
}

/* Scrape time: seconds of work in progress, summed or the longest. */
static double processing_seconds(k8s__wq_metrics *m, bool longest)
{
	double now = now_seconds(), total = 0, max = 0;
	pthread_mutex_lock(&m->lock);
	size_t bucket = 0;
	asb_map_entry *it = NULL;
	while ((it = asb_map_next(&m->started_at, &bucket, &it))) {
		double d = now - *(double *)it->value;
		total += d;
		if (d > max)
			max = d;
	}
	pthread_mutex_unlock(&m->lock);
	return longest ? max : total;
}

static void collect_unfinished(asb_metrics_emitter *e, void *ud)
{
	k8s__wq_metrics *m = ud;
	const char *v[] = { m->name, m->name };
	asb_metrics_emit(e, v, 2, processing_seconds(m, false));
}

static void collect_longest(asb_metrics_emitter *e, void *ud)
{
	k8s__wq_metrics *m = ud;
	const char *v[] = { m->name, m->name };
	asb_metrics_emit(e, v, 2, processing_seconds(m, true));
}

int k8s__wq_metrics_new(k8s__wq_metrics **out, asb_metrics_registry *reg, const char *name)
{
	*out = NULL;
	if (!reg)
		return 0;
	k8s__wq_metrics *m = calloc(1, sizeof(*m));
	if (!m || !(m->name = strdup(name ? name : ""))) {
		free(m);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "workqueue metrics: out of memory");
	}
	pthread_mutex_init(&m->lock, NULL);
	asb_map_init(&m->added_at);
	asb_map_init(&m->started_at);
	asb_metric *depth, *adds, *queue_duration, *work_duration, *retries;
	int rc;
	if ((rc = family(&depth, reg, ASB_METRIC_GAUGE, "workqueue_depth",
	                 "Current depth of workqueue by workqueue and priority", depth_labels)) ||
	    (rc = family(&adds, reg, ASB_METRIC_COUNTER, "workqueue_adds_total",
	                 "Total number of adds handled by workqueue", labels)) ||
	    (rc = family(&queue_duration, reg, ASB_METRIC_HISTOGRAM, "workqueue_queue_duration_seconds",
	                 "How long in seconds an item stays in workqueue before being requested", labels)) ||
	    (rc = family(&work_duration, reg, ASB_METRIC_HISTOGRAM, "workqueue_work_duration_seconds",
	                 "How long in seconds processing an item from workqueue takes.", labels)) ||
	    (rc = family(&m->unfinished, reg, ASB_METRIC_GAUGE, "workqueue_unfinished_work_seconds",
	                 "How many seconds of work has been done that is in progress and hasn't "
	                 "been observed by work_duration. Large values indicate stuck threads. One "
	                 "can deduce the number of stuck threads by observing the rate at which "
	                 "this increases.", labels)) ||
	    (rc = family(&m->longest, reg, ASB_METRIC_GAUGE, "workqueue_longest_running_processor_seconds",
	                 "How many seconds has the longest running processor for workqueue been running.",
	                 labels)) ||
	    (rc = family(&retries, reg, ASB_METRIC_COUNTER, "workqueue_retries_total",
	                 "Total number of items added to the workqueue with a non-zero delay "
	                 "(rate-limited requeues, explicit RequeueAfter or AddAfter calls)", labels)) ||
	    (rc = series(&m->depth, depth, m->name, true)) ||
	    (rc = series(&m->adds, adds, m->name, false)) ||
	    (rc = series(&m->queue_duration, queue_duration, m->name, false)) ||
	    (rc = series(&m->work_duration, work_duration, m->name, false)) ||
	    (rc = series(&m->retries, retries, m->name, false)))
		goto fail;
	if ((rc = asb_metric_add_collector(m->unfinished, collect_unfinished, m)))
		goto fail;
	if ((rc = asb_metric_add_collector(m->longest, collect_longest, m))) {
		asb_metric_remove_collector(m->unfinished, collect_unfinished, m);
		goto fail;
	}
	*out = m;
	return 0;
fail:
	m->unfinished = m->longest = NULL;
	k8s__wq_metrics_free(m);
	return rc;
}

void k8s__wq_metrics_free(k8s__wq_metrics *m)
{
	if (!m)
		return;
	asb_metric_remove_collector(m->unfinished, collect_unfinished, m);
	asb_metric_remove_collector(m->longest, collect_longest, m);
	asb_map_clear(&m->added_at, free);
	asb_map_clear(&m->started_at, free);
	pthread_mutex_destroy(&m->lock);
	free(m->name);
	free(m);
}

/* Remembers `t` for `key` unless a time is already there. */
static void remember(asb_map *map, const char *key, double t)
{
	if (asb_map_has(map, key))
		return;
	double *v = malloc(sizeof(*v));
	if (!v)
		return;  /* only a metric is lost */
	*v = t;
	if (asb_map_set(map, key, v, NULL) < 0)
		free(v);
}

/* Forgets `key`; returns the seconds since it was remembered, or -1. */
static double forget(asb_map *map, const char *key, double now)
{
	void *v = NULL;
	if (!asb_map_remove(map, key, &v))
		return -1;
	double d = now - *(double *)v;
	free(v);
	return d;
}

void k8s__wq_metrics_add(k8s__wq_metrics *m, const char *key)
{
	if (!m)
		return;
	asb_metric_series_add(m->adds, 1);
	asb_metric_series_add(m->depth, 1);
	pthread_mutex_lock(&m->lock);
	remember(&m->added_at, key, now_seconds());
	pthread_mutex_unlock(&m->lock);
}

void k8s__wq_metrics_get(k8s__wq_metrics *m, const char *key)
{
	if (!m)
		return;
	asb_metric_series_add(m->depth, -1);
	double now = now_seconds();
	pthread_mutex_lock(&m->lock);
	double waited = forget(&m->added_at, key, now);
	/* the processing start is set anew, as client-go does */
	forget(&m->started_at, key, now);
	remember(&m->started_at, key, now);
	pthread_mutex_unlock(&m->lock);
	if (waited >= 0)
		asb_metric_series_observe(m->queue_duration, waited);
}

void k8s__wq_metrics_done(k8s__wq_metrics *m, const char *key)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	double worked = forget(&m->started_at, key, now_seconds());
	pthread_mutex_unlock(&m->lock);
	if (worked >= 0)
		asb_metric_series_observe(m->work_duration, worked);
}

void k8s__wq_metrics_retry(k8s__wq_metrics *m)
{
	if (m)
		asb_metric_series_add(m->retries, 1);
}
