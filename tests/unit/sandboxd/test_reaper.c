/*
 * test_reaper.c - unit tests of cmd/sandboxd/reaper.c: an ended child that
 * is not claimed is reaped, a claimed one is left to its owner with its
 * exit status; with the watching thread, the processes of proc.c keep
 * their exit codes while orphans handed to the test (a child subreaper,
 * as PID 1 is) are reaped on SIGCHLD.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "asb/common.h"
#include "proc.h"
#include "reaper.h"

/* Blocks until `pid` has exited, without reaping it. */
static void wait_ended(pid_t pid)
{
	siginfo_t si;
	ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
}

START_TEST(claimed_left_unclaimed_reaped)
{
	sbxd_reaper *r;
	ck_assert_int_eq(sbxd_reaper_new(&r, false), 0);
	sbxd_reaper_lock(r);
	pid_t mine = fork();
	if (mine == 0)
		_exit(5);
	ck_assert_int_gt(mine, 0);
	ck_assert_int_eq(sbxd_reaper_claim_locked(r, mine), 0);
	sbxd_reaper_unlock(r);
	pid_t orphan = fork();
	if (orphan == 0)
		_exit(0);
	wait_ended(mine);
	wait_ended(orphan);
	ck_assert_int_eq(sbxd_reaper_reap(r), 1);
	ck_assert_int_eq(waitpid(orphan, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	int st = 0;
	ck_assert_int_eq(waitpid(mine, &st, WNOHANG), mine);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 5);
	sbxd_reaper_release(r, mine);
	sbxd_reaper_release(r, mine);  /* not claimed any more: a no-op */
	ck_assert_int_eq(sbxd_reaper_reap(r), 0);
	sbxd_reaper_free(r);
}
END_TEST

typedef struct {
	bool exited;
	sbxd_exit ex;
} run_state;

static void on_exit_cb(sbxd_proc *p, const sbxd_exit *ex, void *ud)
{
	run_state *st = ud;
	st->exited = true;
	st->ex = *ex;
}

static const sbxd_proc_callbacks cbs = { NULL, on_exit_cb, NULL };

/* Children of this process, zombies included (/proc). */
static int children(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int n = 0;
	long pid;
	while (fscanf(f, "%ld", &pid) == 1)
		n++;
	fclose(f);
	return n;
}

START_TEST(watching_keeps_exit_codes_reaps_orphans)
{
	/* orphans come to us, as they come to PID 1 */
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	sbxd_reaper *r;
	ck_assert_int_eq(sbxd_reaper_new(&r, true), 0);
	uv_loop_t loop;
	uv_loop_init(&loop);
	sbxd_keeper_pool *pool;
	ck_assert_int_eq(sbxd_keeper_pool_new(&pool, &loop, 4, r), 0);
	for (int i = 0; i < 5; i++) {
		char script[96];
		snprintf(script, sizeof(script), "sleep 0.05 >/dev/null 2>&1 & exit %d", 10 + i);
		char *argv[] = { "/bin/sh", "-c", script, NULL };
		sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
		o.argv = argv;
		o.keepers = pool;
		run_state st = { 0 };
		sbxd_proc *p;
		ck_assert_int_eq(sbxd_proc_spawn(&p, &loop, &o, &cbs, &st), 0);
		while (!st.exited)
			uv_run(&loop, UV_RUN_ONCE);
		ck_assert_int_eq(st.ex.exit_code, 10 + i);
		sbxd_proc_free(p);
		uv_run(&loop, UV_RUN_DEFAULT);
	}
	/* each keeper kept a sleep, so it exited instead of waiting for a
	 * next job: the pool reaps it, the reaper's thread leaves it alone */
	ck_assert_uint_eq(sbxd_keeper_pool_forked(pool), 5);
	sbxd_keeper_pool_free(pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	/* the sleeps end, and the reaper's thread waits for them */
	int left = -1;
	for (int i = 0; i < 200 && (left = children()) != 0; i++) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	ck_assert_int_eq(left, 0);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	sbxd_reaper_free(r);
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sandboxd_reaper");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, claimed_left_unclaimed_reaped);
	tcase_add_test(tc, watching_keeps_exit_codes_reaps_orphans);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
