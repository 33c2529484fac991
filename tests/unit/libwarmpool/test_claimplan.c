/*
 * Unit tests of libwarmpool/src/claimplan.c: the warm candidate choice
 * (Ready first, else the first not-Ready one, in queue order; Recreate
 * staleness; owned, deleting and other-namespace candidates), the network
 * grace wait, the expiry action, the status of a pass with its TTL
 * re-check, and the end of a pass (requeue or failure).
 */
#include <string.h>
#include "fixture.h"
#include "claimplan.h"
#include "asb/common.h"
#include "jsonutil.h"
#include "k8s/object.h"

/* 2026-01-02T03:04:05Z */
#define NOW_MS 1767323045000LL

/* The warm fixture named `name`, Ready or not, with or without IPs. */
static cJSON *cand(const char *name, bool ready, bool ips)
{
	cJSON *s = fx_load("sandbox-warm.json");
	fx_set_str(s, "metadata.name", name);
	if (!ready)
		fx_set_str(cJSON_GetArrayItem(k8s_obj_at(s, "status.conditions"), 0), "status", "False");
	if (!ips)
		fx_del(s, "status.podIPs");
	return s;
}

/* Runs wp_claim_choose over `c[0..n)` under `pool` into `out`. */
static void choose(const cJSON *claim, const wp_claim_pool_view *pool, cJSON **c, size_t n,
                   wp_claim_candidates *out)
{
	ck_assert_int_eq(wp_claim_choose(claim, pool, (const cJSON *const *)c, n, out), 0);
}

static void free_all(cJSON **c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(c[i]);
}

START_TEST(ready_preferred_over_earlier_not_ready)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *c[] = { cand("a", false, true), cand("b", false, true), cand("c", true, true),
	               cand("d", true, true) };
	wp_claim_candidates r;
	choose(claim, NULL, c, 4, &r);
	ck_assert_int_eq(r.choice.outcome, WP_CHOICE_CHOSEN);
	ck_assert_uint_eq(r.choice.chosen, 2);
	ck_assert_uint_eq(r.examined, 3);          /* stops at the first Ready */
	ck_assert_int_eq(r.action[0], WP_CAND_KEEP); /* the held fallback goes back */
	ck_assert_int_eq(r.action[1], WP_CAND_KEEP);
	ck_assert_int_eq(r.action[2], WP_CAND_TAKE);
	ck_assert_int_eq(r.verdict[0], WP_CAND_NOT_READY);
	ck_assert_int_eq(r.verdict[2], WP_CAND_READY);
	ck_assert(r.choice.keep_held);
	wp_claim_candidates_clear(&r);
	free_all(c, 4);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(first_ready_in_queue_order)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *c[] = { cand("a", true, true), cand("b", true, true) };
	wp_claim_candidates r;
	choose(claim, NULL, c, 2, &r);
	ck_assert_uint_eq(r.choice.chosen, 0);
	ck_assert_uint_eq(r.examined, 1);
	ck_assert(!r.choice.held);
	wp_claim_candidates_clear(&r);
	free_all(c, 2);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(none_ready_takes_first_not_ready)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *c[] = { cand("a", false, false), cand("b", false, true), cand("c", false, true) };
	wp_claim_candidates r;
	choose(claim, NULL, c, 3, &r);
	ck_assert_int_eq(r.choice.outcome, WP_CHOICE_CHOSEN);
	ck_assert_uint_eq(r.choice.chosen, 1);
	ck_assert_uint_eq(r.examined, 3);
	ck_assert_int_eq(r.verdict[0], WP_CAND_NO_NETWORK);
	ck_assert_int_eq(r.action[0], WP_CAND_KEEP);
	ck_assert_int_eq(r.action[1], WP_CAND_TAKE);
	ck_assert_int_eq(r.action[2], WP_CAND_KEEP);
	ck_assert_int_eq(r.choice.pending, 1);
	ck_assert(!r.choice.keep_held);
	wp_claim_candidates_clear(&r);
	free_all(c, 3);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(only_without_network_is_pending)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *c[] = { cand("a", true, false), cand("b", false, false) };
	wp_claim_candidates r;
	choose(claim, NULL, c, 2, &r);
	ck_assert_int_eq(r.choice.outcome, WP_CHOICE_PENDING_NETWORK);
	ck_assert_int_eq(r.choice.pending, 2);
	ck_assert_int_eq(r.action[0], WP_CAND_KEEP);
	ck_assert_int_eq(r.action[1], WP_CAND_KEEP);
	wp_claim_candidates_clear(&r);
	/* nothing at all: go cold */
	choose(claim, NULL, NULL, 0, &r);
	ck_assert_int_eq(r.choice.outcome, WP_CHOICE_NONE);
	ck_assert_uint_eq(r.examined, 0);
	wp_claim_candidates_clear(&r);
	free_all(c, 2);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(owned_deleting_and_foreign_skipped)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *owned = cand("owned", true, true);
	cJSON *ref = cJSON_GetArrayItem(k8s_obj_at(owned, "metadata.ownerReferences"), 0);
	fx_set_str(ref, "kind", "SandboxClaim");
	fx_set_str(ref, "name", "other-claim");
	cJSON *deleting = cand("deleting", true, true);
	fx_set_str(deleting, "metadata.deletionTimestamp", "2026-01-02T03:04:00Z");
	cJSON *other_pool = cand("other-pool", true, true);
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(other_pool, "metadata.ownerReferences"), 0),
	           "name", "another-pool");
	cJSON *other_ns = cand("other-ns", true, true);
	fx_set_str(other_ns, "metadata.namespace", "elsewhere");
	cJSON *c[] = { owned, deleting, other_pool, other_ns, cand("ok", true, true) };
	wp_claim_candidates r;
	choose(claim, NULL, c, 5, &r);
	ck_assert_int_eq(r.verdict[0], WP_CAND_INVALID);
	ck_assert_int_eq(r.verdict[1], WP_CAND_INVALID);
	ck_assert_int_eq(r.verdict[2], WP_CAND_INVALID);
	ck_assert_int_eq(r.verdict[3], WP_CAND_OTHER_NAMESPACE);
	ck_assert_int_eq(r.action[0], WP_CAND_DROP);
	ck_assert_int_eq(r.action[1], WP_CAND_DROP);
	ck_assert_int_eq(r.action[2], WP_CAND_DROP);
	ck_assert_int_eq(r.action[3], WP_CAND_KEEP);  /* another claim's namespace may want it */
	ck_assert_uint_eq(r.choice.chosen, 4);
	wp_claim_candidates_clear(&r);
	free_all(c, 5);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(recreate_stale_skipped)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *tpl = fx_load("template.json");  /* image python:3.12: the warm one runs busybox */
	cJSON *c[] = { cand("stale", true, true), cand("fresh", true, true) };
	/* the fresh one's template-hash label matches the pool's template */
	fx_label(c[1], "agents.x-k8s.io/sandbox-template-hash", "99999999");
	wp_claim_pool_view pool = { .recreate = true, .tpl_known = true, .tpl = tpl,
	                            .tpl_hash = "99999999" };
	wp_claim_candidates r;
	choose(claim, &pool, c, 2, &r);
	ck_assert_int_eq(r.verdict[0], WP_CAND_STALE);
	ck_assert_int_eq(r.action[0], WP_CAND_DROP);
	ck_assert_int_eq(r.verdict[1], WP_CAND_READY);
	ck_assert_uint_eq(r.choice.chosen, 1);
	wp_claim_candidates_clear(&r);
	/* not Recreate: the same stale one is handed out */
	wp_claim_pool_view plain = { .tpl = tpl, .tpl_hash = "99999999" };
	choose(claim, &plain, c, 2, &r);
	ck_assert_uint_eq(r.choice.chosen, 0);
	wp_claim_candidates_clear(&r);
	/* a stale one without IPs is dropped, not waited for */
	fx_del(c[0], "status.podIPs");
	bool pending = true;
	ck_assert_int_eq(wp_claim_cand_verdict(&pool, c[0], &pending), WP_CAND_STALE);
	ck_assert(!pending);
	free_all(c, 2);
	cJSON_Delete(tpl);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(recreate_template_unknown_kept)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *c[] = { cand("a", true, true), cand("b", true, false) };
	wp_claim_pool_view pool = { .recreate = true };
	wp_claim_candidates r;
	choose(claim, &pool, c, 2, &r);
	ck_assert_int_eq(r.verdict[0], WP_CAND_POOL_UNKNOWN);
	ck_assert_int_eq(r.verdict[1], WP_CAND_POOL_UNKNOWN);
	ck_assert_int_eq(r.action[0], WP_CAND_KEEP);
	ck_assert_int_eq(r.action[1], WP_CAND_KEEP);
	/* only the one without IPs counts as waiting for its network */
	ck_assert_int_eq(r.choice.pending, 1);
	ck_assert_int_eq(r.choice.outcome, WP_CHOICE_PENDING_NETWORK);
	wp_claim_candidates_clear(&r);
	free_all(c, 2);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(network_wait)
{
	ck_assert_int_eq(wp_claim_network_wait_ms(0), 500);
	ck_assert_int_eq(wp_claim_network_wait_ms(1500), 500);
	ck_assert_int_eq(wp_claim_network_wait_ms(1700), 300);
	ck_assert_int_eq(wp_claim_network_wait_ms(1999), 1);
	ck_assert_int_eq(wp_claim_network_wait_ms(2000), 0);
	ck_assert_int_eq(wp_claim_network_wait_ms(5000), 0);
	/* a clock behind the claim's stamp: the poll, not the whole grace */
	ck_assert_int_eq(wp_claim_network_wait_ms(-10000), 500);
}
END_TEST

/* The fixture claim with lifecycle `lc` (JSON) and Ready reason `reason` (NULL: no status). */
static cJSON *claim_with(const char *lc, const char *reason)
{
	cJSON *claim = fx_load("claim.json");
	if (lc)
		fx_set_json(claim, "spec.lifecycle", lc);
	if (reason) {
		char buf[256];
		snprintf(buf, sizeof(buf), "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
		         "\"reason\":\"%s\",\"lastTransitionTime\":\"2026-01-02T03:00:00Z\"}]}", reason);
		fx_set_json(claim, "status", buf);
	}
	return claim;
}

START_TEST(expiry_actions)
{
	wp_claim_expiry_plan e;
	/* no lifecycle: never expires, no requeue */
	cJSON *claim = claim_with(NULL, NULL);
	wp_claim_plan_expiry(claim, NOW_MS, &e);
	ck_assert(!e.has_expiry);
	ck_assert(!e.expired);
	ck_assert_int_eq(e.action, WP_EXPIRY_ACTIVE);
	cJSON_Delete(claim);
	/* shutdownTime exactly now: expired, first marked */
	claim = claim_with("{\"shutdownTime\":\"2026-01-02T03:04:05Z\"}", NULL);
	wp_claim_plan_expiry(claim, NOW_MS, &e);
	ck_assert(e.expired);
	ck_assert_int_eq(e.at_ms, NOW_MS);
	ck_assert_int_eq(e.action, WP_EXPIRY_MARK);
	/* one ms earlier: not yet */
	wp_claim_plan_expiry(claim, NOW_MS - 1, &e);
	ck_assert(e.has_expiry);
	ck_assert(!e.expired);
	ck_assert_int_eq(e.action, WP_EXPIRY_ACTIVE);
	cJSON_Delete(claim);
	/* marked already: Retain (default), Delete, DeleteForeground */
	claim = claim_with("{\"shutdownTime\":\"2026-01-02T03:04:05Z\"}", "ClaimExpired");
	wp_claim_plan_expiry(claim, NOW_MS, &e);
	ck_assert_int_eq(e.action, WP_EXPIRY_RETAIN);
	cJSON_Delete(claim);
	claim = claim_with("{\"shutdownTime\":\"2026-01-02T03:04:05Z\",\"shutdownPolicy\":\"Delete\"}",
	                   "ClaimExpired");
	wp_claim_plan_expiry(claim, NOW_MS, &e);
	ck_assert_int_eq(e.action, WP_EXPIRY_DELETE_CLAIM);
	ck_assert(!e.foreground);
	cJSON_Delete(claim);
	claim = claim_with("{\"shutdownTime\":\"2026-01-02T03:04:05Z\","
	                   "\"shutdownPolicy\":\"DeleteForeground\"}", "ClaimExpired");
	wp_claim_plan_expiry(claim, NOW_MS, &e);
	ck_assert_int_eq(e.action, WP_EXPIRY_DELETE_CLAIM);
	ck_assert(e.foreground);
	cJSON_Delete(claim);
	/* Delete but not yet marked: the mark comes first */
	claim = claim_with("{\"shutdownTime\":\"2026-01-02T03:04:05Z\",\"shutdownPolicy\":\"Delete\"}",
	                   "SandboxNotReady");
	wp_claim_plan_expiry(claim, NOW_MS, &e);
	ck_assert_int_eq(e.action, WP_EXPIRY_MARK);
	cJSON *st = wp_claim_expired_status(claim, NOW_MS);
	const cJSON *r = wp_condition(st, "Ready");
	ck_assert_str_eq(ju_str(r, "status"), "False");
	ck_assert_str_eq(ju_str(r, "reason"), "ClaimExpired");
	ck_assert_str_eq(ju_str(r, "message"), "Claim expired. Sandbox cleanup initiated.");
	ck_assert_int_eq((int)cJSON_GetObjectItem(r, "observedGeneration")->valuedouble, 3);
	cJSON_Delete(st);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(pass_end_requeue)
{
	wp_claim_expiry_plan none = { 0 };
	wp_claim_expiry_plan soon = { .has_expiry = true, .at_ms = NOW_MS + 1500 };
	wp_claim_expiry_plan now = { .has_expiry = true, .at_ms = NOW_MS };
	wp_claim_expiry_plan far = { .has_expiry = true, .at_ms = NOW_MS + 3600000 };
	wp_claim_expiry_plan gone = { .has_expiry = true, .at_ms = NOW_MS - 5, .expired = true };
	wp_claim_pass_end end;
	wp_claim_err err = { 0 };
	/* no error, no expiry: nothing */
	wp_claim_plan_end(&err, &none, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, 0);
	ck_assert_int_eq(end.fail, 0);
	wp_claim_plan_end(NULL, &none, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, 0);
	/* requeue at the expiry; at least 1 ms; none once expired */
	wp_claim_plan_end(&err, &soon, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, 1500);
	wp_claim_plan_end(&err, &now, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, 1);
	wp_claim_plan_end(&err, &gone, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, 0);
	/* pool missing: slow requeue, sooner when the expiry comes first */
	wp_claim_err_set(&err, WP_CLAIM_E_POOL_NOT_FOUND, "x");
	wp_claim_plan_end(&err, &none, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, WP_CLAIM_NOT_FOUND_REQUEUE_MS);
	wp_claim_plan_end(&err, &soon, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, 1500);
	wp_claim_plan_end(&err, &far, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, WP_CLAIM_NOT_FOUND_REQUEUE_MS);
	ck_assert_int_eq(end.fail, 0);
	wp_claim_err_set(&err, WP_CLAIM_E_TEMPLATE_NOT_FOUND, "x");
	wp_claim_plan_end(&err, &none, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, WP_CLAIM_NOT_FOUND_REQUEUE_MS);
	/* create pending on cache lag: fast requeue, whatever the expiry */
	wp_claim_err_set(&err, WP_CLAIM_E_CREATE_PENDING, "x");
	wp_claim_plan_end(&err, &soon, NOW_MS, &end);
	ck_assert_int_eq(end.requeue_after_ms, WP_CLAIM_CREATE_PENDING_REQUEUE_MS);
	/* unsuppressed errors fail, a conflict as ASB_ECONFLICT */
	wp_claim_err_set(&err, WP_CLAIM_E_ADOPTION_CONFLICT, "x");
	wp_claim_plan_end(&err, &soon, NOW_MS, &end);
	ck_assert_int_eq(end.fail, ASB_ECONFLICT);
	wp_claim_err_set(&err, WP_CLAIM_E_OTHER, "x");
	wp_claim_plan_end(&err, &none, NOW_MS, &end);
	ck_assert_int_eq(end.fail, ASB_ERROR);
	/* suppressed user errors: no failure, the expiry requeue still */
	wp_claim_err_set(&err, WP_CLAIM_E_INVALID_METADATA, "x");
	wp_claim_plan_end(&err, &soon, NOW_MS, &end);
	ck_assert_int_eq(end.fail, 0);
	ck_assert_int_eq(end.requeue_after_ms, 1500);
	wp_claim_err_clear(&err);
}
END_TEST

START_TEST(status_and_ttl_recheck)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *sbx = cand("test-pool-abcde", true, true);
	cJSON *st = NULL;
	bool mark = true;
	/* a plain pass: wp_claim_status's answer, no mark */
	ck_assert_int_eq(wp_claim_plan_status(claim, sbx, NULL, false, NOW_MS, &st, &mark), 0);
	ck_assert(!mark);
	cJSON *want = wp_claim_status(claim, sbx, NULL, false, NOW_MS);
	fx_assert_json(st, want);
	ck_assert_str_eq(ju_str(wp_condition(st, "Ready"), "status"), "True");
	cJSON_Delete(want);
	cJSON_Delete(st);
	/* the Sandbox finished 10 s ago; a 5 s TTL is over once Finished is mirrored */
	fx_set_json(claim, "spec.lifecycle", "{\"ttlSecondsAfterFinished\":5}");
	cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(sbx, "status"), "conditions"),
	                     fx_json("{\"type\":\"Finished\",\"status\":\"True\",\"reason\":\"Done\","
	                             "\"message\":\"\",\"lastTransitionTime\":\"2026-01-02T03:03:55Z\"}"));
	ck_assert_int_eq(wp_claim_plan_status(claim, sbx, NULL, false, NOW_MS, &st, &mark), 0);
	ck_assert(mark);
	ck_assert_str_eq(ju_str(wp_condition(st, "Ready"), "reason"), "ClaimExpired");
	ck_assert_ptr_nonnull(wp_condition(st, "Finished"));
	cJSON_Delete(st);
	/* a 60 s TTL is not over: no mark */
	fx_set_json(claim, "spec.lifecycle", "{\"ttlSecondsAfterFinished\":60}");
	ck_assert_int_eq(wp_claim_plan_status(claim, sbx, NULL, false, NOW_MS, &st, &mark), 0);
	ck_assert(!mark);
	ck_assert_str_ne(ju_str(wp_condition(st, "Ready"), "reason"), "ClaimExpired");
	cJSON_Delete(st);
	cJSON_Delete(sbx);
	cJSON_Delete(claim);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("claimplan");
	TCase *tc = tcase_create("choice");
	tcase_add_test(tc, ready_preferred_over_earlier_not_ready);
	tcase_add_test(tc, first_ready_in_queue_order);
	tcase_add_test(tc, none_ready_takes_first_not_ready);
	tcase_add_test(tc, only_without_network_is_pending);
	tcase_add_test(tc, owned_deleting_and_foreign_skipped);
	tcase_add_test(tc, recreate_stale_skipped);
	tcase_add_test(tc, recreate_template_unknown_kept);
	tcase_add_test(tc, network_wait);
	suite_add_tcase(s, tc);
	tc = tcase_create("expiry_status");
	tcase_add_test(tc, expiry_actions);
	tcase_add_test(tc, pass_end_requeue);
	tcase_add_test(tc, status_and_ttl_recheck);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
