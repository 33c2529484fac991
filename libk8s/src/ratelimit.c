/*
 * ratelimit.c - the token bucket of k8s/ratelimit.h.
 *
 * The bucket is two numbers, the tokens it holds (which may go below zero:
 * a reservation is a debt paid back by the refill) and the monotonic time
 * they were counted at. Every reservation first refills for the time that
 * passed, capped at `burst`, then takes one token; a negative balance says
 * how long until that token is due. This is golang.org/x/time/rate's
 * algorithm, which client-go's flowcontrol limiter is built on, so the
 * pacing matches upstream's `--kube-api-qps` / `--kube-api-burst`.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "ratelimit_internal.h"

struct k8s_ratelimiter {
	double qps;          /* < 0: unlimited */
	int burst;
	pthread_mutex_t lock;  /* guards the two fields below */
	double tokens;       /* may be negative (reserved ahead) */
	int64_t last_ns;     /* monotonic time `tokens` was computed for */
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int k8s_ratelimiter_new(k8s_ratelimiter **out, double qps, int burst)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "ratelimiter: out is NULL");
	*out = NULL;
	if (isnan(qps) || isinf(qps) || qps == 0)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "ratelimiter: qps must be > 0, or < 0 for no limit "
		                     "(got %g)", qps);
	if (qps > 0 && burst < 1)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "ratelimiter: burst must be >= 1 (got %d)", burst);
	k8s_ratelimiter *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "ratelimiter: out of memory");
	if (pthread_mutex_init(&rl->lock, NULL) != 0) {
		free(rl);
		return asb_error_set(ASB_ERROR, 0, NULL, "ratelimiter: mutex init failed");
	}
	rl->qps = qps;
	rl->burst = burst < 1 ? 1 : burst;
	rl->tokens = rl->burst;  /* starts full, as client-go's */
	rl->last_ns = mono_ns();
	*out = rl;
	return 0;
}

void k8s_ratelimiter_free(k8s_ratelimiter *rl)
{
	if (!rl)
		return;
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}

long k8s__ratelimiter_reserve_at(k8s_ratelimiter *rl, int64_t now_ns,
                                 long max_wait_ms)
{
	if (!rl || rl->qps < 0)
		return 0;
	pthread_mutex_lock(&rl->lock);
	/* Another thread may have counted at a later time than ours. */
	if (now_ns > rl->last_ns) {
		rl->tokens += (double)(now_ns - rl->last_ns) * rl->qps / 1e9;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
		rl->last_ns = now_ns;
	}
	double left = rl->tokens - 1;
	long delay = 0;
	if (left < 0) {
		/* Time for the refill to bring the balance back to zero, plus the
		 * time other threads' reservations moved `last_ns` past now. */
		double ns = -left / rl->qps * 1e9 + (double)(rl->last_ns - now_ns);
		delay = (long)(ns / 1e6);
		if ((double)delay * 1e6 < ns)
			delay++;  /* round up: never wake before the token is due */
	}
	if (max_wait_ms >= 0 && delay > max_wait_ms) {
		pthread_mutex_unlock(&rl->lock);
		return -1;
	}
	rl->tokens = left;
	pthread_mutex_unlock(&rl->lock);
	return delay;
}

long k8s_ratelimiter_reserve(k8s_ratelimiter *rl)
{
	return k8s__ratelimiter_reserve_at(rl, mono_ns(), -1);
}

int k8s_ratelimiter_wait(k8s_ratelimiter *rl, long max_wait_ms, long *waited_ms)
{
	if (waited_ms)
		*waited_ms = 0;
	long delay = k8s__ratelimiter_reserve_at(rl, mono_ns(), max_wait_ms);
	if (delay < 0)
		return asb_error_set(ASB_ETIMEOUT, 0, NULL,
		                     "ratelimiter: the next token (qps %g, burst %d) "
		                     "is due later than the %ld ms allowed",
		                     rl->qps, rl->burst, max_wait_ms);
	if (delay > 0) {
		struct timespec ts = { delay / 1000, (delay % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;  /* interrupted: sleep the rest */
		if (waited_ms)
			*waited_ms = delay;
	}
	return 0;
}

double k8s_ratelimiter_qps(const k8s_ratelimiter *rl)
{
	return rl ? rl->qps : -1;
}

int k8s_ratelimiter_burst(const k8s_ratelimiter *rl)
{
	return rl ? rl->burst : 0;
}
