/*
 * test_resume.c - unit tests of cmd/router/resume.c with a resume function
 * that blocks until the test opens a gate and a clock the test moves:
 * concurrent requests for one Sandbox send one patch (single flight),
 * none is sent again while the cache catches up with a success (settle
 * time), a failure is tried again only after the retry time, different
 * Sandboxes resume side by side, the bound on Sandboxes tracked holds
 * (and frees up as their quiet time ends), and stopping drops what is
 * queued.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "asb/common.h"
#include "resume.h"

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	int calls;          /* resume function calls */
	int done;           /* returned */
	int running;
	int rc;             /* what the next calls return */
	char last[128];
} world;

static world W;
static _Atomic int64_t now_ms;

static int64_t fake_clock(void)
{
	return atomic_load(&now_ms);
}

static void world_init(bool open)
{
	memset(&W, 0, sizeof(W));
	pthread_mutex_init(&W.lock, NULL);
	pthread_cond_init(&W.cond, NULL);
	W.open = open;
	atomic_store(&now_ms, 1000000);
}

static int gated_resume(void *ud, const char *ns, const char *name)
{
	pthread_mutex_lock(&W.lock);
	W.calls++;
	W.running++;
	snprintf(W.last, sizeof(W.last), "%s/%s", ns, name);
	pthread_cond_broadcast(&W.cond);
	while (!W.open)
		pthread_cond_wait(&W.cond, &W.lock);
	W.running--;
	W.done++;
	int rc = W.rc;
	pthread_cond_broadcast(&W.cond);
	pthread_mutex_unlock(&W.lock);
	return rc;
}

static void wait_count(int *field, int n)
{
	pthread_mutex_lock(&W.lock);
	while (*field < n)
		pthread_cond_wait(&W.cond, &W.lock);
	pthread_mutex_unlock(&W.lock);
}

static void set_gate(bool open)
{
	pthread_mutex_lock(&W.lock);
	W.open = open;
	pthread_cond_broadcast(&W.cond);
	pthread_mutex_unlock(&W.lock);
}

/* Waits until the queue has nothing queued or running. */
static void wait_idle(rt_resumeq *q)
{
	while (rt_resumeq_pending(q) > 0) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

static rt_resumeq *new_queue(int workers, int max_pending)
{
	rt_resumeq_options o = { .resume = gated_resume, .clock = fake_clock, .workers = workers,
	                         .max_pending = max_pending, .settle_ms = 10000, .retry_ms = 1000 };
	rt_resumeq *q;
	ck_assert_int_eq(rt_resumeq_new(&q, &o), 0);
	return q;
}

typedef struct {
	rt_resumeq *q;
	int rc;
} asker;

static void *ask(void *ud)
{
	asker *a = ud;
	a->rc = rt_resumeq_request(a->q, "team", "napper", NULL);
	return NULL;
}

START_TEST(single_flight)
{
	world_init(false);
	rt_resumeq *q = new_queue(2, 16);
	/* 16 requests at once: one patch */
	pthread_t th[16];
	asker as[16];
	for (int i = 0; i < 16; i++) {
		as[i] = (asker){ q, -100 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, ask, &as[i]), 0);
	}
	for (int i = 0; i < 16; i++)
		pthread_join(th[i], NULL);
	int queued = 0, shared = 0;
	for (int i = 0; i < 16; i++) {
		queued += as[i].rc == RT_RESUME_QUEUED;
		shared += as[i].rc == RT_RESUME_SHARED;
	}
	ck_assert_int_eq(queued, 1);
	ck_assert_int_eq(shared, 15);
	wait_count(&W.calls, 1);
	ck_assert_str_eq(W.last, "team/napper");
	ck_assert_int_eq(rt_resumeq_pending(q), 1);
	/* running: still shared */
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", NULL), RT_RESUME_SHARED);
	set_gate(true);
	wait_idle(q);
	/* succeeded: nothing sent while the cache catches up */
	int last = -1;
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", &last), RT_RESUME_SETTLING);
	ck_assert_int_eq(last, 0);
	atomic_fetch_add(&now_ms, 9999);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", NULL), RT_RESUME_SETTLING);
	ck_assert_int_eq(W.calls, 1);
	/* settled and still asked for (suspended again later): a new patch */
	atomic_fetch_add(&now_ms, 1);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", NULL), RT_RESUME_QUEUED);
	wait_count(&W.done, 2);
	ck_assert_int_eq(W.calls, 2);
	wait_idle(q);
	rt_resumeq_free(q);
}
END_TEST

START_TEST(failure_retried_after_a_while)
{
	world_init(true);
	W.rc = ASB_EFORBIDDEN;
	rt_resumeq *q = new_queue(1, 16);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", NULL), RT_RESUME_QUEUED);
	wait_count(&W.done, 1);
	wait_idle(q);
	int last = 0;
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", &last), RT_RESUME_BACKOFF);
	ck_assert_int_eq(last, ASB_EFORBIDDEN);
	atomic_fetch_add(&now_ms, 999);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", NULL), RT_RESUME_BACKOFF);
	atomic_fetch_add(&now_ms, 1);
	W.rc = 0;
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", &last), RT_RESUME_QUEUED);
	ck_assert_int_eq(last, ASB_EFORBIDDEN);   /* the latest finished one, still */
	wait_count(&W.done, 2);
	wait_idle(q);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "napper", &last), RT_RESUME_SETTLING);
	ck_assert_int_eq(last, 0);
	ck_assert_int_eq(W.calls, 2);
	/* a Sandbox gone: reported as such */
	W.rc = ASB_ENOTFOUND;
	ck_assert_int_eq(rt_resumeq_request(q, "team", "gone", NULL), RT_RESUME_QUEUED);
	wait_count(&W.done, 3);
	wait_idle(q);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "gone", &last), RT_RESUME_BACKOFF);
	ck_assert_int_eq(last, ASB_ENOTFOUND);
	rt_resumeq_free(q);
}
END_TEST

START_TEST(bounded_and_side_by_side)
{
	world_init(false);
	rt_resumeq *q = new_queue(2, 3);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "a", NULL), RT_RESUME_QUEUED);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "b", NULL), RT_RESUME_QUEUED);
	ck_assert_int_eq(rt_resumeq_request(q, "other", "a", NULL), RT_RESUME_QUEUED);
	/* two run at once on two threads */
	wait_count(&W.running, 2);
	/* a fourth Sandbox: refused for now, the known ones still shared */
	ck_assert_int_eq(rt_resumeq_request(q, "team", "d", NULL), ASB_ESERVICEUNAVAILABLE);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "a", NULL), RT_RESUME_SHARED);
	set_gate(true);
	wait_count(&W.done, 3);
	wait_idle(q);
	/* finished but settling: still counted */
	ck_assert_int_eq(rt_resumeq_request(q, "team", "d", NULL), ASB_ESERVICEUNAVAILABLE);
	/* their settle time over: swept to make room */
	atomic_fetch_add(&now_ms, 10000);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "d", NULL), RT_RESUME_QUEUED);
	wait_count(&W.done, 4);
	/* names the contract would never pass */
	char long_name[80];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	ck_assert_int_eq(rt_resumeq_request(q, "team", long_name, NULL), ASB_EINVAL);
	ck_assert_int_eq(rt_resumeq_request(q, "", "a", NULL), ASB_EINVAL);
	ck_assert_int_eq(rt_resumeq_request(q, "team", NULL, NULL), ASB_EINVAL);
	rt_resumeq_free(q);
}
END_TEST

static void *open_when_dropped(void *ud)
{
	while (rt_resumeq_pending(ud) > 1) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	set_gate(true);
	return NULL;
}

START_TEST(stop_drops_queued)
{
	world_init(false);
	rt_resumeq *q = new_queue(1, 16);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "a", NULL), RT_RESUME_QUEUED);
	wait_count(&W.running, 1);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "b", NULL), RT_RESUME_QUEUED);
	ck_assert_int_eq(rt_resumeq_request(q, "team", "c", NULL), RT_RESUME_QUEUED);
	ck_assert_int_eq(rt_resumeq_pending(q), 3);
	/* free drops the queued two, then waits for the running one, whose
	 * gate another thread opens once they are dropped */
	pthread_t opener;
	ck_assert_int_eq(pthread_create(&opener, NULL, open_when_dropped, q), 0);
	rt_resumeq_free(q);
	pthread_join(opener, NULL);
	ck_assert_int_eq(W.calls, 1);
	rt_resumeq_free(NULL);
}
END_TEST

START_TEST(invalid_options)
{
	rt_resumeq *q = NULL;
	rt_resumeq_options o = { .resume = gated_resume, .workers = 0, .max_pending = 1 };
	ck_assert_int_eq(rt_resumeq_new(&q, &o), ASB_EINVAL);
	o.workers = 1;
	o.max_pending = 0;
	ck_assert_int_eq(rt_resumeq_new(&q, &o), ASB_EINVAL);
	o.max_pending = 1;
	o.retry_ms = -1;
	ck_assert_int_eq(rt_resumeq_new(&q, &o), ASB_EINVAL);
	o.retry_ms = 0;
	o.resume = NULL;
	ck_assert_int_eq(rt_resumeq_new(&q, &o), ASB_EINVAL);
	ck_assert_ptr_null(q);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("resume");
	TCase *tc = tcase_create("resume");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, single_flight);
	tcase_add_test(tc, failure_retried_after_a_while);
	tcase_add_test(tc, bounded_and_side_by_side);
	tcase_add_test(tc, stop_drops_queued);
	tcase_add_test(tc, invalid_options);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
