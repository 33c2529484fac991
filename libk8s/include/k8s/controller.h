/*
 * controller.h - runs a reconcile function over keys from a work queue with
 * N worker threads (controller-runtime's Controller, reduced).
 *
 * Informer handlers enqueue "namespace/name" keys; each worker takes a key,
 * calls reconcile, and according to the result forgets the key, requeues it
 * after a delay, or requeues it with exponential backoff on error. A key is
 * never reconciled by two workers at once.
 */
#ifndef K8S_CONTROLLER_H
#define K8S_CONTROLLER_H

#include "asb/log.h"
#include "k8s/workqueue.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque controller. */
typedef struct k8s_controller k8s_controller;

/** What a reconcile asks for after it ran. */
typedef struct {
	long requeue_after_ms;  /**< > 0: reconcile this key again after that delay */
	bool requeue;           /**< true: requeue with backoff even without error */
} k8s_reconcile_result;

/**
 * Reconciles one key. Returns 0 on success (then `res` decides about
 * requeueing) or a negative code: the key is requeued with backoff and the
 * error (asb_error_last()) is logged. ASB_ECONFLICT is treated as a plain
 * requeue with backoff and logged at debug level only. ASB_ETRANSPORT (the
 * API server was not reached) backs off per key only, outside the queue's
 * overall bucket (k8s_workqueue_add_backoff()): return the client's code.
 */
typedef int (*k8s_reconcile_fn)(const char *key, k8s_reconcile_result *res,
                                void *userdata);

#define K8S_CONTROLLER_OPTIONS_VERSION 1

/** Controller options. */
typedef struct {
	unsigned int version;     /**< K8S_CONTROLLER_OPTIONS_VERSION */
	const char *name;         /**< for logs, e.g. "sandbox" (copied) */
	int workers;              /**< worker threads; default 1 */
	k8s_reconcile_fn reconcile; /**< required */
	void *userdata;           /**< passed to reconcile */
	asb_logger *logger;       /**< borrowed; NULL: silent */
	k8s_workqueue_options queue; /**< queue backoff settings */
	/** Borrowed; NULL: no metrics. Records controller-runtime's
	 *  controller_runtime_reconcile_total{controller,result} (result
	 *  success, error, requeue, requeue_after), _reconcile_errors_total,
	 *  _reconcile_time_seconds, _active_workers and
	 *  _max_concurrent_reconciles with controller=`name`, the
	 *  _terminal_reconcile_errors_total, _reconcile_panics_total and
	 *  _reconcile_timeouts_total counters at 0 (no error is terminal, a
	 *  reconcile has no deadline and cannot panic), and the queue's
	 *  workqueue_* metrics (named `name` unless queue.name says otherwise).
	 *  Must outlive the controller. */
	asb_metrics_registry *metrics;
} k8s_controller_options;

#define K8S_CONTROLLER_OPTIONS_INIT { .version = K8S_CONTROLLER_OPTIONS_VERSION, \
	.name = "controller", .workers = 1, .queue = K8S_WORKQUEUE_OPTIONS_INIT }

/** Creates a controller (not started). Returns 0, ASB_EINVAL or ASB_ENOMEM. */
K8S_EXTERN int k8s_controller_new(k8s_controller **out,
                                  const k8s_controller_options *opts);

/** Enqueues a key for reconcile (thread-safe; safe from informer handlers). */
K8S_EXTERN void k8s_controller_enqueue(k8s_controller *c, const char *key);

/** Enqueues a key after `delay_ms` (thread-safe). */
K8S_EXTERN void k8s_controller_enqueue_after(k8s_controller *c,
                                             const char *key, long delay_ms);

/** The controller's work queue (borrowed), e.g. for metrics. */
K8S_EXTERN k8s_workqueue *k8s_controller_queue(k8s_controller *c);

/** Starts the worker threads. Returns 0, ASB_EINVAL (twice) or ASB_ERROR. */
K8S_EXTERN int k8s_controller_start(k8s_controller *c);

/**
 * Shuts the queue down and joins the workers; reconciles in flight finish
 * first. Safe to call twice.
 */
K8S_EXTERN void k8s_controller_stop(k8s_controller *c);

/** Stops if needed and frees; NULL accepted. */
K8S_EXTERN void k8s_controller_free(k8s_controller *c);

#ifdef __cplusplus
}
#endif
#endif
