/* Unit tests of libasb/src/clock.c: monotonic deadlines and timed waits. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "asb/clock.h"

static long long ns_of(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

START_TEST(deadline_is_now_plus_ms_normalised)
{
	for (long ms = 0; ms < 3000; ms += 333) {
		struct timespec before, d, after;
		clock_gettime(CLOCK_MONOTONIC, &before);
		asb_deadline_after_ms(&d, ms);
		clock_gettime(CLOCK_MONOTONIC, &after);
		ck_assert_int_ge(d.tv_nsec, 0);
		ck_assert_int_lt(d.tv_nsec, 1000000000L);
		ck_assert(ns_of(&d) >= ns_of(&before) + ms * 1000000LL);
		ck_assert(ns_of(&d) <= ns_of(&after) + ms * 1000000LL);
	}
}
END_TEST

START_TEST(timed_wait_on_monotonic_condition_times_out)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c;
	ck_assert_int_eq(asb_cond_init_monotonic(&c), 0);
	struct timespec d, now;
	asb_deadline_after_ms(&d, 20);
	pthread_mutex_lock(&mu);
	int rc;
	do
		rc = pthread_cond_timedwait(&c, &mu, &d);
	while (rc == 0);
	pthread_mutex_unlock(&mu);
	ck_assert_int_eq(rc, ETIMEDOUT);
	/* the deadline was read on the monotonic clock: it has passed there */
	clock_gettime(CLOCK_MONOTONIC, &now);
	ck_assert(ns_of(&now) >= ns_of(&d));
	pthread_cond_destroy(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, deadline_is_now_plus_ms_normalised);
	tcase_add_test(tc, timed_wait_on_monotonic_condition_times_out);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
