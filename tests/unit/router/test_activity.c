/*
 * test_activity.c - unit tests of cmd/router/activity.c: the publication
 * rule (due, not due, another replica wrote, the first activity after a
 * quiet time), the table (in-flight exchanges keep a Sandbox active, a
 * publication makes it clean, idle clean entries are evicted, a 404 drops
 * one, the bound), a steady request stream over simulated minutes written
 * once per interval by one replica and by two that share the annotation,
 * and the merge patch bodies.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/common.h"
#include "activity.h"

#define SEC 1000LL
#define T0 1767323045000LL   /* 2026-01-02T03:04:05Z */

START_TEST(due_rule)
{
	const int64_t iv = 10 * SEC;
	/* no activity since the last publication: never due */
	ck_assert(!rt_activity_due(T0, T0, iv, T0 + 60 * SEC));
	ck_assert(!rt_activity_due(0, 0, iv, T0));
	/* activity after it, but the publication is recent */
	ck_assert(!rt_activity_due(T0 + 1 * SEC, T0, iv, T0 + 9 * SEC));
	/* ... until it is an interval old */
	ck_assert(rt_activity_due(T0 + 1 * SEC, T0, iv, T0 + 10 * SEC));
	ck_assert(rt_activity_due(T0 + 1 * SEC, T0, iv, T0 + 30 * SEC));
	/* nothing published yet: the first activity is due at once */
	ck_assert(rt_activity_due(T0, 0, iv, T0));
	/* another replica wrote after our activity: covered */
	ck_assert(!rt_activity_due(T0 + 5 * SEC, T0 + 6 * SEC, iv, T0 + 20 * SEC));
	/* ... and its write restarts the interval for new activity */
	ck_assert(!rt_activity_due(T0 + 7 * SEC, T0 + 6 * SEC, iv, T0 + 15 * SEC));
	ck_assert(rt_activity_due(T0 + 7 * SEC, T0 + 6 * SEC, iv, T0 + 16 * SEC));
}
END_TEST

/* When activity became due (the publisher's lag is measured from it), and
 * that it agrees with rt_activity_due(). */
START_TEST(due_at)
{
	const int64_t iv = 10 * SEC;
	ck_assert_int_eq(rt_activity_due_at(T0, T0, iv), -1);          /* nothing new */
	ck_assert_int_eq(rt_activity_due_at(0, 0, iv), -1);
	ck_assert_int_eq(rt_activity_due_at(T0, 0, iv), T0);           /* first: at once */
	ck_assert_int_eq(rt_activity_due_at(T0 + 1 * SEC, T0, iv), T0 + iv);  /* interval */
	ck_assert_int_eq(rt_activity_due_at(T0 + 30 * SEC, T0, iv), T0 + 30 * SEC);
	static const int64_t acts[] = { 0, T0 - SEC, T0, T0 + 1, T0 + 5 * SEC, T0 + 20 * SEC };
	for (size_t a = 0; a < sizeof(acts) / sizeof(acts[0]); a++)
		for (int64_t now = T0 - SEC; now <= T0 + 40 * SEC; now += 500) {
			int64_t d = rt_activity_due_at(acts[a], T0, iv);
			bool due = acts[a] <= now && rt_activity_due(acts[a], T0, iv, now);
			ck_assert_int_eq(due, d >= 0 && now >= d);
		}
}
END_TEST

static size_t collect(rt_activity *a, int64_t now, rt_activity_candidate *c, size_t cap)
{
	memset(c, 0, cap * sizeof(*c));
	return rt_activity_collect(a, now, c, cap);
}

START_TEST(table_in_flight_and_publication)
{
	rt_activity *a;
	ck_assert_int_eq(rt_activity_new(&a, 0), 0);
	rt_activity_candidate c[4];
	ck_assert_int_eq(rt_activity_begin(a, "team", "alpha", 30 * SEC, T0), 0);
	ck_assert_int_eq(rt_activity_begin(a, "team", "alpha", 30 * SEC, T0 + 100), 0);
	ck_assert_int_eq(rt_activity_inflight(a, "team", "alpha"), 2);
	ck_assert_int_eq(rt_activity_count(a), 1);
	/* never published: due at the first tick */
	ck_assert_int_eq(collect(a, T0 + 1 * SEC, c, 4), 1);
	ck_assert_str_eq(c[0].ns, "team");
	ck_assert_str_eq(c[0].name, "alpha");
	ck_assert_int_eq(c[0].inflight, 2);
	ck_assert_int_eq(c[0].last_activity_ms, T0 + 1 * SEC);  /* in flight: now */
	ck_assert_int_eq(c[0].published_ms, 0);
	rt_activity_published(a, "team", "alpha", T0 + 1 * SEC);
	/* written: not due again within the interval (30 s / 4 -> 10 s floor) */
	for (int s = 2; s < 11; s++)
		ck_assert_msg(collect(a, T0 + s * SEC, c, 4) == 0, "due at %d s", s);
	/* still in flight an interval later: in use all along, due again */
	ck_assert_int_eq(collect(a, T0 + 11 * SEC, c, 4), 1);
	ck_assert_int_eq(c[0].last_activity_ms, T0 + 11 * SEC);
	rt_activity_published(a, "team", "alpha", T0 + 11 * SEC);
	/* an older publication (a stale annotation) changes nothing */
	rt_activity_published(a, "team", "alpha", T0);
	ck_assert_int_eq(collect(a, T0 + 12 * SEC, c, 4), 0);
	/* both exchanges end: activity at their end, then due after the interval */
	rt_activity_end(a, "team", "alpha", T0 + 12 * SEC);
	rt_activity_end(a, "team", "alpha", T0 + 13 * SEC);
	rt_activity_end(a, "team", "alpha", T0 + 13 * SEC);  /* one too many: ignored */
	ck_assert_int_eq(rt_activity_inflight(a, "team", "alpha"), 0);
	ck_assert_int_eq(collect(a, T0 + 20 * SEC, c, 4), 0);
	ck_assert_int_eq(collect(a, T0 + 21 * SEC, c, 4), 1);
	ck_assert_int_eq(c[0].last_activity_ms, T0 + 13 * SEC);
	rt_activity_published(a, "team", "alpha", T0 + 21 * SEC);
	/* clean and idle for an interval: evicted */
	ck_assert_int_eq(collect(a, T0 + 22 * SEC, c, 4), 0);
	ck_assert_int_eq(rt_activity_count(a), 1);
	ck_assert_int_eq(collect(a, T0 + 23 * SEC, c, 4), 0);
	ck_assert_int_eq(rt_activity_count(a), 0);
	/* the end of an exchange of an evicted (or dropped) entry: nothing */
	rt_activity_end(a, "team", "alpha", T0 + 24 * SEC);
	ck_assert_int_eq(rt_activity_count(a), 0);
	rt_activity_free(a);
}
END_TEST

START_TEST(table_eviction_and_forget)
{
	rt_activity *a;
	ck_assert_int_eq(rt_activity_new(&a, 0), 0);
	rt_activity_candidate c[4];
	/* an open tunnel is never evicted, however long */
	ck_assert_int_eq(rt_activity_begin(a, "team", "tunnel", 30 * SEC, T0), 0);
	for (int s = 1; s < 300; s += 7) {
		size_t n = collect(a, T0 + s * SEC, c, 4);
		if (n)
			rt_activity_published(a, "team", "tunnel", T0 + s * SEC);
	}
	ck_assert_int_eq(rt_activity_count(a), 1);
	/* dirty (not yet published) entries are not evicted either */
	ck_assert_int_eq(rt_activity_begin(a, "team", "dirty", 30 * SEC, T0), 0);
	rt_activity_end(a, "team", "dirty", T0);
	ck_assert_int_eq(collect(a, T0 + 600 * SEC, c, 4), 2);
	ck_assert_int_eq(rt_activity_count(a), 2);
	/* the Sandbox lost its policy: forgotten, but not with exchanges open */
	rt_activity_forget(a, "team", "dirty", true);
	rt_activity_forget(a, "team", "tunnel", true);
	ck_assert_int_eq(rt_activity_count(a), 1);
	ck_assert_int_eq(rt_activity_inflight(a, "team", "tunnel"), 1);
	/* a 404: dropped even then */
	rt_activity_forget(a, "team", "tunnel", false);
	ck_assert_int_eq(rt_activity_count(a), 0);
	rt_activity_end(a, "team", "tunnel", T0 + 601 * SEC);
	ck_assert_int_eq(rt_activity_count(a), 0);
	/* forgetting what is not there is fine */
	rt_activity_forget(a, "team", "nobody", false);
	rt_activity_published(a, "team", "nobody", T0);
	rt_activity_free(a);
}
END_TEST

START_TEST(table_bounds)
{
	rt_activity *a;
	ck_assert_int_eq(rt_activity_new(&a, 3), 0);
	char name[16];
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "sb-%d", i);
		ck_assert_int_eq(rt_activity_begin(a, "team", name, 30 * SEC, T0), 0);
	}
	/* full: a new Sandbox is not tracked, known ones still are */
	ck_assert_int_eq(rt_activity_begin(a, "team", "sb-3", 30 * SEC, T0), ASB_ETOOLARGE);
	ck_assert_int_eq(rt_activity_begin(a, "team", "sb-0", 30 * SEC, T0), 0);
	ck_assert_int_eq(rt_activity_count(a), 3);
	/* room comes back once entries are published, idle and evicted */
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "sb-%d", i);
		rt_activity_end(a, "team", name, T0);
		rt_activity_published(a, "team", name, T0 + 1);
	}
	rt_activity_end(a, "team", "sb-0", T0);
	rt_activity_candidate c[4];
	ck_assert_int_eq(collect(a, T0 + 10 * SEC, c, 4), 0);
	ck_assert_int_eq(rt_activity_count(a), 0);
	ck_assert_int_eq(rt_activity_begin(a, "team", "sb-3", 30 * SEC, T0), 0);
	/* names the contract would never pass */
	char long_name[80];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	ck_assert_int_eq(rt_activity_begin(a, "team", long_name, 30 * SEC, T0), ASB_EINVAL);
	ck_assert_int_eq(rt_activity_begin(a, long_name, "x", 30 * SEC, T0), ASB_EINVAL);
	ck_assert_int_eq(rt_activity_begin(a, "", "x", 30 * SEC, T0), ASB_EINVAL);
	ck_assert_int_eq(rt_activity_begin(a, "team", NULL, 30 * SEC, T0), ASB_EINVAL);
	/* candidates past the cap stay due for the next tick */
	rt_activity_free(a);
	ck_assert_int_eq(rt_activity_new(&a, 0), 0);
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "sb-%d", i);
		ck_assert_int_eq(rt_activity_begin(a, "team", name, 30 * SEC, T0), 0);
		rt_activity_end(a, "team", name, T0);
	}
	size_t n = collect(a, T0 + SEC, c, 4);
	ck_assert_int_eq(n, 4);
	for (size_t i = 0; i < n; i++)
		rt_activity_published(a, c[i].ns, c[i].name, T0 + SEC);
	ck_assert_int_eq(collect(a, T0 + 2 * SEC, c, 4), 2);
	rt_activity_free(a);
	rt_activity_free(NULL);
}
END_TEST

/* A replica: its table and what the Sandbox cache shows it. */
typedef struct {
	rt_activity *a;
	int writes;
} replica;

/* One publisher tick of replica `r` at `now`, as idlesync.c does it,
 * against the shared annotation `*ann` (0: none), which a write sets. */
static void replica_tick(replica *r, int64_t *ann, int64_t timeout_ms, int64_t now)
{
	rt_activity_candidate c[8];
	size_t n = rt_activity_collect(r->a, now, c, 8);
	for (size_t i = 0; i < n; i++) {
		int64_t published = c[i].published_ms;
		if (*ann > published) {
			published = *ann;
			rt_activity_published(r->a, c[i].ns, c[i].name, published);
		}
		int64_t iv = timeout_ms / 4 > 10 * SEC ? timeout_ms / 4 : 10 * SEC;
		if (!rt_activity_due(c[i].last_activity_ms, published, iv, now))
			continue;
		r->writes++;
		*ann = now;
		rt_activity_published(r->a, c[i].ns, c[i].name, now);
	}
}

/* A steady stream (a request every 100 ms for 10 minutes) to a Sandbox
 * with a 30 s timeout: one write per 10 s interval, and the published
 * activity never older than the interval plus a tick. Two replicas
 * sharing the stream coalesce to the same count. */
START_TEST(steady_stream_one_write_per_interval)
{
	const int64_t timeout = 30 * SEC, span = 600 * SEC;
	for (int nrep = 1; nrep <= 2; nrep++) {
		replica reps[2] = { { 0 } };
		for (int i = 0; i < nrep; i++)
			ck_assert_int_eq(rt_activity_new(&reps[i].a, 0), 0);
		int64_t ann = 0, worst_lag = 0;
		for (int64_t t = 0; t <= span; t += 100) {
			replica *r = &reps[(t / 100) % nrep];   /* requests spread over replicas */
			ck_assert_int_eq(rt_activity_begin(r->a, "team", "busy", timeout, T0 + t), 0);
			rt_activity_end(r->a, "team", "busy", T0 + t + 50);
			for (int i = 0; i < nrep; i++) {
				/* ticks once a second, the second replica half a second later */
				if ((t - i * 500) % 1000 == 0 && t >= i * 500)
					replica_tick(&reps[i], &ann, timeout, T0 + t);
			}
			if (ann && T0 + t - ann > worst_lag)
				worst_lag = T0 + t - ann;
		}
		int writes = 0;
		for (int i = 0; i < nrep; i++)
			writes += reps[i].writes;
		/* 600 s / 10 s, plus the first one */
		ck_assert_msg(writes >= 60 && writes <= 61, "%d replicas: %d writes", nrep, writes);
		ck_assert_msg(worst_lag <= 11 * SEC, "published activity lagged %lld ms",
		              (long long)worst_lag);
		for (int i = 0; i < nrep; i++)
			rt_activity_free(reps[i].a);
	}
}
END_TEST

/* Another replica's recent write: this one skips; an old one: it writes. */
START_TEST(other_replica_wrote)
{
	replica r = { 0 };
	ck_assert_int_eq(rt_activity_new(&r.a, 0), 0);
	int64_t ann = T0 - 3 * SEC;   /* written by another replica 3 s ago */
	ck_assert_int_eq(rt_activity_begin(r.a, "team", "shared", 60 * SEC, T0 - 5 * SEC), 0);
	rt_activity_end(r.a, "team", "shared", T0 - 4 * SEC);
	replica_tick(&r, &ann, 60 * SEC, T0);
	ck_assert_int_eq(r.writes, 0);   /* its write covers this activity */
	ck_assert_int_eq(rt_activity_begin(r.a, "team", "shared", 60 * SEC, T0 + SEC), 0);
	rt_activity_end(r.a, "team", "shared", T0 + SEC);
	replica_tick(&r, &ann, 60 * SEC, T0 + 5 * SEC);
	ck_assert_int_eq(r.writes, 0);   /* newer activity, but within its 15 s */
	replica_tick(&r, &ann, 60 * SEC, T0 + 12 * SEC);
	ck_assert_int_eq(r.writes, 1);
	ck_assert_int_eq(ann, T0 + 12 * SEC);
	rt_activity_free(r.a);
}
END_TEST

START_TEST(patch_bodies)
{
	cJSON *p = rt_activity_patch(T0 + 999);
	char *s = cJSON_PrintUnformatted(p);
	ck_assert_str_eq(s, "{\"metadata\":{\"annotations\":"
	                    "{\"agents.x-k8s.io/last-activity\":\"2026-01-02T03:04:05Z\"}}}");
	cJSON_free(s);
	cJSON_Delete(p);
	p = rt_resume_patch(T0);
	s = cJSON_PrintUnformatted(p);
	ck_assert_str_eq(s, "{\"metadata\":{\"annotations\":"
	                    "{\"agents.x-k8s.io/last-activity\":\"2026-01-02T03:04:05Z\","
	                    "\"agents.x-k8s.io/idle-suspended-at\":null}},"
	                    "\"spec\":{\"operatingMode\":\"Running\"}}");
	cJSON_free(s);
	cJSON_Delete(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("activity");
	TCase *tc = tcase_create("activity");
	tcase_add_test(tc, due_rule);
	tcase_add_test(tc, due_at);
	tcase_add_test(tc, table_in_flight_and_publication);
	tcase_add_test(tc, table_eviction_and_forget);
	tcase_add_test(tc, table_bounds);
	tcase_add_test(tc, steady_stream_one_write_per_interval);
	tcase_add_test(tc, other_replica_wrote);
	tcase_add_test(tc, patch_bodies);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
