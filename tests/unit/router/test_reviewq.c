/*
 * test_reviewq.c - unit tests of cmd/router/reviewq.c with a review
 * function that blocks until the test opens a gate: the queue's bounds
 * (total and per client) hold while reviews are stuck, the same question
 * is asked once, a review nobody waits for any more is not sent, and
 * stopping answers the queued ones.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/common.h"
#include "reviewq.h"

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	int reviews;       /* review function calls */
	int running;       /* inside it now */
	int answers;       /* callbacks */
	char order[16][32];  /* Authorization values in the order reviewed */
	int errors;        /* of which RT_VERDICT_ERROR */
	char last_error[256];
} world;

static world W;

static void world_init(void)
{
	memset(&W, 0, sizeof(W));
	pthread_mutex_init(&W.lock, NULL);
	pthread_cond_init(&W.cond, NULL);
}

static rt_verdict gated_review(void *ud, const char *auth, const char *ns, const char *id,
                               char *detail, size_t cap)
{
	pthread_mutex_lock(&W.lock);
	if (W.reviews < 16)
		snprintf(W.order[W.reviews], sizeof(W.order[0]), "%s", auth);
	W.reviews++;
	W.running++;
	pthread_cond_broadcast(&W.cond);
	while (!W.open)
		pthread_cond_wait(&W.cond, &W.lock);
	W.running--;
	pthread_mutex_unlock(&W.lock);
	return strstr(auth, "good") ? RT_VERDICT_ALLOW : RT_VERDICT_UNAUTHENTICATED;
}

static void answered(rt_verdict v, const char *detail, void *ud)
{
	pthread_mutex_lock(&W.lock);
	W.answers++;
	if (v == RT_VERDICT_ERROR) {
		W.errors++;
		snprintf(W.last_error, sizeof(W.last_error), "%s", detail);
	}
	if (ud)
		*(rt_verdict *)ud = v;
	pthread_cond_broadcast(&W.cond);
	pthread_mutex_unlock(&W.lock);
}

/* Waits until `*field` reaches `n`. */
static void wait_count(int *field, int n)
{
	pthread_mutex_lock(&W.lock);
	while (*field < n)
		pthread_cond_wait(&W.cond, &W.lock);
	pthread_mutex_unlock(&W.lock);
}

static void open_gate(void)
{
	pthread_mutex_lock(&W.lock);
	W.open = true;
	pthread_cond_broadcast(&W.cond);
	pthread_mutex_unlock(&W.lock);
}

static rt_reviewq *queue(int workers, int max_pending, int per_client)
{
	rt_reviewq_options o = { .review = gated_review, .workers = workers,
	                         .max_pending = max_pending, .max_per_client = per_client };
	rt_reviewq *q = NULL;
	ck_assert_int_eq(rt_reviewq_new(&q, &o), 0);
	return q;
}

START_TEST(bounds_hold_while_reviews_are_stuck)
{
	world_init();
	rt_reviewq *q = queue(2, 5, 3);
	char auth[32];
	/* client a: three reviews, the fourth is over its share */
	for (int i = 0; i < 3; i++) {
		snprintf(auth, sizeof(auth), "Bearer a%d", i);
		ck_assert_int_eq(rt_reviewq_submit(q, auth, "ns", "sb", "10.0.0.1", NULL, answered, NULL), 0);
	}
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer a3", "ns", "sb", "10.0.0.1", NULL, answered, NULL),
	                 ASB_ETOOMANYREQUESTS);
	/* client b fills the queue; then nobody gets in */
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer b0", "ns", "sb", "10.0.0.2", NULL, answered, NULL), 0);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer b1", "ns", "sb", "10.0.0.2", NULL, answered, NULL), 0);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer c0", "ns", "sb", "10.0.0.3", NULL, answered, NULL),
	                 ASB_ESERVICEUNAVAILABLE);
	/* but the same question as a pending one shares its answer */
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer a1", "ns", "sb", "10.0.0.3", NULL, answered, NULL), 0);
	ck_assert_int_eq(rt_reviewq_pending(q), 5);
	wait_count(&W.running, 2);   /* both workers are stuck */
	ck_assert_int_eq(W.answers, 0);
	open_gate();
	wait_count(&W.answers, 6);
	ck_assert_int_eq(W.reviews, 5);
	ck_assert_int_eq(W.errors, 0);
	ck_assert_int_eq(rt_reviewq_pending(q), 0);
	/* room again */
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer good", "ns", "sb", "10.0.0.1", NULL, answered, NULL), 0);
	wait_count(&W.answers, 7);
	rt_reviewq_free(q);
}
END_TEST

/* One worker, stuck on client a's first review while a queues three more
 * and b asks once: b's review runs second, not after all of a's. */
START_TEST(clients_take_turns)
{
	world_init();
	rt_reviewq *q = queue(1, 16, 0);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer a0", "ns", "sb", "10.0.0.1", NULL, answered, NULL), 0);
	wait_count(&W.running, 1);
	for (int i = 1; i < 4; i++) {
		char auth[32];
		snprintf(auth, sizeof(auth), "Bearer a%d", i);
		ck_assert_int_eq(rt_reviewq_submit(q, auth, "ns", "sb", "10.0.0.1", NULL, answered, NULL), 0);
	}
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer b0", "ns", "sb", "10.0.0.2", NULL, answered, NULL), 0);
	open_gate();
	wait_count(&W.answers, 5);
	ck_assert_str_eq(W.order[0], "Bearer a0");
	ck_assert_str_eq(W.order[1], "Bearer b0");
	ck_assert_str_eq(W.order[2], "Bearer a1");
	ck_assert_str_eq(W.order[4], "Bearer a3");
	rt_reviewq_free(q);
}
END_TEST

/* An IPv6 client is counted by its /64 (one host may hold all of it), a
 * v4-mapped one as its IPv4 address. */
START_TEST(ipv6_clients_counted_by_prefix)
{
	world_init();
	rt_reviewq *q = queue(1, 16, 2);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer x0", "ns", "sb", "2001:db8:1:2::1", NULL, answered, NULL), 0);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer x1", "ns", "sb", "2001:db8:1:2:ffff::9", NULL, answered, NULL), 0);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer x2", "ns", "sb", "2001:db8:1:2:a:b:c:d", NULL, answered, NULL),
	                 ASB_ETOOMANYREQUESTS);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer y0", "ns", "sb", "2001:db8:1:3::1", NULL, answered, NULL), 0);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer z0", "ns", "sb", "10.1.1.1", NULL, answered, NULL), 0);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer z1", "ns", "sb", "::ffff:10.1.1.1", NULL, answered, NULL), 0);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer z2", "ns", "sb", "10.1.1.1", NULL, answered, NULL),
	                 ASB_ETOOMANYREQUESTS);
	open_gate();
	wait_count(&W.answers, 5);
	rt_reviewq_free(q);
}
END_TEST

START_TEST(a_review_nobody_waits_for_is_not_sent)
{
	world_init();
	rt_reviewq *q = queue(1, 8, 0);
	atomic_bool stays, gone;
	atomic_init(&stays, false);
	atomic_init(&gone, false);
	rt_verdict first = -1, second = -1;
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer good1", "ns", "a", "c", &stays, answered, &first), 0);
	wait_count(&W.running, 1);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer good2", "ns", "b", "c", &gone, answered, &second), 0);
	atomic_store(&gone, true);   /* its client disconnected while it waited */
	open_gate();
	wait_count(&W.answers, 2);
	ck_assert_int_eq(W.reviews, 1);
	ck_assert_int_eq(first, RT_VERDICT_ALLOW);
	ck_assert_int_eq(second, RT_VERDICT_ERROR);
	ck_assert_str_eq(W.last_error, "tokenreview: client gone");
	rt_reviewq_free(q);
}
END_TEST

static void *free_queue(void *q)
{
	rt_reviewq_free(q);
	return NULL;
}

START_TEST(stopping_answers_the_queued_reviews)
{
	world_init();
	rt_reviewq *q = queue(1, 8, 0);
	rt_verdict running = -1, queued = -1;
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer good", "ns", "a", "c", NULL, answered, &running), 0);
	wait_count(&W.running, 1);
	ck_assert_int_eq(rt_reviewq_submit(q, "Bearer good", "ns", "b", "c", NULL, answered, &queued), 0);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, free_queue, q), 0);
	wait_count(&W.answers, 1);   /* the queued one, at once */
	ck_assert_int_eq(queued, RT_VERDICT_ERROR);
	ck_assert_str_eq(W.last_error, "tokenreview: shutting down");
	open_gate();                 /* the running one finishes, then the threads end */
	pthread_join(t, NULL);
	ck_assert_int_eq(running, RT_VERDICT_ALLOW);
	ck_assert_int_eq(W.reviews, 1);
}
END_TEST

START_TEST(options_checked)
{
	rt_reviewq *q = NULL;
	rt_reviewq_options o = { .review = gated_review, .workers = 0, .max_pending = 1 };
	ck_assert_int_eq(rt_reviewq_new(&q, &o), ASB_EINVAL);
	o.workers = 1;
	o.max_pending = 0;
	ck_assert_int_eq(rt_reviewq_new(&q, &o), ASB_EINVAL);
	o.max_pending = 1;
	o.review = NULL;
	ck_assert_int_eq(rt_reviewq_new(&q, &o), ASB_EINVAL);
	rt_reviewq_free(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reviewq");
	TCase *tc = tcase_create("reviewq");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, bounds_hold_while_reviews_are_stuck);
	tcase_add_test(tc, clients_take_turns);
	tcase_add_test(tc, ipv6_clients_counted_by_prefix);
	tcase_add_test(tc, a_review_nobody_waits_for_is_not_sent);
	tcase_add_test(tc, stopping_answers_the_queued_reviews);
	tcase_add_test(tc, options_checked);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
