/*
 * test_error.c - the thread-local last error (libasb/src/error.c) and the
 * decoding of API failure answers into codes and messages (status.h).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/common.h"
#include "status.h"

START_TEST(test_last_error_starts_empty)
{
	const asb_error *e = asb_error_last();
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(e->message);
	ck_assert_ptr_nonnull(e->reason);
	ck_assert_int_eq(e->code, ASB_OK);
}
END_TEST

START_TEST(test_set_and_clear)
{
	int rc = asb_error_set(ASB_ENOTFOUND, 404, "NotFound", "thing %s %d", "x", 7);
	ck_assert_int_eq(rc, ASB_ENOTFOUND);
	const asb_error *e = asb_error_last();
	ck_assert_int_eq(e->code, ASB_ENOTFOUND);
	ck_assert_int_eq(e->http_status, 404);
	ck_assert_str_eq(e->reason, "NotFound");
	ck_assert_str_eq(e->message, "thing x 7");

	asb_error_clear();
	e = asb_error_last();
	ck_assert_int_eq(e->code, ASB_OK);
	ck_assert_int_eq(e->http_status, 0);
	ck_assert_str_eq(e->reason, "");
	ck_assert_str_eq(e->message, "");
}
END_TEST

START_TEST(test_set_null_reason)
{
	asb_error_set(ASB_EINVAL, 0, NULL, "bad");
	ck_assert_str_eq(asb_error_last()->reason, "");
	ck_assert_str_eq(asb_error_last()->message, "bad");
}
END_TEST

START_TEST(test_wrap_previous_message)
{
	/* Wrapping the last message in a new one must not corrupt it. */
	asb_error_set(ASB_ETRANSPORT, 0, "Inner", "connection refused");
	asb_error_set(ASB_ETRANSPORT, 0, asb_error_last()->reason,
	              "listing pods: %s", asb_error_last()->message);
	ck_assert_str_eq(asb_error_last()->message,
	                 "listing pods: connection refused");
	ck_assert_str_eq(asb_error_last()->reason, "Inner");
}
END_TEST

START_TEST(test_truncation)
{
	char big[5000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	asb_error_set(ASB_ERROR, 0, NULL, "%s", big);
	const char *m = asb_error_last()->message;
	size_t len = strlen(m);
	ck_assert_uint_lt(len, 1024);
	ck_assert_uint_gt(len, 900);
	ck_assert_str_eq(m + len - 3, "...");
}
END_TEST

START_TEST(test_truncation_keeps_utf8_whole)
{
	/* 3-byte characters (U+20AC) straddling the cut must not be split. */
	char big[4000] = "";
	size_t n = 0;
	while (n + 3 < sizeof(big)) {
		memcpy(big + n, "\xe2\x82\xac", 3);
		n += 3;
	}
	big[n] = '\0';
	for (int shift = 0; shift < 3; shift++) {
		asb_error_set(ASB_ERROR, 0, NULL, "%.*s%s", shift, "xx", big);
		const unsigned char *m = (const unsigned char *)asb_error_last()->message;
		size_t len = strlen((const char *)m);
		ck_assert_str_eq((const char *)m + len - 3, "...");
		/* Before the "...", every euro sign is whole. */
		size_t body = len - 3 - (size_t)shift;
		ck_assert_uint_eq(body % 3, 0);
		ck_assert_int_eq(m[len - 4], 0xac);
	}
	/* A long reason is truncated too. */
	char reason[200];
	memset(reason, 'R', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	asb_error_set(ASB_ERROR, 0, reason, "x");
	ck_assert_uint_lt(strlen(asb_error_last()->reason), 64);
}
END_TEST

static void *other_thread(void *arg)
{
	(void)arg;
	/* A new thread starts with no error, and its error stays its own. */
	int clean = asb_error_last()->code == ASB_OK &&
	            strcmp(asb_error_last()->message, "") == 0;
	asb_error_set(ASB_EGONE, 410, "Expired", "other thread");
	return clean ? (void *)1 : NULL;
}

START_TEST(test_thread_local)
{
	pthread_t t;
	void *res;
	asb_error_set(ASB_ECONFLICT, 409, "Conflict", "main thread");
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(t, &res), 0);
	ck_assert_ptr_nonnull(res);
	ck_assert_int_eq(asb_error_last()->code, ASB_ECONFLICT);
	ck_assert_str_eq(asb_error_last()->message, "main thread");
}
END_TEST

START_TEST(test_strerror)
{
	static const int codes[] = {
		ASB_OK, ASB_ERROR, ASB_ENOMEM, ASB_EINVAL, ASB_ECONFIG,
		ASB_ETRANSPORT, ASB_EDECODE, ASB_ESHUTDOWN, ASB_ECANCELED,
		ASB_ETIMEOUT, ASB_ETOOLARGE, ASB_EBADREQUEST, ASB_EUNAUTHORIZED, ASB_EFORBIDDEN,
		ASB_ENOTFOUND, ASB_EMETHODNOTALLOWED, ASB_ENOTACCEPTABLE,
		ASB_EALREADYEXISTS, ASB_ECONFLICT, ASB_EGONE,
		ASB_EUNSUPPORTEDMEDIA, ASB_EINVALID, ASB_ETOOMANYREQUESTS,
		ASB_EINTERNAL, ASB_ESERVICEUNAVAILABLE, ASB_ESERVERTIMEOUT, ASB_EAPI,
	};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const char *s = asb_strerror(codes[i]);
		ck_assert_ptr_nonnull(s);
		ck_assert_str_ne(s, "unknown error");
		/* Each name is distinct. */
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(s, asb_strerror(codes[j]));
	}
	ck_assert_str_eq(asb_strerror(ASB_ENOTFOUND), "not found");
	ck_assert_str_eq(asb_strerror(12345), "unknown error");
	ck_assert_str_eq(asb_strerror(-999), "unknown error");
}
END_TEST

/* Every meta/v1 StatusReason with the HTTP code the server sends with it. */
static const struct {
	const char *reason;
	int http;
	int code;
} reasons[] = {
	{ "BadRequest", 400, ASB_EBADREQUEST },
	{ "Unauthorized", 401, ASB_EUNAUTHORIZED },
	{ "Forbidden", 403, ASB_EFORBIDDEN },
	{ "NotFound", 404, ASB_ENOTFOUND },
	{ "MethodNotAllowed", 405, ASB_EMETHODNOTALLOWED },
	{ "NotAcceptable", 406, ASB_ENOTACCEPTABLE },
	{ "AlreadyExists", 409, ASB_EALREADYEXISTS },
	{ "Conflict", 409, ASB_ECONFLICT },
	{ "Gone", 410, ASB_EGONE },
	{ "Expired", 410, ASB_EGONE },
	{ "RequestEntityTooLarge", 413, ASB_EAPI },
	{ "UnsupportedMediaType", 415, ASB_EUNSUPPORTEDMEDIA },
	{ "Invalid", 422, ASB_EINVALID },
	{ "TooManyRequests", 429, ASB_ETOOMANYREQUESTS },
	{ "InternalError", 500, ASB_EINTERNAL },
	{ "ServerTimeout", 500, ASB_ESERVERTIMEOUT },
	{ "ServiceUnavailable", 503, ASB_ESERVICEUNAVAILABLE },
	{ "Timeout", 504, ASB_ESERVERTIMEOUT },
};
#define NREASONS (sizeof(reasons) / sizeof(reasons[0]))

START_TEST(test_code_from_reason)
{
	ck_assert_int_eq(k8s_error_code_from_status(reasons[_i].reason,
	                                            reasons[_i].http),
	                 reasons[_i].code);
	/* The reason wins over an unrelated HTTP code. */
	ck_assert_int_eq(k8s_error_code_from_status(reasons[_i].reason, 500),
	                 reasons[_i].code);
}
END_TEST

START_TEST(test_code_from_http)
{
	static const struct { int http; int code; } table[] = {
		{ 200, ASB_OK }, { 201, ASB_OK }, { 202, ASB_OK }, { 204, ASB_OK },
		{ 400, ASB_EBADREQUEST }, { 401, ASB_EUNAUTHORIZED },
		{ 403, ASB_EFORBIDDEN }, { 404, ASB_ENOTFOUND },
		{ 405, ASB_EMETHODNOTALLOWED }, { 406, ASB_ENOTACCEPTABLE },
		{ 409, ASB_ECONFLICT }, { 410, ASB_EGONE },
		{ 415, ASB_EUNSUPPORTEDMEDIA }, { 422, ASB_EINVALID },
		{ 429, ASB_ETOOMANYREQUESTS }, { 500, ASB_EINTERNAL },
		{ 503, ASB_ESERVICEUNAVAILABLE }, { 504, ASB_ESERVERTIMEOUT },
		{ 302, ASB_EAPI }, { 418, ASB_EAPI }, { 502, ASB_EAPI },
		{ 0, ASB_EAPI }, { 100, ASB_EAPI },
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		ck_assert_int_eq(k8s_error_code_from_status(NULL, table[i].http),
		                 table[i].code);
		ck_assert_int_eq(k8s_error_code_from_status("", table[i].http),
		                 table[i].code);
		/* An unknown reason falls back to the HTTP code. */
		ck_assert_int_eq(k8s_error_code_from_status("SomethingNew",
		                                            table[i].http),
		                 table[i].code);
	}
}
END_TEST

static int record(int http, const char *body, const char *subject)
{
	return k8s__status_record(http, body, body ? strlen(body) : 0, subject);
}

START_TEST(test_status_each_reason)
{
	char body[512];
	snprintf(body, sizeof(body),
	         "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
	         "\"status\":\"Failure\",\"message\":\"the message\","
	         "\"reason\":\"%s\",\"code\":%d}",
	         reasons[_i].reason, reasons[_i].http);
	int rc = record(reasons[_i].http, body, "Pod \"ns/x\"");
	ck_assert_int_eq(rc, reasons[_i].code);
	const asb_error *e = asb_error_last();
	ck_assert_int_eq(e->code, reasons[_i].code);
	ck_assert_int_eq(e->http_status, reasons[_i].http);
	ck_assert_str_eq(e->reason, reasons[_i].reason);
	char want[256];
	snprintf(want, sizeof(want), "Pod \"ns/x\": the message (%s)",
	         reasons[_i].reason);
	ck_assert_str_eq(e->message, want);
}
END_TEST

START_TEST(test_status_not_found_message)
{
	const char *body =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
		"\"status\":\"Failure\",\"message\":\"pods \\\"x\\\" not found\","
		"\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},"
		"\"code\":404}";
	ck_assert_int_eq(record(404, body, "Pod \"default/x\""), ASB_ENOTFOUND);
	ck_assert_str_eq(asb_error_last()->message,
	                 "Pod \"default/x\": pods \"x\" not found (NotFound)");
}
END_TEST

START_TEST(test_status_causes)
{
	/* Causes the message already contains are not repeated; others are
	 * appended with their field. */
	const char *body =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		"\"message\":\"ConfigMap \\\"Bad\\\" is invalid: metadata.name: "
		"Invalid value: \\\"Bad\\\": must be lowercase\","
		"\"reason\":\"Invalid\",\"details\":{\"name\":\"Bad\",\"kind\":"
		"\"ConfigMap\",\"causes\":[{\"reason\":\"FieldValueInvalid\","
		"\"message\":\"Invalid value: \\\"Bad\\\": must be lowercase\","
		"\"field\":\"metadata.name\"},{\"reason\":\"FieldValueRequired\","
		"\"message\":\"Required value\",\"field\":\"data.key\"},"
		"{\"message\":\"no field here\"},{\"field\":\"no.message\"}]},"
		"\"code\":422}";
	ck_assert_int_eq(record(422, body, "ConfigMap \"ns/Bad\""), ASB_EINVALID);
	ck_assert_str_eq(asb_error_last()->message,
	                 "ConfigMap \"ns/Bad\": ConfigMap \"Bad\" is invalid: "
	                 "metadata.name: Invalid value: \"Bad\": must be lowercase"
	                 "; data.key: Required value; no field here (Invalid)");
}
END_TEST

START_TEST(test_status_without_reason)
{
	/* A Status with no reason: the HTTP code decides and is shown. */
	const char *body = "{\"kind\":\"Status\",\"status\":\"Failure\","
	                   "\"message\":\"something odd\",\"code\":409}";
	ck_assert_int_eq(record(409, body, "Lease \"kube-system/l\""), ASB_ECONFLICT);
	ck_assert_str_eq(asb_error_last()->message,
	                 "Lease \"kube-system/l\": something odd (HTTP 409)");
	ck_assert_str_eq(asb_error_last()->reason, "");
}
END_TEST

START_TEST(test_status_without_message)
{
	const char *body = "{\"kind\":\"Status\",\"reason\":\"Forbidden\",\"code\":403}";
	ck_assert_int_eq(record(403, body, NULL), ASB_EFORBIDDEN);
	ck_assert_str_eq(asb_error_last()->message, "forbidden (Forbidden)");
}
END_TEST

START_TEST(test_non_status_bodies)
{
	/* A proxy's HTML page. */
	ck_assert_int_eq(record(502, "<html>\r\n<body>Bad Gateway</body>\n</html>",
	                        "Pod \"a/b\""), ASB_EAPI);
	ck_assert_str_eq(asb_error_last()->message,
	                 "Pod \"a/b\": HTTP 502 (API error): <html>  <body>Bad "
	                 "Gateway</body> </html>");
	ck_assert_int_eq(asb_error_last()->http_status, 502);
	ck_assert_str_eq(asb_error_last()->reason, "");

	/* No body at all. */
	ck_assert_int_eq(record(503, NULL, "Pod \"a/b\""), ASB_ESERVICEUNAVAILABLE);
	ck_assert_str_eq(asb_error_last()->message,
	                 "Pod \"a/b\": HTTP 503 (service unavailable)");

	/* JSON, but not a Status: the reason field is not trusted. */
	ck_assert_int_eq(record(404, "{\"reason\":\"AlreadyExists\"}", NULL),
	                 ASB_ENOTFOUND);
	ck_assert_str_eq(asb_error_last()->message,
	                 "HTTP 404 (not found): {\"reason\":\"AlreadyExists\"}");

	/* Plain text 401 from an authenticating proxy. */
	ck_assert_int_eq(record(401, "Unauthorized\n", "Pod list"), ASB_EUNAUTHORIZED);
	ck_assert_str_eq(asb_error_last()->message,
	                 "Pod list: HTTP 401 (unauthorized): Unauthorized");

	/* A 2xx handed over by mistake is still a failure. */
	ck_assert_int_eq(record(200, "oops", NULL), ASB_EAPI);
}
END_TEST

START_TEST(test_non_status_long_body)
{
	char body[1000];
	memset(body, 'z', sizeof(body) - 1);
	body[sizeof(body) - 1] = '\0';
	/* A two-byte character across the 200-byte cut is dropped whole. */
	memcpy(body + 199, "\xc3\xa9", 2);
	ck_assert_int_eq(record(500, body, NULL), ASB_EINTERNAL);
	const char *m = asb_error_last()->message;
	const char *prefix = "HTTP 500 (internal server error): ";
	ck_assert_int_eq(strncmp(m, prefix, strlen(prefix)), 0);
	ck_assert_uint_eq(strlen(m), strlen(prefix) + 199 + 3);
	ck_assert_str_eq(m + strlen(m) - 4, "z...");
}
END_TEST

START_TEST(test_status_json)
{
	/* A watch ERROR event carries a Status and no HTTP code. */
	cJSON *st = cJSON_Parse("{\"kind\":\"Status\",\"apiVersion\":\"v1\","
	                        "\"status\":\"Failure\",\"message\":\"too old "
	                        "resource version: 1 (2000)\",\"reason\":\"Expired\","
	                        "\"code\":410}");
	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(k8s__status_record_json(st, 0, "watch Pod"), ASB_EGONE);
	ck_assert_int_eq(asb_error_last()->http_status, 410);
	ck_assert_str_eq(asb_error_last()->message,
	                 "watch Pod: too old resource version: 1 (2000) (Expired)");
	cJSON_Delete(st);

	/* No reason, only a code. */
	st = cJSON_Parse("{\"kind\":\"Status\",\"code\":410,\"message\":\"gone\"}");
	ck_assert_int_eq(k8s__status_record_json(st, 0, NULL), ASB_EGONE);
	cJSON_Delete(st);

	/* Neither: an API error all the same. */
	st = cJSON_Parse("{\"message\":\"?\"}");
	ck_assert_int_eq(k8s__status_record_json(st, 0, NULL), ASB_EAPI);
	cJSON_Delete(st);

	st = cJSON_Parse("[1,2]");
	ck_assert_int_eq(k8s__status_record_json(st, 0, "x"), ASB_EDECODE);
	cJSON_Delete(st);
	ck_assert_int_eq(k8s__status_record_json(NULL, 0, "x"), ASB_EDECODE);
}
END_TEST

static Suite *error_suite(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("last_error");
	tcase_add_test(tc, test_last_error_starts_empty);
	tcase_add_test(tc, test_set_and_clear);
	tcase_add_test(tc, test_set_null_reason);
	tcase_add_test(tc, test_wrap_previous_message);
	tcase_add_test(tc, test_truncation);
	tcase_add_test(tc, test_truncation_keeps_utf8_whole);
	tcase_add_test(tc, test_thread_local);
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);

	tc = tcase_create("status");
	tcase_add_loop_test(tc, test_code_from_reason, 0, NREASONS);
	tcase_add_test(tc, test_code_from_http);
	tcase_add_loop_test(tc, test_status_each_reason, 0, NREASONS);
	tcase_add_test(tc, test_status_not_found_message);
	tcase_add_test(tc, test_status_causes);
	tcase_add_test(tc, test_status_without_reason);
	tcase_add_test(tc, test_status_without_message);
	tcase_add_test(tc, test_non_status_bodies);
	tcase_add_test(tc, test_non_status_long_body);
	tcase_add_test(tc, test_status_json);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(error_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
