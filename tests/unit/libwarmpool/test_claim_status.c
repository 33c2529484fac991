/*
 * Unit tests of libwarmpool/src/claim_status.c: expiry (docs/api.md#claim-expiry),
 * the claim status of docs/api.md#claim-conditions (Ready first-match table, forwarded Sandbox
 * Ready, mirrored Finished, status.sandbox rules), set-condition
 * lastTransitionTime semantics, the AdoptionConflict message rewriting,
 * the status-unchanged test and the RFC3339Nano format.
 */
#include <string.h>
#include "fixture.h"
#include "claim.h"
#include "jsonutil.h"
#include "k8s/object.h"

/* 2026-01-02T03:04:05Z */
#define NOW_MS 1767323045000LL
#define NOW_STR "2026-01-02T03:04:05Z"

static void assert_ready(const cJSON *st, const char *status, const char *reason, const char *msg)
{
	const cJSON *c = wp_condition(st, "Ready");
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(ju_str(c, "status"), status);
	ck_assert_str_eq(ju_str(c, "reason"), reason);
	ck_assert_str_eq(ju_str(c, "message"), msg);
	ck_assert_int_eq((int)cJSON_GetObjectItem(c, "observedGeneration")->valuedouble, 3);
}

/* Status of the fixture claim for `sbx` and an error of `kind`/`msg`. */
static cJSON *status_for(const cJSON *claim, const cJSON *sbx, wp_claim_err_kind kind,
                         const char *msg, bool expired)
{
	wp_claim_err err = { 0 };
	if (kind != WP_CLAIM_OK)
		wp_claim_err_set(&err, kind, "%s", msg);
	cJSON *st = wp_claim_status(claim, sbx, &err, expired, NOW_MS);
	wp_claim_err_clear(&err);
	ck_assert_ptr_nonnull(st);
	return st;
}

START_TEST(expiry)
{
	cJSON *claim = fx_load("claim.json");
	int64_t at = 0;
	ck_assert(!wp_claim_expiry(claim, NULL, &at));
	ck_assert_str_eq(wp_claim_shutdown_policy(claim), "Retain");
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "spec"), "lifecycle",
	                      fx_json("{\"shutdownTime\":\"2026-01-02T04:00:00Z\","
	                               "\"ttlSecondsAfterFinished\":60,\"shutdownPolicy\":\"Delete\"}"));
	ck_assert_str_eq(wp_claim_shutdown_policy(claim), "Delete");
	ck_assert(wp_claim_expiry(claim, NULL, &at));
	ck_assert_int_eq(at, 1767326400000LL);
	/* Finished True: ltt + ttl, the earlier wins */
	cJSON *st = fx_json("{\"conditions\":[{\"type\":\"Finished\",\"status\":\"True\","
	                     "\"lastTransitionTime\":\"2026-01-02T03:00:00Z\"}]}");
	ck_assert(wp_claim_expiry(claim, st, &at));
	ck_assert_int_eq(at, 1767322860000LL);
	/* Finished False: ttl not started */
	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "conditions"), 0),
	                          "status", cJSON_CreateString("False"));
	ck_assert(wp_claim_expiry(claim, st, &at));
	ck_assert_int_eq(at, 1767326400000LL);
	/* ttl 0 and no shutdownTime: expires as soon as Finished */
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(claim, "spec"), "lifecycle",
	                          fx_json("{\"ttlSecondsAfterFinished\":0}"));
	ck_assert(!wp_claim_expiry(claim, st, &at));
	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "conditions"), 0),
	                          "status", cJSON_CreateString("True"));
	ck_assert(wp_claim_expiry(claim, st, &at));
	ck_assert_int_eq(at, 1767322800000LL);
	ck_assert_str_eq(wp_claim_shutdown_policy(claim), "Retain");
	cJSON_Delete(st);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(set_condition_semantics)
{
	cJSON *st = cJSON_CreateObject();
	ck_assert(wp_set_condition(st, "Ready", "False", "A", "a", 1, NULL, NOW_MS));
	ck_assert_str_eq(ju_str(wp_condition(st, "Ready"), "lastTransitionTime"), NOW_STR);
	/* same status: time kept, reason/message/generation updated */
	ck_assert(wp_set_condition(st, "Ready", "False", "B", "b", 2, NULL, NOW_MS + 60000));
	const cJSON *c = wp_condition(st, "Ready");
	ck_assert_str_eq(ju_str(c, "lastTransitionTime"), NOW_STR);
	ck_assert_str_eq(ju_str(c, "reason"), "B");
	ck_assert_int_eq((int)cJSON_GetObjectItem(c, "observedGeneration")->valuedouble, 2);
	/* flip: now */
	ck_assert(wp_set_condition(st, "Ready", "True", "C", "c", 2, NULL, NOW_MS + 60000));
	ck_assert_str_eq(ju_str(wp_condition(st, "Ready"), "lastTransitionTime"), "2026-01-02T03:05:05Z");
	/* flip with a copied time: that time */
	ck_assert(wp_set_condition(st, "Ready", "False", "D", "d", 2, "2026-01-01T00:00:00Z", NOW_MS));
	ck_assert_str_eq(ju_str(wp_condition(st, "Ready"), "lastTransitionTime"), "2026-01-01T00:00:00Z");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "conditions")), 1);
	cJSON_Delete(st);
}
END_TEST

START_TEST(ready_table)
{
	cJSON *claim = fx_load("claim.json");
	cJSON *sbx = fx_load("sandbox-warm.json");
	cJSON *st;
	struct { wp_claim_err_kind k; const char *in, *reason, *msg; } rows[] = {
		{ WP_CLAIM_E_TEMPLATE_NOT_FOUND, "SandboxTemplate \"t\" not found", "TemplateNotFound",
		  "SandboxTemplate \"t\" not found" },
		{ WP_CLAIM_E_POOL_NOT_FOUND, "SandboxWarmPool \"p\" not found", "WarmPoolNotFound",
		  "SandboxWarmPool \"p\" not found" },
		{ WP_CLAIM_E_CREATE_PENDING, "x", "SandboxCreatePending",
		  "Sandbox already created; waiting for cache to converge" },
		{ WP_CLAIM_E_INVALID_METADATA, "invalid additionalPodMetadata: x", "InvalidMetadata",
		  "invalid additionalPodMetadata: x" },
		{ WP_CLAIM_E_ENV_REJECTED, "environment variable injection rejected: x",
		  "EnvVarsInjectionRejected", "environment variable injection rejected: x" },
		{ WP_CLAIM_E_VCT, "failed to merge volume claim templates: x", "VolumeClaimTemplatesError",
		  "failed to merge volume claim templates: x" },
		{ WP_CLAIM_E_OTHER, "boom", "ReconcilerError", "Error seen: boom" },
		{ WP_CLAIM_E_ADOPTION_CONFLICT, "adoption write conflict: claim c already assigned sandbox s",
		  "AdoptionConflict", "adoption write conflict: claim c already assigned sandbox s; the "
		  "next pass retries from a converged view" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		/* an error wins over everything, the binding is kept */
		st = status_for(claim, NULL, rows[i].k, rows[i].in, true);
		assert_ready(st, "False", rows[i].reason, rows[i].msg);
		cJSON_Delete(st);
	}
	st = status_for(claim, sbx, WP_CLAIM_OK, NULL, true);
	assert_ready(st, "False", "ClaimExpired", "Claim expired. Sandbox cleanup initiated.");
	cJSON_Delete(st);
	st = status_for(claim, NULL, WP_CLAIM_OK, NULL, false);
	assert_ready(st, "False", "SandboxMissing", "Sandbox does not exist");
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "sandbox"));
	cJSON_Delete(st);
	/* forwarded Sandbox Ready with the Sandbox's time, claim generation */
	st = status_for(claim, sbx, WP_CLAIM_OK, NULL, false);
	assert_ready(st, "True", "DependenciesReady", "Pod is Ready");
	ck_assert_str_eq(ju_str(wp_condition(st, "Ready"), "lastTransitionTime"), "2026-01-02T03:00:02Z");
	fx_assert_json_str(cJSON_GetObjectItem(st, "sandbox"),
	                    "{\"name\":\"test-pool-abcde\",\"podIPs\":[\"127.0.1.5\"]}");
	cJSON_Delete(st);
	/* Sandbox expired on its own */
	cJSON *ready = (cJSON *)wp_condition(cJSON_GetObjectItem(sbx, "status"), "Ready");
	cJSON_ReplaceItemInObject(ready, "reason", cJSON_CreateString("SandboxExpired"));
	cJSON_ReplaceItemInObject(ready, "status", cJSON_CreateString("False"));
	st = status_for(claim, sbx, WP_CLAIM_OK, NULL, false);
	assert_ready(st, "False", "SandboxExpired",
	             "Underlying Sandbox resource has expired independently of the Claim.");
	cJSON_Delete(st);
	/* no Ready yet */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(sbx, "status"), "conditions");
	st = status_for(claim, sbx, WP_CLAIM_OK, NULL, false);
	assert_ready(st, "False", "SandboxNotReady", "Sandbox is not ready");
	cJSON_Delete(st);
	cJSON_Delete(sbx);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(binding_and_finished)
{
	cJSON *claim = fx_load("claim.json");
	cJSON_AddItemToObject(claim, "status",
	                      fx_json("{\"sandbox\":{\"name\":\"old\",\"podIPs\":[\"1.2.3.4\"]},"
	                               "\"conditions\":[{\"type\":\"Finished\",\"status\":\"True\","
	                               "\"reason\":\"PodSucceeded\",\"message\":\"m\","
	                               "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}"));
	/* cache lag with a bound name: untouched */
	cJSON *st = status_for(claim, NULL, WP_CLAIM_E_CREATE_PENDING, "x", false);
	fx_assert_json(st, cJSON_GetObjectItem(claim, "status"));
	cJSON_Delete(st);
	/* transient error: binding and Finished kept */
	st = status_for(claim, NULL, WP_CLAIM_E_OTHER, "x", false);
	ck_assert_str_eq(k8s_obj_str(st, "sandbox.name"), "old");
	ck_assert_ptr_nonnull(wp_condition(st, "Finished"));
	cJSON_Delete(st);
	/* ownership error: binding cleared */
	st = status_for(claim, NULL, WP_CLAIM_E_NOT_OWNED,
	                "Claim expired. sandbox not owned by this claim: sandbox \"s\" is not owned "
	                "by claim \"c\"; deletion skipped.", true);
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "sandbox"));
	assert_ready(st, "False", "ClaimExpired", "Claim expired. sandbox not owned by this claim: "
	             "sandbox \"s\" is not owned by claim \"c\"; deletion skipped.");
	cJSON_Delete(st);
	/* expired, Sandbox gone: Finished kept, binding cleared */
	st = status_for(claim, NULL, WP_CLAIM_OK, NULL, true);
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "sandbox"));
	ck_assert_ptr_nonnull(wp_condition(st, "Finished"));
	cJSON_Delete(st);
	/* not expired, no Sandbox: both gone */
	st = status_for(claim, NULL, WP_CLAIM_OK, NULL, false);
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "sandbox"));
	ck_assert_ptr_null(wp_condition(st, "Finished"));
	cJSON_Delete(st);
	/* Sandbox without Finished: removed; with: mirrored with its time */
	cJSON *sbx = fx_load("sandbox-warm.json");
	st = status_for(claim, sbx, WP_CLAIM_OK, NULL, false);
	ck_assert_ptr_null(wp_condition(st, "Finished"));
	cJSON_Delete(st);
	cJSON_AddItemToArray(k8s_obj_at(sbx, "status.conditions") ? (cJSON *)k8s_obj_at(sbx, "status.conditions") : NULL,
	                     fx_json("{\"type\":\"Finished\",\"status\":\"True\",\"reason\":\"PodFailed\","
	                              "\"message\":\"Pod failed\",\"observedGeneration\":1,"
	                              "\"lastTransitionTime\":\"2026-01-02T03:01:00Z\"}"));
	st = status_for(claim, sbx, WP_CLAIM_OK, NULL, false);
	const cJSON *fin = wp_condition(st, "Finished");
	ck_assert_str_eq(ju_str(fin, "reason"), "PodFailed");
	/* no flip (True before): the claim's time is kept */
	ck_assert_str_eq(ju_str(fin, "lastTransitionTime"), "2026-01-01T00:00:00Z");
	cJSON_Delete(st);
	/* first insert: the Sandbox's time */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(claim, "status"), "conditions");
	st = status_for(claim, sbx, WP_CLAIM_OK, NULL, false);
	ck_assert_str_eq(ju_str(wp_condition(st, "Finished"), "lastTransitionTime"), "2026-01-02T03:01:00Z");
	/* no podIPs: the name only */
	cJSON_Delete(st);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(sbx, "status"), "podIPs");
	st = status_for(claim, sbx, WP_CLAIM_OK, NULL, false);
	fx_assert_json_str(cJSON_GetObjectItem(st, "sandbox"), "{\"name\":\"test-pool-abcde\"}");
	cJSON_Delete(st);
	cJSON_Delete(sbx);
	cJSON_Delete(claim);
}
END_TEST

START_TEST(adoption_conflict_message)
{
	wp_claim_err e = { 0 };
	wp_claim_err_set(&e, WP_CLAIM_E_ADOPTION_CONFLICT,
	                 "adoption write conflict: claim c: Operation cannot be fulfilled on "
	                 "sandboxclaims \"c\": the object has been modified");
	e.api_tail = strlen("adoption write conflict: claim c");
	char *m = wp_adoption_conflict_message(&e);
	ck_assert_str_eq(m, "adoption write conflict: claim c (conflicting concurrent write); the "
	                    "next pass retries from a converged view");
	free(m);
	e.api_tail = 0;
	m = wp_adoption_conflict_message(&e);
	ck_assert_ptr_nonnull(strstr(m, "has been modified; the next pass retries"));
	free(m);
	wp_claim_err_clear(&e);
}
END_TEST

START_TEST(status_equal_and_time)
{
	cJSON *a = fx_json("{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
	                    "{\"type\":\"Finished\",\"status\":\"True\"}],\"sandbox\":{\"name\":\"s\"}}");
	cJSON *b = fx_json("{\"sandbox\":{\"name\":\"s\",\"podIPs\":[]},\"conditions\":["
	                    "{\"type\":\"Finished\",\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\"}]}");
	ck_assert(wp_claim_status_equal(a, b));
	cJSON *sorted = wp_claim_status_sorted(a);
	ck_assert_str_eq(ju_str(cJSON_GetArrayItem(cJSON_GetObjectItem(sorted, "conditions"), 0), "type"),
	                 "Finished");
	ck_assert_str_eq(ju_str(cJSON_GetArrayItem(cJSON_GetObjectItem(sorted, "conditions"), 1), "type"),
	                 "Ready");
	cJSON_Delete(sorted);
	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "conditions"), 1),
	                          "status", cJSON_CreateString("False"));
	ck_assert(!wp_claim_status_equal(a, b));
	ck_assert(wp_claim_status_equal(NULL, cJSON_GetObjectItem(a, "nothing")));
	cJSON_Delete(a);
	cJSON_Delete(b);
	char buf[48];
	ck_assert_str_eq(wp_format_rfc3339nano(NOW_MS * 1000000LL, buf, sizeof(buf)), NOW_STR);
	ck_assert_str_eq(wp_format_rfc3339nano(NOW_MS * 1000000LL + 120000000LL, buf, sizeof(buf)),
	                 "2026-01-02T03:04:05.12Z");
	ck_assert_str_eq(wp_format_rfc3339nano(NOW_MS * 1000000LL + 1, buf, sizeof(buf)),
	                 "2026-01-02T03:04:05.000000001Z");
	ck_assert_str_eq(wp_normalize_created_by("python-client"), "python-client");
	ck_assert_str_eq(wp_normalize_created_by("kubectl"), "unknown");
	ck_assert_str_eq(wp_normalize_created_by(NULL), "unknown");
}
END_TEST

START_TEST(sandbox_update_filter)
{
	cJSON *a = fx_load("sandbox-warm.json");
	cJSON *b = cJSON_Duplicate(a, true);
	ck_assert(!wp_claim_sandbox_update_matters(a, b));
	/* metadata/spec only: dropped */
	cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "metadata"), "annotations"), "x", "y");
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(b, "metadata"), "resourceVersion", cJSON_CreateString("2"));
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(b, "status"), "nodeName", cJSON_CreateString("n2"));
	ck_assert(!wp_claim_sandbox_update_matters(a, b));
	/* Ready message changed */
	cJSON *r = (cJSON *)wp_condition(cJSON_GetObjectItem(b, "status"), "Ready");
	cJSON_ReplaceItemInObject(r, "message", cJSON_CreateString("other"));
	ck_assert(wp_claim_sandbox_update_matters(a, b));
	cJSON_Delete(b);
	/* podIPs */
	b = cJSON_Duplicate(a, true);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(b, "status"), "podIPs", fx_json("[]"));
	ck_assert(wp_claim_sandbox_update_matters(a, b));
	cJSON_Delete(b);
	/* Finished appears */
	b = cJSON_Duplicate(a, true);
	cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "status"), "conditions"),
	                     fx_json("{\"type\":\"Finished\",\"status\":\"True\"}"));
	ck_assert(wp_claim_sandbox_update_matters(a, b));
	cJSON_Delete(b);
	/* deletion starts */
	b = cJSON_Duplicate(a, true);
	cJSON_AddStringToObject(cJSON_GetObjectItem(b, "metadata"), "deletionTimestamp", "2026-01-02T03:05:00Z");
	ck_assert(wp_claim_sandbox_update_matters(a, b));
	cJSON_Delete(b);
	cJSON_Delete(a);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("claim_status");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, expiry);
	tcase_add_test(tc, set_condition_semantics);
	tcase_add_test(tc, ready_table);
	tcase_add_test(tc, binding_and_finished);
	tcase_add_test(tc, adoption_conflict_message);
	tcase_add_test(tc, status_equal_and_time);
	tcase_add_test(tc, sandbox_update_filter);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
