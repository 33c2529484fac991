/*
 * test_ratelimit.c - the client-side token bucket (libk8s/src/ratelimit.c).
 *
 * Most tests drive the bucket with made-up monotonic times through
 * k8s__ratelimiter_reserve_at(), so the delays are exact; the blocking
 * and concurrent tests use the real clock with generous lower bounds only.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "k8s/ratelimit.h"
#include "ratelimit_internal.h"

#define MS 1000000LL  /* ns per ms */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static k8s_ratelimiter *make(double qps, int burst)
{
	k8s_ratelimiter *rl = NULL;
	ck_assert_int_eq(k8s_ratelimiter_new(&rl, qps, burst), 0);
	ck_assert_ptr_nonnull(rl);
	return rl;
}

START_TEST(test_burst_then_pace)
{
	k8s_ratelimiter *rl = make(10, 3);
	int64_t t0 = mono_ns() + 1000 * MS;  /* after creation: the bucket is full */

	/* A full bucket admits `burst` requests at once... */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, -1), 0);
	/* ...then one every 1/qps = 100 ms. */
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, -1), 100);
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, -1), 200);
	/* 150 ms later the debt is 2 - 1.5 tokens: the next is due at 150 ms
	 * after that moment (300 ms after t0). */
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0 + 150 * MS, -1), 150);
	/* After a long idle the bucket is full again, but never fuller. */
	int64_t t1 = t0 + 60000 * MS;
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t1, -1), 0);
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t1, -1), 100);
	ck_assert_double_eq(k8s_ratelimiter_qps(rl), 10);
	ck_assert_int_eq(k8s_ratelimiter_burst(rl), 3);
	k8s_ratelimiter_free(rl);
}
END_TEST

START_TEST(test_reserve_rounds_up)
{
	/* qps 3: 333.33 ms per token; a delay is never rounded down (the
	 * caller must not wake before its token is due). */
	k8s_ratelimiter *rl = make(3, 1);
	int64_t t0 = mono_ns() + 1000 * MS;
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, -1), 0);
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, -1), 334);
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, -1), 667);
	k8s_ratelimiter_free(rl);
}
END_TEST

START_TEST(test_max_wait_takes_nothing)
{
	k8s_ratelimiter *rl = make(1, 1);
	int64_t t0 = mono_ns() + 1000 * MS;
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, 0), 0);
	/* The next token is 1000 ms away: refused, and not taken... */
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, 999), -1);
	/* ...so the next caller still waits 1000 ms, not 2000. */
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, 1000), 1000);
	ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, -1), 2000);

	/* The blocking form says ASB_ETIMEOUT at once. */
	long waited = 123;
	ck_assert_int_eq(k8s_ratelimiter_wait(rl, 10, &waited), ASB_ETIMEOUT);
	ck_assert_int_eq(waited, 0);
	ck_assert_int_eq(asb_error_last()->code, ASB_ETIMEOUT);
	k8s_ratelimiter_free(rl);
}
END_TEST

START_TEST(test_unlimited)
{
	/* qps < 0 is upstream's --kube-api-qps=-1: never waits; burst ignored. */
	k8s_ratelimiter *rl = make(-1, 0);
	int64_t t0 = mono_ns();
	for (int i = 0; i < 10000; i++)
		ck_assert_int_eq(k8s__ratelimiter_reserve_at(rl, t0, 0), 0);
	long waited = 7;
	ck_assert_int_eq(k8s_ratelimiter_wait(rl, 0, &waited), 0);
	ck_assert_int_eq(waited, 0);
	ck_assert_int_eq(k8s_ratelimiter_reserve(rl), 0);
	k8s_ratelimiter_free(rl);
	/* A NULL limiter is no limiter. */
	ck_assert_int_eq(k8s_ratelimiter_reserve(NULL), 0);
	ck_assert_int_eq(k8s_ratelimiter_wait(NULL, -1, NULL), 0);
	k8s_ratelimiter_free(NULL);
}
END_TEST

START_TEST(test_invalid)
{
	k8s_ratelimiter *rl = (k8s_ratelimiter *)1;
	ck_assert_int_eq(k8s_ratelimiter_new(&rl, 0, 10), ASB_EINVAL);
	ck_assert_ptr_null(rl);
	ck_assert_int_eq(k8s_ratelimiter_new(&rl, NAN, 10), ASB_EINVAL);
	ck_assert_int_eq(k8s_ratelimiter_new(&rl, INFINITY, 10), ASB_EINVAL);
	ck_assert_int_eq(k8s_ratelimiter_new(&rl, 5, 0), ASB_EINVAL);
	ck_assert_int_eq(k8s_ratelimiter_new(NULL, 5, 1), ASB_EINVAL);
}
END_TEST

START_TEST(test_wait_paces_real_clock)
{
	/* qps 20, burst 1: 11 tokens need at least 10 intervals of 50 ms. */
	k8s_ratelimiter *rl = make(20, 1);
	int64_t start = mono_ns();
	long total = 0;
	for (int i = 0; i < 11; i++) {
		long waited = -1;
		ck_assert_int_eq(k8s_ratelimiter_wait(rl, -1, &waited), 0);
		ck_assert_int_ge(waited, 0);
		total += waited;
	}
	int64_t elapsed_ms = (mono_ns() - start) / MS;
	ck_assert_int_ge(elapsed_ms, 450);
	ck_assert_int_ge(total, 450);
	k8s_ratelimiter_free(rl);
}
END_TEST

/* --- concurrency ----------------------------------------------------------- */

#define RESERVERS 8

typedef struct {
	k8s_ratelimiter *rl;
	pthread_barrier_t *go;
	int64_t now;    /* one shared clock reading: a late thread is not a slow bucket */
	long delay;
} reserver;

static void *reserve_once(void *ud)
{
	reserver *r = ud;
	pthread_barrier_wait(r->go);
	r->delay = k8s__ratelimiter_reserve_at(r->rl, r->now, -1);
	return NULL;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

START_TEST(test_concurrent_reservations_are_distinct)
{
	/* 8 threads reserve at once from an empty-after-one bucket at 1 qps,
	 * all at the same clock reading: each gets its own slot, 0, 1 s, 2 s,
	 * ... (never the same one), however the threads are scheduled. */
	k8s_ratelimiter *rl = make(1, 1);
	int64_t now = mono_ns();
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, RESERVERS);
	reserver r[RESERVERS];
	pthread_t t[RESERVERS];
	for (int i = 0; i < RESERVERS; i++) {
		r[i] = (reserver){ rl, &go, now, -1 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, reserve_once, &r[i]), 0);
	}
	long delays[RESERVERS];
	for (int i = 0; i < RESERVERS; i++) {
		pthread_join(t[i], NULL);
		delays[i] = r[i].delay;
	}
	qsort(delays, RESERVERS, sizeof(long), cmp_long);
	for (int k = 0; k < RESERVERS; k++) {
		/* slot k is due k seconds after the first; +1 for rounding up a
		 * delay computed in floating point */
		ck_assert_int_le(delays[k], k * 1000L + 1);
		ck_assert_int_ge(delays[k], k * 1000L);
	}
	pthread_barrier_destroy(&go);
	k8s_ratelimiter_free(rl);
}
END_TEST

typedef struct {
	k8s_ratelimiter *rl;
	int n;
	int failures;
} waiter;

static void *wait_n(void *ud)
{
	waiter *w = ud;
	for (int i = 0; i < w->n; i++)
		if (k8s_ratelimiter_wait(w->rl, -1, NULL) != 0)
			w->failures++;
	return NULL;
}

START_TEST(test_concurrent_waiters)
{
	/* 4 threads x 3 tokens at qps 50, burst 2: 12 tokens, 2 at once, then
	 * 10 more at 20 ms each, whoever asks. */
	k8s_ratelimiter *rl = make(50, 2);
	waiter w[4];
	pthread_t t[4];
	int64_t start = mono_ns();
	for (int i = 0; i < 4; i++) {
		w[i] = (waiter){ rl, 3, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, wait_n, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].failures, 0);
	}
	ck_assert_int_ge((mono_ns() - start) / MS, 180);
	k8s_ratelimiter_free(rl);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ratelimit");
	TCase *tc = tcase_create("bucket");
	tcase_add_test(tc, test_burst_then_pace);
	tcase_add_test(tc, test_reserve_rounds_up);
	tcase_add_test(tc, test_max_wait_takes_nothing);
	tcase_add_test(tc, test_unlimited);
	tcase_add_test(tc, test_invalid);
	suite_add_tcase(s, tc);
	tc = tcase_create("clock");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_wait_paces_real_clock);
	tcase_add_test(tc, test_concurrent_reservations_are_distinct);
	tcase_add_test(tc, test_concurrent_waiters);
	suite_add_tcase(s, tc);

	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
