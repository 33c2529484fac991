/*
 * workqueue.h - a rate-limited work queue of string keys with client-go's
 * semantics (k8s.io/client-go/util/workqueue):
 * - a key added several times before it is processed is processed once;
 * - a key is never handed to two workers at once: a key added while it is
 *   being processed is marked dirty and handed out again after done();
 * - add_after() delays an add; add_rate_limited() delays it by the larger
 *   of the key's exponential backoff (base * 2^failures, capped; forget()
 *   resets it) and an overall token bucket shared by all keys;
 * - shutdown() wakes every waiting worker; get() then drains what is
 *   queued and finally returns ASB_ESHUTDOWN.
 * All functions are thread-safe.
 */
#ifndef K8S_WORKQUEUE_H
#define K8S_WORKQUEUE_H

#include "k8s/common.h"
#include "asb/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque work queue. */
typedef struct k8s_workqueue k8s_workqueue;

#define K8S_WORKQUEUE_OPTIONS_VERSION 1

/** Work queue options. */
typedef struct {
	unsigned int version;  /**< K8S_WORKQUEUE_OPTIONS_VERSION */
	long base_delay_ms;    /**< first retry delay; default 5 ms */
	long max_delay_ms;     /**< retry delay cap; default 1000 s */
	const char *name;      /**< `name` label of the metrics (copied); NULL: "" */
	/** Borrowed; NULL: no metrics. Records client-go's workqueue_* metrics
	 *  (depth, adds_total, queue_duration_seconds, work_duration_seconds,
	 *  retries_total, unfinished_work_seconds,
	 *  longest_running_processor_seconds) with labels name and controller
	 *  set to `name`, as controller-runtime does. Must outlive the queue. */
	asb_metrics_registry *metrics;
	/**
	 * Overall token bucket on rate-limited adds, on top of the per-key
	 * backoff (client-go's DefaultControllerRateLimiter: the larger of the
	 * two delays wins): retries per second across all keys, so a burst of
	 * failures cannot hammer the API server. Default 10; <= 0: none.
	 */
	double overall_qps;
	int overall_burst;     /**< tokens available at once; default 100 */
} k8s_workqueue_options;

#define K8S_WORKQUEUE_OPTIONS_INIT { .version = K8S_WORKQUEUE_OPTIONS_VERSION, \
	.base_delay_ms = 5, .max_delay_ms = 1000000, .overall_qps = 10, .overall_burst = 100 }

/** Creates a queue; `opts` may be NULL. Returns 0, ASB_EINVAL or ASB_ENOMEM. */
K8S_EXTERN int k8s_workqueue_new(k8s_workqueue **out,
                                 const k8s_workqueue_options *opts);

/** Frees a queue (call after shutdown and after workers stopped); NULL ok. */
K8S_EXTERN void k8s_workqueue_free(k8s_workqueue *q);

/** Adds `key` (copied). Ignored after shutdown. Returns 0 or ASB_ENOMEM. */
K8S_EXTERN int k8s_workqueue_add(k8s_workqueue *q, const char *key);

/** Adds `key` after `delay_ms` milliseconds (<= 0: now). */
K8S_EXTERN int k8s_workqueue_add_after(k8s_workqueue *q, const char *key,
                                       long delay_ms);

/** Adds `key` after its backoff delay and counts one more failure. */
K8S_EXTERN int k8s_workqueue_add_rate_limited(k8s_workqueue *q,
                                              const char *key);

/**
 * As k8s_workqueue_add_rate_limited() without the overall bucket: `key`
 * comes back after its own exponential backoff only (one more failure
 * counted). For failures that cost the API server nothing because it was
 * not reached (connection refused or reset, TLS or timeout: ASB_ETRANSPORT).
 * Counted in the shared bucket, an outage turns into minutes of delay for
 * every key afterwards: 200 keys failing 14 times each during a 40 s
 * restart reserve 2,800 tokens, 280 s at the default 10/s (client-go
 * counts them; we do not). Thread-safe. Returns 0 or ASB_ENOMEM.
 */
K8S_EXTERN int k8s_workqueue_add_backoff(k8s_workqueue *q, const char *key);

/** Forgets the failure count of `key`. */
K8S_EXTERN void k8s_workqueue_forget(k8s_workqueue *q, const char *key);

/** Number of failures counted for `key` since it was last forgotten. */
K8S_EXTERN int k8s_workqueue_num_requeues(k8s_workqueue *q, const char *key);

/**
 * Blocks until a key is available and returns it in `*key` (a new string
 * the caller frees after calling k8s_workqueue_done()). Returns 0, or
 * ASB_ESHUTDOWN once the queue is shut down and drained.
 */
K8S_EXTERN int k8s_workqueue_get(k8s_workqueue *q, char **key);

/** Marks `key` processed; re-queues it if it was added meanwhile. */
K8S_EXTERN void k8s_workqueue_done(k8s_workqueue *q, const char *key);

/** Number of keys waiting (not counting delayed or in-flight ones). */
K8S_EXTERN size_t k8s_workqueue_len(k8s_workqueue *q);

/** Shuts the queue down: pending delayed adds are dropped, waiters wake. */
K8S_EXTERN void k8s_workqueue_shutdown(k8s_workqueue *q);

/** True after k8s_workqueue_shutdown(). */
K8S_EXTERN bool k8s_workqueue_is_shutdown(k8s_workqueue *q);

#ifdef __cplusplus
}
#endif
#endif
