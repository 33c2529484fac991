/* Unit tests of libk8s/src/controller.c: workers, retries with backoff, requeue_after. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/controller.h"
#include "k8s/object.h"

#define WAIT_FOR(cond) do { \
	int _i; \
	for (_i = 0; _i < 200 && !(cond); _i++) usleep(10000); \
	ck_assert_msg((cond), "timed out waiting for " #cond); \
} while (0)

typedef struct {
	pthread_mutex_t lock;
	int calls;
	int failures_left;
	int fail_code;          /* 0: ASB_EINTERNAL */
	long requeue_after_ms;
	int64_t times[8];
} rec_state;

static int calls(rec_state *s)
{
	pthread_mutex_lock(&s->lock);
	int n = s->calls;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static int reconcile(const char *key, k8s_reconcile_result *res, void *ud)
{
	rec_state *s = ud;
	pthread_mutex_lock(&s->lock);
	if (s->calls < 8)
		s->times[s->calls] = k8s_monotonic_ms();
	s->calls++;
	int fail = s->failures_left > 0 ? s->failures_left-- : 0;
	long after = s->calls == 1 ? s->requeue_after_ms : 0;
	pthread_mutex_unlock(&s->lock);
	if (fail && s->fail_code)
		return asb_error_set(s->fail_code, 0, NULL, "simulated failure on %s", key);
	if (fail)
		return asb_error_set(ASB_EINTERNAL, 500, "InternalError", "simulated failure on %s", key);
	res->requeue_after_ms = after;
	return 0;
}

static k8s_controller *start_with(rec_state *s, long base_delay_ms, double overall_qps)
{
	k8s_controller_options o = K8S_CONTROLLER_OPTIONS_INIT;
	o.workers = 2;
	o.reconcile = reconcile;
	o.userdata = s;
	o.queue.base_delay_ms = base_delay_ms;
	if (overall_qps > 0) {
		o.queue.overall_qps = overall_qps;
		o.queue.overall_burst = 1;
	}
	k8s_controller *c;
	ck_assert_int_eq(k8s_controller_new(&c, &o), 0);
	ck_assert_int_eq(k8s_controller_start(c), 0);
	return c;
}

static k8s_controller *start(rec_state *s)
{
	return start_with(s, 20, 0);
}

START_TEST(errors_are_retried_with_backoff_until_success)
{
	rec_state s = { .lock = PTHREAD_MUTEX_INITIALIZER, .failures_left = 3 };
	k8s_controller *c = start(&s);
	k8s_controller_enqueue(c, "ns/a");
	WAIT_FOR(calls(&s) >= 4);
	usleep(100000);
	ck_assert_int_eq(calls(&s), 4);  /* no retry after the success */
	/* backoff 20, 40, 80 ms between the attempts */
	ck_assert_int_ge(s.times[1] - s.times[0], 20);
	ck_assert_int_ge(s.times[2] - s.times[1], 40);
	ck_assert_int_ge(s.times[3] - s.times[2], 80);
	ck_assert_int_eq(k8s_workqueue_num_requeues(k8s_controller_queue(c), "ns/a"), 0);
	k8s_controller_free(c);
}
END_TEST

START_TEST(transport_errors_back_off_outside_the_overall_bucket)
{
	/* A shared bucket of one token per 1000 s: a retry that takes a token
	 * beyond the first waits that long. */
	rec_state t = { .lock = PTHREAD_MUTEX_INITIALIZER, .failures_left = 3,
	                .fail_code = ASB_ETRANSPORT };
	k8s_controller *c = start_with(&t, 1, 0.001);
	k8s_controller_enqueue(c, "ns/unreachable");
	WAIT_FOR(calls(&t) >= 4);  /* 3 failures, then the success: no token taken */
	k8s_controller_free(c);

	rec_state e = { .lock = PTHREAD_MUTEX_INITIALIZER, .failures_left = 3 };
	c = start_with(&e, 1, 0.001);
	k8s_controller_enqueue(c, "ns/answered");
	WAIT_FOR(calls(&e) >= 2);  /* the first retry takes the only token */
	usleep(300000);
	ck_assert_int_eq(calls(&e), 2);  /* the second waits for the bucket */
	k8s_controller_free(c);
}
END_TEST

START_TEST(requeue_after_runs_the_key_again)
{
	rec_state s = { .lock = PTHREAD_MUTEX_INITIALIZER, .requeue_after_ms = 150 };
	k8s_controller *c = start(&s);
	k8s_controller_enqueue(c, "ns/b");
	WAIT_FOR(calls(&s) >= 2);
	ck_assert_int_ge(s.times[1] - s.times[0], 150);
	k8s_controller_free(c);
}
END_TEST

START_TEST(stop_is_idempotent_and_enqueue_after_stop_is_ignored)
{
	rec_state s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	k8s_controller *c = start(&s);
	k8s_controller_stop(c);
	k8s_controller_stop(c);
	k8s_controller_enqueue(c, "ns/late");
	usleep(50000);
	ck_assert_int_eq(calls(&s), 0);
	k8s_controller_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("controller");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, errors_are_retried_with_backoff_until_success);
	tcase_add_test(tc, transport_errors_back_off_outside_the_overall_bucket);
	tcase_add_test(tc, requeue_after_runs_the_key_again);
	tcase_add_test(tc, stop_is_idempotent_and_enqueue_after_stop_is_ignored);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
