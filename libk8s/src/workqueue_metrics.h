/*
 * workqueue_metrics.h - the work queue's Prometheus metrics, as client-go's
 * queue records them through controller-runtime's metrics provider
 * (sigs.k8s.io/controller-runtime/pkg/metrics/workqueue.go): depth, adds,
 * time in queue, time in processing, retries, and at scrape time the
 * unfinished work and the longest running processor. Every series carries
 * name=<queue name> and controller=<queue name>; depth also priority="".
 *
 * Internal to libk8s. Every function accepts a NULL handle (metrics off)
 * and does nothing then. The recording calls are made under the queue's
 * lock; the handle has its own lock for the per-key times, which the
 * scrape-time collectors read (lock order: queue, then metrics).
 */
#ifndef K8S_WORKQUEUE_METRICS_H
#define K8S_WORKQUEUE_METRICS_H

#include "asb/metrics.h"

typedef struct k8s__wq_metrics k8s__wq_metrics;

/**
 * Registers (or finds) the workqueue_* families in `reg` and prepares the
 * series of queue `name`. `reg` NULL: *out = NULL and 0 (metrics off).
 * Returns 0, or the registry's error (recorded).
 */
int k8s__wq_metrics_new(k8s__wq_metrics **out, asb_metrics_registry *reg,
                        const char *name);

/** Detaches the collectors and frees; NULL accepted. */
void k8s__wq_metrics_free(k8s__wq_metrics *m);

/** A key was added (it was not already waiting): depth +1, adds +1. */
void k8s__wq_metrics_add(k8s__wq_metrics *m, const char *key);

/** A worker took `key`: depth -1, its time in the queue is observed. */
void k8s__wq_metrics_get(k8s__wq_metrics *m, const char *key);

/** A worker is done with `key`: its processing time is observed. */
void k8s__wq_metrics_done(k8s__wq_metrics *m, const char *key);

/** A delayed add (a retry, as client-go counts them). */
void k8s__wq_metrics_retry(k8s__wq_metrics *m);

#endif
