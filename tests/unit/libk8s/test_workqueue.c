/* Unit tests of libk8s/src/workqueue.c: client-go work queue semantics. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/workqueue.h"
#include "k8s/object.h"

static k8s_workqueue *newq(void)
{
	k8s_workqueue *q = NULL;
	ck_assert_int_eq(k8s_workqueue_new(&q, NULL), 0);
	return q;
}

START_TEST(dedupes_keys_added_before_processing)
{
	k8s_workqueue *q = newq();
	k8s_workqueue_add(q, "ns/a");
	k8s_workqueue_add(q, "ns/a");
	k8s_workqueue_add(q, "ns/b");
	ck_assert_uint_eq(k8s_workqueue_len(q), 2);
	char *k;
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	ck_assert_str_eq(k, "ns/a");
	k8s_workqueue_done(q, k);
	free(k);
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	ck_assert_str_eq(k, "ns/b");
	k8s_workqueue_done(q, k);
	free(k);
	ck_assert_uint_eq(k8s_workqueue_len(q), 0);
	k8s_workqueue_shutdown(q);
	k8s_workqueue_free(q);
}
END_TEST

START_TEST(key_added_while_processing_is_handed_out_after_done)
{
	k8s_workqueue *q = newq();
	char *k;
	k8s_workqueue_add(q, "x");
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	/* while "x" is processed it is added again: not handed to a second worker */
	k8s_workqueue_add(q, "x");
	ck_assert_uint_eq(k8s_workqueue_len(q), 0);
	k8s_workqueue_done(q, k);
	free(k);
	ck_assert_uint_eq(k8s_workqueue_len(q), 1);
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	ck_assert_str_eq(k, "x");
	k8s_workqueue_done(q, k);
	free(k);
	k8s_workqueue_shutdown(q);
	k8s_workqueue_free(q);
}
END_TEST

START_TEST(add_after_delays_the_key)
{
	k8s_workqueue *q = newq();
	int64_t t0 = k8s_monotonic_ms();
	k8s_workqueue_add_after(q, "late", 50);
	ck_assert_uint_eq(k8s_workqueue_len(q), 0);
	char *k;
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	ck_assert_str_eq(k, "late");
	ck_assert_int_ge(k8s_monotonic_ms() - t0, 50);
	k8s_workqueue_done(q, k);
	free(k);
	k8s_workqueue_shutdown(q);
	k8s_workqueue_free(q);
}
END_TEST

START_TEST(rate_limited_backoff_grows_and_forget_resets)
{
	k8s_workqueue_options o = K8S_WORKQUEUE_OPTIONS_INIT;
	o.base_delay_ms = 10;
	o.max_delay_ms = 40;
	k8s_workqueue *q = NULL;
	ck_assert_int_eq(k8s_workqueue_new(&q, &o), 0);
	char *k;
	long expect[] = { 10, 20, 40, 40 };  /* doubles, then capped */
	for (int i = 0; i < 4; i++) {
		int64_t t0 = k8s_monotonic_ms();
		k8s_workqueue_add_rate_limited(q, "r");
		ck_assert_int_eq(k8s_workqueue_num_requeues(q, "r"), i + 1);
		ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
		int64_t waited = k8s_monotonic_ms() - t0;
		ck_assert_int_ge(waited, expect[i]);
		k8s_workqueue_done(q, k);
		free(k);
	}
	k8s_workqueue_forget(q, "r");
	ck_assert_int_eq(k8s_workqueue_num_requeues(q, "r"), 0);
	k8s_workqueue_shutdown(q);
	k8s_workqueue_free(q);
}
END_TEST

START_TEST(overall_bucket_paces_retries_across_keys)
{
	/* per-key backoff tiny, overall bucket 20/s with a burst of 2: the
	 * third and later retries of *different* keys are spaced ~50 ms */
	k8s_workqueue_options o = K8S_WORKQUEUE_OPTIONS_INIT;
	o.base_delay_ms = 1;
	o.overall_qps = 20;
	o.overall_burst = 2;
	k8s_workqueue *q = NULL;
	ck_assert_int_eq(k8s_workqueue_new(&q, &o), 0);
	int64_t t0 = k8s_monotonic_ms();
	char key[8];
	for (int i = 0; i < 6; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		k8s_workqueue_add_rate_limited(q, key);
	}
	char *k;
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
		k8s_workqueue_done(q, k);
		free(k);
	}
	/* 2 at once, then 4 more at 20/s: at least ~200 ms in all */
	ck_assert_int_ge(k8s_monotonic_ms() - t0, 190);
	k8s_workqueue_shutdown(q);
	k8s_workqueue_free(q);
}
END_TEST

START_TEST(backoff_adds_count_failures_but_take_no_bucket_token)
{
	k8s_workqueue_options o = K8S_WORKQUEUE_OPTIONS_INIT;
	o.base_delay_ms = 1;
	o.overall_qps = 0.001;  /* one token per 1000 s */
	o.overall_burst = 1;
	k8s_workqueue *q = NULL;
	ck_assert_int_eq(k8s_workqueue_new(&q, &o), 0);
	char key[8], *k;
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_int_eq(k8s_workqueue_add_backoff(q, key), 0);
	}
	for (int i = 0; i < 5; i++) {  /* all due after their 1 ms backoff */
		ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
		ck_assert_int_eq(k8s_workqueue_num_requeues(q, k), 1);
		k8s_workqueue_done(q, k);
		free(k);
	}
	/* the bucket's token is still there for a rate-limited add... */
	k8s_workqueue_add_rate_limited(q, "x");
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	ck_assert_str_eq(k, "x");
	k8s_workqueue_done(q, k);
	free(k);
	/* ...and the next one waits for the bucket */
	k8s_workqueue_add_rate_limited(q, "y");
	usleep(50000);
	ck_assert_uint_eq(k8s_workqueue_len(q), 0);
	k8s_workqueue_shutdown(q);
	k8s_workqueue_free(q);
}
END_TEST

START_TEST(shutdown_drains_then_reports_shutdown)
{
	k8s_workqueue *q = newq();
	k8s_workqueue_add(q, "a");
	k8s_workqueue_add_after(q, "dropped", 100000);
	k8s_workqueue_shutdown(q);
	ck_assert(k8s_workqueue_is_shutdown(q));
	k8s_workqueue_add(q, "ignored");
	char *k;
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	ck_assert_str_eq(k, "a");
	k8s_workqueue_done(q, k);
	free(k);
	ck_assert_int_eq(k8s_workqueue_get(q, &k), ASB_ESHUTDOWN);
	ck_assert_ptr_null(k);
	k8s_workqueue_free(q);
}
END_TEST

/* Concurrent workers: every key is processed, never by two workers at once. */
typedef struct {
	k8s_workqueue *q;
	pthread_mutex_t lock;
	int in_flight[50];
	int processed[50];
	int overlap;
} shared_state;

static void *worker(void *arg)
{
	shared_state *s = arg;
	char *k;
	while (k8s_workqueue_get(s->q, &k) == 0) {
		int i = atoi(k);
		pthread_mutex_lock(&s->lock);
		if (s->in_flight[i]++)
			s->overlap++;
		pthread_mutex_unlock(&s->lock);
		usleep(200);
		pthread_mutex_lock(&s->lock);
		s->in_flight[i]--;
		s->processed[i]++;
		pthread_mutex_unlock(&s->lock);
		k8s_workqueue_done(s->q, k);
		free(k);
	}
	return NULL;
}

START_TEST(concurrent_workers_never_share_a_key)
{
	shared_state s = { 0 };
	s.q = newq();
	pthread_mutex_init(&s.lock, NULL);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, &s);
	char key[8];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 50; i++) {
			snprintf(key, sizeof(key), "%d", i);
			k8s_workqueue_add(s.q, key);
		}
		usleep(300);
	}
	/* wait until idle, then shut down */
	for (int tries = 0; tries < 500 && k8s_workqueue_len(s.q) > 0; tries++)
		usleep(2000);
	usleep(20000);
	k8s_workqueue_shutdown(s.q);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert_int_eq(s.overlap, 0);
	for (int i = 0; i < 50; i++) {
		ck_assert_int_ge(s.processed[i], 1);
		ck_assert_int_le(s.processed[i], 20);
	}
	k8s_workqueue_free(s.q);
	pthread_mutex_destroy(&s.lock);
}
END_TEST

/* One idle worker waiting for a key due in 3 s (it holds the timer): a key
 * added for now reaches it at once, not at that deadline; the delayed key
 * still comes when due, after it. */
typedef struct {
	k8s_workqueue *q;
	int64_t got_ms[2];
	char *keys[2];
} timer_state;

static void *two_keys(void *arg)
{
	timer_state *s = arg;
	for (int i = 0; i < 2; i++) {
		if (k8s_workqueue_get(s->q, &s->keys[i]) != 0)
			return NULL;
		s->got_ms[i] = k8s_monotonic_ms();
		k8s_workqueue_done(s->q, s->keys[i]);
	}
	return NULL;
}

START_TEST(key_for_now_wakes_the_worker_that_waits_for_a_delayed_one)
{
	timer_state s = { .q = newq() };
	pthread_t t;
	pthread_create(&t, NULL, two_keys, &s);
	int64_t t0 = k8s_monotonic_ms();
	ck_assert_int_eq(k8s_workqueue_add_after(s.q, "late", 3000), 0);
	usleep(50000);   /* the worker is in its timed wait */
	ck_assert_int_eq(k8s_workqueue_add(s.q, "now"), 0);
	pthread_join(t, NULL);
	ck_assert_str_eq(s.keys[0], "now");
	ck_assert_str_eq(s.keys[1], "late");
	ck_assert_int_lt(s.got_ms[0] - t0, 2500);
	ck_assert_int_ge(s.got_ms[1] - t0, 3000);
	free(s.keys[0]);
	free(s.keys[1]);
	k8s_workqueue_free(s.q);
}
END_TEST

/* Many idle workers, many delayed keys, a few for now between them: each
 * key is handed out once, none is left behind by the timer's hand-overs. */
START_TEST(delayed_keys_all_reach_many_workers)
{
	shared_state s = { 0 };
	s.q = newq();
	pthread_mutex_init(&s.lock, NULL);
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		pthread_create(&t[i], NULL, worker, &s);
	char key[8];
	for (int i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "%d", i);
		if (i % 5 == 0)
			k8s_workqueue_add(s.q, key);
		else
			k8s_workqueue_add_after(s.q, key, 1 + (i * 7) % 60);
		if (i % 10 == 0)
			usleep(1000);
	}
	int done = 0;
	for (int tries = 0; tries < 1000 && !done; tries++) {
		usleep(2000);
		pthread_mutex_lock(&s.lock);
		done = 1;
		for (int i = 0; i < 50; i++)
			done &= s.processed[i] == 1;
		pthread_mutex_unlock(&s.lock);
	}
	k8s_workqueue_shutdown(s.q);
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 50; i++)
		ck_assert_msg(s.processed[i] == 1, "key %d processed %d times", i, s.processed[i]);
	ck_assert_int_eq(s.overlap, 0);
	k8s_workqueue_free(s.q);
	pthread_mutex_destroy(&s.lock);
}
END_TEST

static void *blocked_getter(void *arg)
{
	char *k = NULL;
	int rc = k8s_workqueue_get(arg, &k);
	free(k);
	return (void *)(intptr_t)rc;
}

START_TEST(shutdown_wakes_blocked_workers)
{
	k8s_workqueue *q = newq();
	pthread_t t;
	pthread_create(&t, NULL, blocked_getter, q);
	usleep(20000);
	k8s_workqueue_shutdown(q);
	void *rc;
	pthread_join(t, &rc);
	ck_assert_int_eq((int)(intptr_t)rc, ASB_ESHUTDOWN);
	k8s_workqueue_free(q);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("workqueue");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, dedupes_keys_added_before_processing);
	tcase_add_test(tc, key_added_while_processing_is_handed_out_after_done);
	tcase_add_test(tc, add_after_delays_the_key);
	tcase_add_test(tc, rate_limited_backoff_grows_and_forget_resets);
	tcase_add_test(tc, overall_bucket_paces_retries_across_keys);
	tcase_add_test(tc, backoff_adds_count_failures_but_take_no_bucket_token);
	tcase_add_test(tc, shutdown_drains_then_reports_shutdown);
	tcase_add_test(tc, concurrent_workers_never_share_a_key);
	tcase_add_test(tc, shutdown_wakes_blocked_workers);
	tcase_add_test(tc, key_for_now_wakes_the_worker_that_waits_for_a_delayed_one);
	tcase_add_test(tc, delayed_keys_all_reach_many_workers);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
