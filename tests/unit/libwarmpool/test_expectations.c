/* Unit tests of libwarmpool/src/expectations.c: the warm pool's
 * expectations bookkeeping (docs/api.md#expectations). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include "expectations.h"
#include "k8s/common.h"
#include "fixture.h"

#define K "ns1/pool"
#define T 300000L

static wp_expectations *e;

static void setup(void) { ck_assert_int_eq(wp_expectations_new(&e, T), 0); }
static void teardown(void) { wp_expectations_free(e); e = NULL; }

START_TEST(new_invalid)
{
	wp_expectations *x = NULL;
	ck_assert_int_eq(wp_expectations_new(NULL, T), ASB_EINVAL);
	ck_assert_int_eq(wp_expectations_new(&x, 0), ASB_EINVAL);
	ck_assert_ptr_null(x);
	wp_expectations_free(NULL);
}
END_TEST

START_TEST(no_record_is_satisfied)
{
	ck_assert(wp_expectations_satisfied(e, K, 0));
	ck_assert_int_eq(wp_expectations_pending_creations(e, K), 0);
	ck_assert(!wp_expectations_deletion_pending(e, K, "u1", 0));
}
END_TEST

START_TEST(creations_gate)
{
	ck_assert(wp_expectations_expect_creations(e, K, 3, 1000));
	ck_assert(!wp_expectations_satisfied(e, K, 1000));
	/* Gate closed: a second batch is refused and changes nothing. */
	ck_assert(!wp_expectations_expect_creations(e, K, 5, 1001));
	ck_assert_int_eq(wp_expectations_pending_creations(e, K), 3);
	wp_expectations_lower_creations(e, K, 1);
	ck_assert_int_eq(wp_expectations_pending_creations(e, K), 2);
	ck_assert(!wp_expectations_satisfied(e, K, 1002));
	/* Failed creates lower in bulk, never below zero. */
	wp_expectations_lower_creations(e, K, 5);
	ck_assert_int_eq(wp_expectations_pending_creations(e, K), 0);
	ck_assert(wp_expectations_satisfied(e, K, 1003));
	/* Other keys are independent. */
	ck_assert(wp_expectations_expect_creations(e, K, 1, 1004));
	ck_assert(wp_expectations_satisfied(e, "ns1/other", 1004));
	/* Lowering an unknown key does nothing. */
	wp_expectations_lower_creations(e, "ns1/other", 1);
	ck_assert_int_eq(wp_expectations_pending_creations(e, "ns1/other"), 0);
	/* Zero creations: a record that is satisfied at once. */
	wp_expectations_lower_creations(e, K, 1);
	ck_assert(wp_expectations_expect_creations(e, K, 0, 1005));
	ck_assert(wp_expectations_satisfied(e, K, 1005));
}
END_TEST

START_TEST(timeout_drops_record)
{
	ck_assert(wp_expectations_expect_creations(e, K, 2, 1000));
	ck_assert(!wp_expectations_satisfied(e, K, 1000 + T));      /* exactly T: not yet */
	ck_assert(wp_expectations_satisfied(e, K, 1000 + T + 1));
	ck_assert_int_eq(wp_expectations_pending_creations(e, K), 0);  /* dropped */
}
END_TEST

START_TEST(deletions)
{
	ck_assert_int_eq(wp_expectations_expect_deletion(e, K, "u1", 1000), 0);
	ck_assert_int_eq(wp_expectations_expect_deletion(e, K, "u2", 1000), 0);
	ck_assert_int_eq(wp_expectations_expect_deletion(e, K, "u1", 1000), 0);  /* set */
	ck_assert(!wp_expectations_satisfied(e, K, 1000));
	ck_assert(wp_expectations_deletion_pending(e, K, "u1", 1000));
	ck_assert(!wp_expectations_deletion_pending(e, K, "u3", 1000));
	ck_assert(!wp_expectations_deletion_pending(e, "ns1/other", "u1", 1000));
	wp_expectations_deletion_observed(e, K, "u1");
	ck_assert(!wp_expectations_deletion_pending(e, K, "u1", 1000));
	ck_assert(!wp_expectations_satisfied(e, K, 1000));
	wp_expectations_deletion_observed(e, K, "u2");
	ck_assert(wp_expectations_satisfied(e, K, 1000));
	/* Unknown uid/key: nothing. */
	wp_expectations_deletion_observed(e, K, "zz");
	wp_expectations_deletion_observed(e, "x/y", "u1");
}
END_TEST

START_TEST(empty_uid_never_recorded)
{
	ck_assert_int_eq(wp_expectations_expect_deletion(e, K, "", 1000), 0);
	ck_assert_int_eq(wp_expectations_expect_deletion(e, K, NULL, 1000), 0);
	ck_assert(wp_expectations_satisfied(e, K, 1000));
	ck_assert(!wp_expectations_deletion_pending(e, K, "", 1000));
}
END_TEST

START_TEST(deletion_refreshes_raise_and_expiry_unmarks)
{
	ck_assert(wp_expectations_expect_creations(e, K, 1, 1000));
	ck_assert_int_eq(wp_expectations_expect_deletion(e, K, "u1", 1000 + T), 0);
	/* Raised again at 1000+T: not expired at 1000+T+1. */
	ck_assert(!wp_expectations_satisfied(e, K, 1000 + T + 1));
	ck_assert(wp_expectations_deletion_pending(e, K, "u1", 1000 + 2 * T));
	/* Expired: no longer pending, and the gate opens. */
	ck_assert(!wp_expectations_deletion_pending(e, K, "u1", 1000 + 2 * T + 1));
	ck_assert(wp_expectations_satisfied(e, K, 1000 + 2 * T + 1));
}
END_TEST

START_TEST(forget)
{
	ck_assert(wp_expectations_expect_creations(e, K, 4, 1000));
	ck_assert_int_eq(wp_expectations_expect_deletion(e, K, "u1", 1000), 0);
	wp_expectations_forget(e, K);
	ck_assert(wp_expectations_satisfied(e, K, 1000));
	ck_assert(!wp_expectations_deletion_pending(e, K, "u1", 1000));
	wp_expectations_forget(e, K);   /* twice: fine */
}
END_TEST

START_TEST(many_keys)
{
	char key[32];
	for (int i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "ns/p%d", i);
		ck_assert(wp_expectations_expect_creations(e, key, i + 1, 0));
	}
	for (int i = 0; i < 50; i += 2) {
		snprintf(key, sizeof(key), "ns/p%d", i);
		wp_expectations_forget(e, key);
	}
	for (int i = 0; i < 50; i++) {
		snprintf(key, sizeof(key), "ns/p%d", i);
		ck_assert_int_eq(wp_expectations_pending_creations(e, key), i % 2 ? i + 1 : 0);
	}
}
END_TEST

static void *lowerer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		wp_expectations_lower_creations(e, K, 1);
	return NULL;
}

START_TEST(concurrent_lowering)
{
	ck_assert(wp_expectations_expect_creations(e, K, 4000, 0));
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, lowerer, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(wp_expectations_pending_creations(e, K), 0);
	ck_assert(wp_expectations_satisfied(e, K, 0));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("expectations");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, new_invalid);
	tcase_add_test(tc, no_record_is_satisfied);
	tcase_add_test(tc, creations_gate);
	tcase_add_test(tc, timeout_drops_record);
	tcase_add_test(tc, deletions);
	tcase_add_test(tc, empty_uid_never_recorded);
	tcase_add_test(tc, deletion_refreshes_raise_and_expiry_unmarks);
	tcase_add_test(tc, forget);
	tcase_add_test(tc, many_keys);
	tcase_add_test(tc, concurrent_lowering);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
