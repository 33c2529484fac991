/*
 * ratelimit.h - a client-side token bucket (QPS and burst), the limiter
 * client-go puts in front of every API request
 * (k8s.io/client-go/util/flowcontrol, rate.Limiter semantics).
 *
 * The bucket holds at most `burst` tokens and refills at `qps` tokens per
 * second; each request takes one. A full bucket admits `burst` requests at
 * once, after which requests are paced at one every 1/qps seconds. A
 * negative qps disables limiting, as upstream's `--kube-api-qps=-1`.
 *
 * Time is the monotonic clock (CLOCK_MONOTONIC): a wall-clock step never
 * releases or withholds tokens. A limiter may be shared by several clients
 * and used from any number of threads at once (one mutex).
 */
#ifndef K8S_RATELIMIT_H
#define K8S_RATELIMIT_H

#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque token bucket. Free with k8s_ratelimiter_free(). */
typedef struct k8s_ratelimiter k8s_ratelimiter;

/**
 * Creates a token bucket that starts full.
 *
 * @param out    receives the new limiter; the caller frees it.
 * @param qps    tokens added per second (> 0), or < 0 for no limit (every
 *               request admitted at once). 0 and NaN are rejected: a bucket
 *               that never refills would block forever.
 * @param burst  bucket size (>= 1); ignored when qps < 0.
 *
 * @return 0; ASB_EINVAL for qps 0 / NaN / infinite or burst < 1 with a
 *         limit (recorded); ASB_ENOMEM.
 */
K8S_EXTERN int k8s_ratelimiter_new(k8s_ratelimiter **out, double qps, int burst);

/** Frees a limiter; NULL is accepted. No call may be in flight. */
K8S_EXTERN void k8s_ratelimiter_free(k8s_ratelimiter *rl);

/**
 * Takes a token now, without blocking, and returns how long the caller
 * must wait before acting on it: 0 while the bucket has tokens, else the
 * time until the token is due. The reservation always succeeds (the bucket
 * may go into debt), so concurrent callers get distinct, increasing delays:
 * with qps 10 and an empty bucket, three callers get about 100, 200 and
 * 300 ms. A NULL or unlimited limiter returns 0. Thread-safe.
 *
 * @return the delay in milliseconds (rounded up), >= 0.
 */
K8S_EXTERN long k8s_ratelimiter_reserve(k8s_ratelimiter *rl);

/**
 * Blocks until a token is available and takes it (k8s_ratelimiter_reserve()
 * then sleep). When `max_wait_ms` >= 0 and the token would only be due
 * later than that, nothing is taken and ASB_ETIMEOUT is returned at once
 * (a request whose own deadline would pass while queued). A NULL or
 * unlimited limiter returns 0 at once. Thread-safe; the sleep holds no lock.
 *
 * @param max_wait_ms  longest acceptable wait in milliseconds; < 0: no bound.
 * @param waited_ms    when not NULL, receives the time slept in ms.
 * @return 0; ASB_ETIMEOUT (recorded) as described.
 */
K8S_EXTERN int k8s_ratelimiter_wait(k8s_ratelimiter *rl, long max_wait_ms,
                                    long *waited_ms);

/** The limiter's rate (tokens per second; < 0: unlimited). Thread-safe. */
K8S_EXTERN double k8s_ratelimiter_qps(const k8s_ratelimiter *rl);

/** The limiter's bucket size. Thread-safe. */
K8S_EXTERN int k8s_ratelimiter_burst(const k8s_ratelimiter *rl);

#ifdef __cplusplus
}
#endif
#endif
