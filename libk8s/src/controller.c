/*
 * controller.c - N workers draining a work queue into a reconcile function
 * (see controller.h). The policy for a finished reconcile mirrors
 * controller-runtime: error => requeue with per-key backoff (and the overall
 * bucket, except for ASB_ETRANSPORT: the API server was not reached); requeue_after
 * => forget the failures and requeue after the delay; requeue => backoff;
 * otherwise forget.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/controller.h"
#include "k8s/object.h"
#include "controller_metrics.h"

struct k8s_controller {
	char *name;
	int workers;
	k8s_reconcile_fn reconcile;
	void *userdata;
	asb_logger *log;
	k8s_workqueue *queue;
	pthread_t *threads;
	int nthreads;
	bool stopped;
	k8s__ctrl_metrics *metrics;  /* NULL: off */
};

int k8s_controller_new(k8s_controller **out, const k8s_controller_options *o)
{
	if (!o || o->version != K8S_CONTROLLER_OPTIONS_VERSION || !o->reconcile)
		return asb_error_set(ASB_EINVAL, 0, NULL, "controller: options version and reconcile are required");
	k8s_controller *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	c->name = strdup(o->name ? o->name : "controller");
	c->workers = o->workers > 0 ? o->workers : 1;
	c->reconcile = o->reconcile;
	c->userdata = o->userdata;
	c->log = o->logger;
	k8s_workqueue_options qo = o->queue;
	qo.name = qo.name ? qo.name : c->name;
	qo.metrics = qo.metrics ? qo.metrics : o->metrics;
	int rc = c->name ? k8s_workqueue_new(&c->queue, &qo)
	                 : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	if (rc == 0 && (rc = k8s__ctrl_metrics_new(&c->metrics, o->metrics, c->name, c->workers)) < 0)
		k8s_workqueue_free(c->queue);
	if (rc < 0 || !c->name) {
		free(c->name);
		free(c);
		return rc < 0 ? rc : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	*out = c;
	return 0;
}

void k8s_controller_enqueue(k8s_controller *c, const char *key)
{
	k8s_workqueue_add(c->queue, key);
}

void k8s_controller_enqueue_after(k8s_controller *c, const char *key, long delay_ms)
{
	k8s_workqueue_add_after(c->queue, key, delay_ms);
}

k8s_workqueue *k8s_controller_queue(k8s_controller *c)
{
	return c->queue;
}

static void process(k8s_controller *c, const char *key)
{
	k8s_reconcile_result res = { 0, false };
	asb_error_clear();
	int64_t start = k8s_monotonic_ms();
	double mstart = k8s__ctrl_metrics_begin(c->metrics);
	int rc = c->reconcile(key, &res, c->userdata);
	k8s__ctrl_metrics_end(c->metrics, rc < 0 ? K8S__RECONCILE_ERROR
	                      : res.requeue_after_ms > 0 ? K8S__RECONCILE_REQUEUE_AFTER
	                      : res.requeue ? K8S__RECONCILE_REQUEUE : K8S__RECONCILE_SUCCESS, mstart);
	int64_t dur = k8s_monotonic_ms() - start;
	if (rc < 0) {
		const asb_error *e = asb_error_last();
		asb_log_typed(c->log, rc == ASB_ECONFLICT ? ASB_LOG_DEBUG : ASB_LOG_ERROR,
		              "reconcile failed", ASB_LOG_STR("controller", c->name),
		              ASB_LOG_STR("key", key),
		              ASB_LOG_STR("error", *e->message ? e->message : asb_strerror(rc)),
		              ASB_LOG_INT("retries", k8s_workqueue_num_requeues(c->queue, key)),
		              ASB_LOG_INT("duration_ms", dur));
		/* an unreachable API server is not hammered by retries: per-key
		 * backoff only, so an outage does not drain the shared bucket */
		if (rc == ASB_ETRANSPORT)
			k8s_workqueue_add_backoff(c->queue, key);
		else
			k8s_workqueue_add_rate_limited(c->queue, key);
	} else if (res.requeue_after_ms > 0) {
		k8s_workqueue_forget(c->queue, key);
		k8s_workqueue_add_after(c->queue, key, res.requeue_after_ms);
	} else if (res.requeue) {
		k8s_workqueue_add_rate_limited(c->queue, key);
	} else {
		k8s_workqueue_forget(c->queue, key);
	}
	if (rc >= 0)
		asb_log_typed(c->log, ASB_LOG_DEBUG, "reconciled", ASB_LOG_STR("controller", c->name),
		              ASB_LOG_STR("key", key), ASB_LOG_INT("duration_ms", dur));
}

static void *worker(void *arg)
{
	k8s_controller *c = arg;
	char *key;
	while (k8s_workqueue_get(c->queue, &key) == 0) {
		process(c, key);
		k8s_workqueue_done(c->queue, key);
		free(key);
	}
	return NULL;
}

int k8s_controller_start(k8s_controller *c)
{
	if (c->threads)
		return asb_error_set(ASB_EINVAL, 0, NULL, "controller %s: already started", c->name);
	c->threads = calloc((size_t)c->workers, sizeof(*c->threads));
	if (!c->threads)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	for (int i = 0; i < c->workers; i++) {
		if (pthread_create(&c->threads[i], NULL, worker, c) != 0) {
			/* undo: the workers already started drain and exit */
			k8s_workqueue_shutdown(c->queue);
			for (int j = 0; j < i; j++)
				pthread_join(c->threads[j], NULL);
			free(c->threads);
			c->threads = NULL;
			c->nthreads = 0;
			return asb_error_set(ASB_ERROR, 0, NULL,
			                     "controller %s: cannot start worker %d of %d (thread limit?)",
			                     c->name, i + 1, c->workers);
		}
		c->nthreads++;
	}
	return 0;
}

void k8s_controller_stop(k8s_controller *c)
{
	if (c->stopped)
		return;
	c->stopped = true;
	k8s_workqueue_shutdown(c->queue);
	for (int i = 0; i < c->nthreads; i++)
		pthread_join(c->threads[i], NULL);
}

void k8s_controller_free(k8s_controller *c)
{
	if (!c)
		return;
	k8s_controller_stop(c);
	free(c->threads);
	k8s_workqueue_free(c->queue);
	k8s__ctrl_metrics_free(c->metrics);
	free(c->name);
	free(c);
}
