/*
 * test_signals.c - asb_signals_block_stop(): the set it fills, the mask it
 * leaves, the dispositions it restores, and a stop signal raised after it
 * waits for sigwait() instead of ending the process.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include "asb/signals.h"

START_TEST(blocks_and_waits)
{
	signal(SIGINT, SIG_IGN);  /* as a shell leaves a background job */
	sigset_t set;
	asb_signals_block_stop(&set, SIGUSR1);
	ck_assert_int_eq(sigismember(&set, SIGTERM), 1);
	ck_assert_int_eq(sigismember(&set, SIGINT), 1);
	ck_assert_int_eq(sigismember(&set, SIGUSR1), 1);
	ck_assert_int_eq(sigismember(&set, SIGHUP), 0);
	sigset_t mask;
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	ck_assert_int_eq(sigismember(&mask, SIGTERM), 1);
	ck_assert_int_eq(sigismember(&mask, SIGINT), 1);
	ck_assert_int_eq(sigismember(&mask, SIGUSR1), 1);
	struct sigaction sa;
	sigaction(SIGINT, NULL, &sa);
	ck_assert_ptr_eq((void *)sa.sa_handler, (void *)SIG_DFL);
	/* an ignored SIGINT would be discarded; a default one stays pending */
	raise(SIGINT);
	int sig = 0;
	ck_assert_int_eq(sigwait(&set, &sig), 0);
	ck_assert_int_eq(sig, SIGINT);
	raise(SIGTERM);
	ck_assert_int_eq(sigwait(&set, &sig), 0);
	ck_assert_int_eq(sig, SIGTERM);
}
END_TEST

START_TEST(no_extra)
{
	sigset_t set;
	asb_signals_block_stop(&set, 0);
	ck_assert_int_eq(sigismember(&set, SIGUSR1), 0);
	ck_assert_int_eq(sigismember(&set, SIGTERM), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("signals");
	TCase *tc = tcase_create("stop");
	tcase_add_test(tc, blocks_and_waits);
	tcase_add_test(tc, no_extra);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
