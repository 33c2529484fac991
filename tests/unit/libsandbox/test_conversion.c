/*
 * Unit tests of libsandbox/src/conversion.c: Sandbox v1alpha1 <-> v1beta1
 * (docs/api.md#converting-sandbox) and the ConversionReview envelope, on the fixture
 * Sandbox and on inline objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fixture.h"
#include "sandbox/conversion.h"

#define ALPHA SBX_API_VERSION_V1ALPHA1
#define BETA SBX_API_VERSION
#define SNAP SBX_ANNOTATION_V1ALPHA1_SANDBOX_STATE

static cJSON *parse(const char *s)
{
	cJSON *j = cJSON_Parse(s);
	ck_assert_msg(j != NULL, "bad JSON in test: %s", s);
	return j;
}

static cJSON *convert(const cJSON *obj, const char *to)
{
	cJSON *out = NULL;
	int rc = sbx_conversion_convert(&out, obj, to);
	ck_assert_msg(rc == 0, "conversion failed: %s", asb_error_last()->message);
	ck_assert_ptr_nonnull(out);
	return out;
}

/* A v1alpha1 Sandbox with `spec_extra` JSON members appended to spec. */
static cJSON *alpha(const char *spec_extra, const char *status)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
	         "{\"apiVersion\":\"" ALPHA "\",\"kind\":\"Sandbox\","
	         "\"metadata\":{\"name\":\"s\",\"namespace\":\"n\",\"labels\":{\"l\":\"1\"},"
	         "\"annotations\":{\"a\":\"1\"},\"managedFields\":[{\"manager\":\"kubectl\"}]},"
	         "\"spec\":{\"podTemplate\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},"
	         "\"service\":true,\"shutdownPolicy\":\"Delete\",\"shutdownTime\":\"2030-01-01T00:00:00Z\"%s%s}"
	         "%s%s}",
	         spec_extra ? "," : "", spec_extra ? spec_extra : "",
	         status ? ",\"status\":" : "", status ? status : "");
	return parse(buf);
}

/* A v1beta1 Sandbox with operatingMode `mode` (NULL: absent) and an optional snapshot. */
static cJSON *beta(const char *mode, const char *snapshot)
{
	cJSON *s = fx_load("sandbox.json");
	if (mode)
		fx_set_str(s, "spec.operatingMode", mode);
	fx_set_str(s, "status.nodeName", "node-1");
	if (snapshot)
		fx_annotation(s, SNAP, snapshot);
	return s;
}

static const cJSON *at(const cJSON *o, const char *path)
{
	return k8s_obj_at(o, path);
}

static long replicas(const cJSON *o)
{
	const cJSON *r = at(o, "spec.replicas");
	ck_assert_msg(cJSON_IsNumber(r), "spec.replicas missing");
	return (long)r->valuedouble;
}

/* --- v1alpha1 -> v1beta1 ------------------------------------------------- */

START_TEST(replicas_zero_is_suspended)
{
	cJSON *a = alpha("\"replicas\":0", "{\"replicas\":0,\"selector\":\"x=y\"}");
	cJSON *b = convert(a, BETA);
	ck_assert_str_eq(k8s_obj_str(b, "apiVersion"), BETA);
	ck_assert_str_eq(k8s_obj_str(b, "spec.operatingMode"), "Suspended");
	ck_assert_ptr_null(at(b, "spec.replicas"));
	ck_assert_ptr_null(at(b, "status.replicas"));
	ck_assert_str_eq(k8s_obj_str(b, "status.selector"), "x=y");
	/* other spec fields 1:1 */
	ck_assert(cJSON_IsTrue(at(b, "spec.service")));
	ck_assert_str_eq(k8s_obj_str(b, "spec.shutdownPolicy"), "Delete");
	ck_assert_str_eq(k8s_obj_str(b, "metadata.labels.l"), "1");
	/* the snapshot: the v1alpha1 object, without managedFields */
	const char *snap = k8s_obj_annotation(b, SNAP);
	ck_assert_ptr_nonnull(snap);
	cJSON *sj = parse(snap);
	ck_assert_str_eq(k8s_obj_str(sj, "apiVersion"), ALPHA);
	ck_assert_int_eq(replicas(sj), 0);
	ck_assert_ptr_null(at(sj, "metadata.managedFields"));
	ck_assert_str_eq(k8s_obj_str(sj, "metadata.annotations.a"), "1");
	cJSON_Delete(sj);
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(replicas_one_or_absent_is_running)
{
	const char *cases[] = { "\"replicas\":1", NULL, "\"replicas\":null" };
	for (int i = 0; i < 3; i++) {
		cJSON *a = alpha(cases[i], NULL);
		cJSON *b = convert(a, BETA);
		ck_assert_str_eq(k8s_obj_str(b, "spec.operatingMode"), "Running");
		ck_assert_ptr_null(at(b, "spec.replicas"));
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
}
END_TEST

START_TEST(old_snapshot_is_not_nested)
{
	cJSON *a = alpha("\"replicas\":1", NULL);
	fx_annotation(a, SNAP, "{\"old\":true}");
	cJSON *b = convert(a, BETA);
	cJSON *sj = parse(k8s_obj_annotation(b, SNAP));
	ck_assert_ptr_null(at(sj, "metadata.annotations." SNAP));
	ck_assert_ptr_null(at(sj, "old"));
	cJSON_Delete(sj);
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

/* --- v1beta1 -> v1alpha1 without snapshot ---------------------------------- */

START_TEST(suspended_is_replicas_zero)
{
	cJSON *b = beta("Suspended", NULL);
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(k8s_obj_str(a, "apiVersion"), ALPHA);
	ck_assert_int_eq(replicas(a), 0);
	ck_assert_ptr_null(at(a, "spec.operatingMode"));
	ck_assert_int_eq((int)at(a, "status.replicas")->valuedouble, 0);
	ck_assert_ptr_null(at(a, "status.nodeName"));
	/* podTemplate untouched */
	ck_assert_str_eq(k8s_obj_str(a, "spec.podTemplate.metadata.labels.app"), "agent");
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(running_or_empty_is_replicas_one)
{
	const char *modes[] = { "Running", "", NULL };
	for (int i = 0; i < 3; i++) {
		cJSON *b = beta(modes[i], NULL);
		cJSON *a = convert(b, ALPHA);
		ck_assert_int_eq(replicas(a), 1);
		ck_assert_int_eq((int)at(a, "status.replicas")->valuedouble, 1);
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
}
END_TEST

/* --- snapshot restore rules (docs/api.md#converting-sandbox) ---------------------------------------- */

static cJSON *restore(const char *mode, const char *snapshot)
{
	cJSON *b = beta(mode, snapshot);
	cJSON *a = convert(b, ALPHA);
	cJSON_Delete(b);
	ck_assert_msg(k8s_obj_annotation(a, SNAP) == NULL, "snapshot annotation must be stripped");
	return a;
}

START_TEST(snapshot_running_nil_stays_nil)
{
	cJSON *a = restore("Running", "{\"spec\":{},\"status\":{\"replicas\":1}}");
	ck_assert_ptr_null(at(a, "spec.replicas"));
	ck_assert_int_eq((int)at(a, "status.replicas")->valuedouble, 1);
	cJSON_Delete(a);
}
END_TEST

START_TEST(snapshot_running_zero_forced_to_one)
{
	cJSON *a = restore("Running", "{\"spec\":{\"replicas\":0},\"status\":{\"replicas\":0}}");
	ck_assert_int_eq(replicas(a), 1);
	/* status.replicas from the snapshot whatever the mode (may be stale) */
	ck_assert_int_eq((int)at(a, "status.replicas")->valuedouble, 0);
	cJSON_Delete(a);
}
END_TEST

START_TEST(snapshot_running_one_copied)
{
	cJSON *a = restore("Running", "{\"spec\":{\"replicas\":1}}");
	ck_assert_int_eq(replicas(a), 1);
	ck_assert_int_eq((int)at(a, "status.replicas")->valuedouble, 0);  /* absent in snapshot */
	cJSON_Delete(a);
}
END_TEST

START_TEST(snapshot_suspended_is_zero)
{
	cJSON *a = restore("Suspended", "{\"spec\":{\"replicas\":1},\"status\":{\"replicas\":1}}");
	ck_assert_int_eq(replicas(a), 0);
	ck_assert_int_eq((int)at(a, "status.replicas")->valuedouble, 1);
	cJSON_Delete(a);
}
END_TEST

START_TEST(snapshot_other_mode_keeps_base)
{
	cJSON *a = restore("", "{\"spec\":{}}");
	ck_assert_int_eq(replicas(a), 1);
	cJSON_Delete(a);
	a = restore(NULL, "{\"spec\":{\"replicas\":0}}");
	ck_assert_int_eq(replicas(a), 1);
	cJSON_Delete(a);
}
END_TEST

START_TEST(snapshot_only_annotation_removed)
{
	cJSON *b = beta("Running", "{}");
	fx_annotation(b, "keep", "me");
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(k8s_obj_annotation(a, "keep"), "me");
	ck_assert_ptr_null(k8s_obj_annotation(a, SNAP));
	cJSON_Delete(a);
	cJSON_Delete(b);
	/* a map left empty goes away (Go omitempty) */
	a = restore("Running", "{}");
	ck_assert_ptr_null(at(a, "metadata.annotations"));
	cJSON_Delete(a);
}
END_TEST

START_TEST(snapshot_invalid_fails)
{
	const char *bad[] = { "{not json", "[1,2]", "\"s\"", "{\"spec\":{\"replicas\":\"one\"}}", "{\"spec\":7}" };
	for (int i = 0; i < 5; i++) {
		cJSON *b = beta("Running", bad[i]);
		cJSON *a = (cJSON *)1;
		ck_assert_int_eq(sbx_conversion_convert(&a, b, ALPHA), ASB_EDECODE);
		ck_assert_ptr_null(a);
		ck_assert_msg(strncmp(asb_error_last()->message, "failed to unmarshal v1alpha1 Sandbox state: ",
		                      44) == 0, "message: %s", asb_error_last()->message);
		cJSON_Delete(b);
	}
}
END_TEST

/* --- round trips ---------------------------------------------------------------- */

START_TEST(round_trip_alpha_beta_alpha_lossless)
{
	const char *cases[] = { "\"replicas\":0", "\"replicas\":1", NULL };
	for (int i = 0; i < 3; i++) {
		cJSON *a = alpha(cases[i], i == 0 ? "{\"replicas\":0}" : "{\"replicas\":1}");
		cJSON_DeleteItemFromObject(cJSON_GetObjectItem(a, "metadata"), "managedFields");
		cJSON *b = convert(a, BETA);
		cJSON *back = convert(b, ALPHA);
		fx_assert_json(back, a);
		cJSON_Delete(a);
		cJSON_Delete(b);
		cJSON_Delete(back);
	}
}
END_TEST

START_TEST(round_trip_beta_alpha_beta)
{
	const char *modes[] = { "Running", "Suspended" };
	for (int i = 0; i < 2; i++) {
		cJSON *b = beta(modes[i], NULL);
		fx_del(b, "status");
		cJSON *a = convert(b, ALPHA);
		cJSON *back = convert(a, BETA);
		/* everything but the snapshot, and v1beta1's status.nodeName which
		 * v1alpha1 cannot hold, comes back */
		ck_assert_ptr_nonnull(k8s_obj_annotation(back, SNAP));
		fx_del(back, "metadata.annotations");  /* held only the snapshot */
		fx_del(back, "status");
		fx_assert_json(back, b);
		cJSON_Delete(b);
		cJSON_Delete(a);
		cJSON_Delete(back);
	}
}
END_TEST

/* Idle suspend (ours, docs/api.md#idle-suspend-and-resume): spec.idleTimeoutSeconds
 * and spec.idlePolicy are the same in both versions and survive both
 * directions, with and without a snapshot, suspended or running. */
START_TEST(idle_fields_survive_both_directions)
{
	const char *modes[] = { "Running", "Suspended" };
	for (int i = 0; i < 2; i++) {
		cJSON *b = beta(modes[i], NULL);
		fx_set(b, "spec.idleTimeoutSeconds", cJSON_CreateNumber(900));
		fx_set_str(b, "spec.idlePolicy", "Delete");
		cJSON *a = convert(b, ALPHA);
		ck_assert_int_eq((long)at(a, "spec.idleTimeoutSeconds")->valuedouble, 900);
		ck_assert_str_eq(at(a, "spec.idlePolicy")->valuestring, "Delete");
		ck_assert_int_eq(replicas(a), i == 0 ? 1 : 0);
		cJSON *back = convert(a, BETA);
		ck_assert(cJSON_Compare(at(back, "spec"), at(b, "spec"), true));
		/* edited in v1alpha1 (the snapshot says otherwise): the edit wins */
		fx_set(back, "spec.idleTimeoutSeconds", cJSON_CreateNumber(60));
		fx_del(back, "spec.idlePolicy");
		cJSON *a2 = convert(back, ALPHA);
		ck_assert_int_eq((long)at(a2, "spec.idleTimeoutSeconds")->valuedouble, 60);
		ck_assert_ptr_null(at(a2, "spec.idlePolicy"));
		cJSON_Delete(b);
		cJSON_Delete(a);
		cJSON_Delete(back);
		cJSON_Delete(a2);
	}
	/* v1alpha1 -> v1beta1 -> v1alpha1 is lossless with them */
	cJSON *a = alpha("\"replicas\":0,\"idleTimeoutSeconds\":30,\"idlePolicy\":\"Suspend\"",
	                 "{\"replicas\":0}");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(a, "metadata"), "managedFields");
	cJSON *b = convert(a, BETA);
	ck_assert_int_eq((long)at(b, "spec.idleTimeoutSeconds")->valuedouble, 30);
	ck_assert_str_eq(at(b, "spec.idlePolicy")->valuestring, "Suspend");
	cJSON *back = convert(b, ALPHA);
	fx_assert_json(back, a);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(back);
	/* absent stays absent */
	b = beta("Running", NULL);
	a = convert(b, ALPHA);
	ck_assert_ptr_null(at(a, "spec.idleTimeoutSeconds"));
	ck_assert_ptr_null(at(a, "spec.idlePolicy"));
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(same_version_is_copied)
{
	cJSON *b = beta("Running", "{}");
	cJSON *c = convert(b, BETA);
	fx_assert_json(c, b);
	cJSON_Delete(b);
	cJSON_Delete(c);
}
END_TEST

START_TEST(bad_objects_rejected)
{
	cJSON *out = NULL;
	cJSON *o = parse("{\"kind\":\"Sandbox\"}");
	ck_assert_int_eq(sbx_conversion_convert(&out, o, BETA), ASB_EINVAL);
	cJSON_Delete(o);
	o = parse("{\"apiVersion\":\"" ALPHA "\",\"kind\":\"Pod\"}");
	ck_assert_int_eq(sbx_conversion_convert(&out, o, BETA), ASB_EINVAL);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "unsupported kind Pod"));
	cJSON_Delete(o);
	o = parse("{\"apiVersion\":\"agents.x-k8s.io/v2\",\"kind\":\"Sandbox\"}");
	ck_assert_int_eq(sbx_conversion_convert(&out, o, BETA), ASB_EINVAL);
	cJSON_Delete(o);
	o = alpha("\"replicas\":1", NULL);
	ck_assert_int_eq(sbx_conversion_convert(&out, o, "other.io/v1beta1"), ASB_EINVAL);
	ck_assert_int_eq(sbx_conversion_convert(&out, o, "v1beta1"), ASB_EINVAL);
	ck_assert_int_eq(sbx_conversion_convert(&out, o, "agents.x-k8s.io/v3"), ASB_EINVAL);
	ck_assert_int_eq(sbx_conversion_convert(&out, NULL, BETA), ASB_EINVAL);
	ck_assert_int_eq(sbx_conversion_convert(NULL, o, BETA), ASB_EINVAL);
	cJSON_Delete(o);
	o = alpha("\"replicas\":\"0\"", NULL);
	ck_assert_int_eq(sbx_conversion_convert(&out, o, BETA), ASB_EDECODE);
	cJSON_Delete(o);
	o = alpha("\"replicas\":0.5", NULL);
	ck_assert_int_eq(sbx_conversion_convert(&out, o, BETA), ASB_EDECODE);
	cJSON_Delete(o);
	o = parse("{\"apiVersion\":\"" BETA "\",\"kind\":\"Sandbox\",\"spec\":{\"operatingMode\":3}}");
	ck_assert_int_eq(sbx_conversion_convert(&out, o, ALPHA), ASB_EDECODE);
	cJSON_Delete(o);
	o = parse("{\"apiVersion\":\"" BETA "\",\"kind\":\"Sandbox\",\"spec\":[]}");
	ck_assert_int_eq(sbx_conversion_convert(&out, o, ALPHA), ASB_EDECODE);
	cJSON_Delete(o);
	ck_assert_ptr_null(out);
}
END_TEST

/* --- ConversionReview ------------------------------------------------------------- */

static cJSON *review(const char *body, char **failure)
{
	char *resp = NULL;
	int rc = sbx_conversion_review(body, strlen(body), &resp, failure);
	ck_assert_msg(rc == 0, "review failed: %s", asb_error_last()->message);
	cJSON *j = parse(resp);
	free(resp);
	return j;
}

START_TEST(review_v1_success)
{
	cJSON *b = beta("Suspended", NULL);
	char *obj = cJSON_PrintUnformatted(b);
	char body[8192];
	snprintf(body, sizeof(body),
	         "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
	         "\"request\":{\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\","
	         "\"desiredAPIVersion\":\"" ALPHA "\",\"objects\":[%s,%s]}}", obj, obj);
	char *failure = (char *)1;
	cJSON *r = review(body, &failure);
	ck_assert_ptr_null(failure);
	ck_assert_str_eq(k8s_obj_str(r, "apiVersion"), "apiextensions.k8s.io/v1");
	ck_assert_str_eq(k8s_obj_str(r, "kind"), "ConversionReview");
	ck_assert_str_eq(k8s_obj_str(r, "response.uid"), "705ab4f5-6393-11e8-b7cc-42010a800002");
	ck_assert_str_eq(k8s_obj_str(r, "response.result.status"), "Success");
	const cJSON *objs = at(r, "response.convertedObjects");
	ck_assert_int_eq(cJSON_GetArraySize(objs), 2);
	ck_assert_str_eq(k8s_obj_str(cJSON_GetArrayItem(objs, 1), "apiVersion"), ALPHA);
	ck_assert_int_eq(replicas(cJSON_GetArrayItem(objs, 0)), 0);
	ck_assert_ptr_null(at(r, "request"));
	cJSON_Delete(r);
	free(obj);
	cJSON_Delete(b);
}
END_TEST

START_TEST(review_v1beta1_envelope)
{
	cJSON *r = review("{\"apiVersion\":\"apiextensions.k8s.io/v1beta1\",\"kind\":\"ConversionReview\","
	                  "\"request\":{\"uid\":\"u1\",\"desiredAPIVersion\":\"" BETA "\",\"objects\":[]}}", NULL);
	ck_assert_str_eq(k8s_obj_str(r, "apiVersion"), "apiextensions.k8s.io/v1beta1");
	ck_assert_str_eq(k8s_obj_str(r, "response.uid"), "u1");
	ck_assert_str_eq(k8s_obj_str(r, "response.result.status"), "Success");
	ck_assert_int_eq(cJSON_GetArraySize(at(r, "response.convertedObjects")), 0);
	cJSON_Delete(r);
}
END_TEST

START_TEST(review_failure_result)
{
	const char *bodies[] = {
		/* an object of an unknown kind */
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"u2\","
		"\"desiredAPIVersion\":\"" BETA "\",\"objects\":[{\"apiVersion\":\"" ALPHA "\",\"kind\":\"Sandbox\","
		"\"metadata\":{\"name\":\"ok\"}},{\"apiVersion\":\"" ALPHA "\",\"kind\":\"Gadget\","
		"\"metadata\":{\"name\":\"g\",\"namespace\":\"n\"}}]}}",
		/* a corrupt snapshot */
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"u2\","
		"\"desiredAPIVersion\":\"" ALPHA "\",\"objects\":[{\"apiVersion\":\"" BETA "\",\"kind\":\"Sandbox\","
		"\"metadata\":{\"name\":\"x\",\"annotations\":{\"" SNAP "\":\"{bad\"}}}]}}",
		/* missing fields */
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"u2\","
		"\"objects\":[]}}",
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"u2\","
		"\"desiredAPIVersion\":\"" BETA "\",\"objects\":{}}}",
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"
		"\"desiredAPIVersion\":\"" BETA "\",\"objects\":[]}}",
		/* objects that are not objects */
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"u2\","
		"\"desiredAPIVersion\":\"" BETA "\",\"objects\":[1,null]}}",
	};
	const char *want[] = { "objects[1] (Gadget n/g)", "failed to unmarshal v1alpha1 Sandbox state",
	                       "desiredAPIVersion is required", "objects must be a list",
	                       "uid is required", "objects[0]" };
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		char *failure = NULL;
		cJSON *r = review(bodies[i], &failure);
		ck_assert_str_eq(k8s_obj_str(r, "response.result.status"), "Failure");
		const char *msg = k8s_obj_str(r, "response.result.message");
		ck_assert_msg(msg && strstr(msg, want[i]), "case %zu: message %s", i, msg ? msg : "(none)");
		ck_assert_ptr_nonnull(failure);
		ck_assert_str_eq(failure, msg);
		ck_assert_int_eq(cJSON_GetArraySize(at(r, "response.convertedObjects")), 0);
		free(failure);
		cJSON_Delete(r);
	}
}
END_TEST

START_TEST(review_not_a_review)
{
	const char *bodies[] = {
		"", "not json", "[]", "{}", "{\"kind\":\"ConversionReview\"}",
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}}",
		"{\"apiVersion\":\"apiextensions.k8s.io/v2\",\"kind\":\"ConversionReview\",\"request\":{}}",
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\"}",
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":[]}",
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{",
	};
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		char *resp = (char *)1, *failure = (char *)1;
		ck_assert_int_eq(sbx_conversion_review(bodies[i], strlen(bodies[i]), &resp, &failure), ASB_EDECODE);
		ck_assert_ptr_null(resp);
		ck_assert_ptr_null(failure);
	}
	/* length is honoured: no NUL terminator needed */
	const char body[] = "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
	                    "\"request\":{\"uid\":\"u\",\"desiredAPIVersion\":\"" BETA "\",\"objects\":[]}}garbage";
	char *resp = NULL;
	ck_assert_int_eq(sbx_conversion_review(body, sizeof(body) - 1 - 7, &resp, NULL), 0);
	free(resp);
	ck_assert_int_eq(sbx_conversion_review(NULL, 0, &resp, NULL), ASB_EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("conversion");
	TCase *tc = tcase_create("sandbox");
	tcase_add_test(tc, replicas_zero_is_suspended);
	tcase_add_test(tc, replicas_one_or_absent_is_running);
	tcase_add_test(tc, old_snapshot_is_not_nested);
	tcase_add_test(tc, suspended_is_replicas_zero);
	tcase_add_test(tc, running_or_empty_is_replicas_one);
	tcase_add_test(tc, snapshot_running_nil_stays_nil);
	tcase_add_test(tc, snapshot_running_zero_forced_to_one);
	tcase_add_test(tc, snapshot_running_one_copied);
	tcase_add_test(tc, snapshot_suspended_is_zero);
	tcase_add_test(tc, snapshot_other_mode_keeps_base);
	tcase_add_test(tc, snapshot_only_annotation_removed);
	tcase_add_test(tc, snapshot_invalid_fails);
	tcase_add_test(tc, round_trip_alpha_beta_alpha_lossless);
	tcase_add_test(tc, round_trip_beta_alpha_beta);
	tcase_add_test(tc, idle_fields_survive_both_directions);
	tcase_add_test(tc, same_version_is_copied);
	tcase_add_test(tc, bad_objects_rejected);
	suite_add_tcase(s, tc);
	tc = tcase_create("review");
	tcase_add_test(tc, review_v1_success);
	tcase_add_test(tc, review_v1beta1_envelope);
	tcase_add_test(tc, review_failure_result);
	tcase_add_test(tc, review_not_a_review);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
