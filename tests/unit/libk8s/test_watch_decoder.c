/*
 * test_watch_decoder.c - watch stream framing (libk8s/src/watch_decoder.c):
 * any chunking of the same bytes must give the same events.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "watch_decoder.h"

#define MAX_EVENTS 32

/* What the callback saw. */
typedef struct {
	int n;
	k8s_watch_event_type types[MAX_EVENTS];
	char names[MAX_EVENTS][64];
	char data[MAX_EVENTS][64];
	int stop_after;   /* return non-zero after this many events; 0: never */
} seen;

static int collect(k8s_watch_event_type type, cJSON *object, void *ud)
{
	seen *s = ud;
	ck_assert_int_lt(s->n, MAX_EVENTS);
	ck_assert(cJSON_IsObject(object));
	s->types[s->n] = type;
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(object, "metadata");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(object, "data");
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s",
	         cJSON_IsString(name) ? name->valuestring : "");
	snprintf(s->data[s->n], sizeof(s->data[0]), "%s",
	         cJSON_IsString(data) ? data->valuestring : "");
	s->n++;
	cJSON_Delete(object);  /* the callback owns the object */
	return s->stop_after && s->n >= s->stop_after;
}

static k8s__watch_decoder *new_decoder(seen *s, size_t max_line)
{
	k8s__watch_decoder *d = NULL;
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(k8s__watch_decoder_new(&d, max_line, "watch Pod", collect, s), 0);
	ck_assert_ptr_nonnull(d);
	return d;
}

static int feed_str(k8s__watch_decoder *d, const char *s)
{
	return k8s__watch_decoder_feed(d, s, strlen(s));
}

/* Three events; strings hold a multi-byte character, an escaped newline
 * and escaped quotes, so that cuts land inside each of them. */
static const char stream[] =
	"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\","
	"\"resourceVersion\":\"10\"},\"data\":\"caf\xc3\xa9 \xe2\x82\xac\"}}\n"
	"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p1\"},"
	"\"data\":\"line1\\nline2 \\\"q\\\" \\u00e9\"}}\n"
	"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"p2\"},\"n\":12345.5}}\n";

static void assert_stream_events(const seen *s)
{
	ck_assert_int_eq(s->n, 3);
	ck_assert_int_eq(s->types[0], K8S_WATCH_ADDED);
	ck_assert_int_eq(s->types[1], K8S_WATCH_MODIFIED);
	ck_assert_int_eq(s->types[2], K8S_WATCH_DELETED);
	ck_assert_str_eq(s->names[0], "p1");
	ck_assert_str_eq(s->names[1], "p1");
	ck_assert_str_eq(s->names[2], "p2");
	ck_assert_str_eq(s->data[0], "caf\xc3\xa9 \xe2\x82\xac");
	ck_assert_str_eq(s->data[1], "line1\nline2 \"q\" \xc3\xa9");
}

START_TEST(test_whole_stream_one_chunk)
{
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	asb_error_clear();
	ck_assert_int_eq(k8s__watch_decoder_feed(d, stream, strlen(stream)), 0);
	/* Success records no error. */
	ck_assert_int_eq(asb_error_last()->code, ASB_OK);
	ck_assert_str_eq(asb_error_last()->message, "");
	assert_stream_events(&s);
	ck_assert_uint_eq(k8s__watch_decoder_events(d), 3);
	ck_assert_int_eq(k8s__watch_decoder_finish(d), 0);
	k8s__watch_decoder_free(d);
}
END_TEST

START_TEST(test_split_at_every_position)
{
	size_t len = strlen(stream);
	for (size_t cut = 0; cut <= len; cut++) {
		seen s;
		k8s__watch_decoder *d = new_decoder(&s, 0);
		ck_assert_int_eq(k8s__watch_decoder_feed(d, stream, cut), 0);
		ck_assert_int_eq(k8s__watch_decoder_feed(d, stream + cut, len - cut), 0);
		ck_assert_int_eq(k8s__watch_decoder_finish(d), 0);
		assert_stream_events(&s);
		k8s__watch_decoder_free(d);
	}
}
END_TEST

START_TEST(test_split_twice_everywhere)
{
	/* Three chunks: every pair of cut positions. */
	size_t len = strlen(stream);
	for (size_t a = 0; a <= len; a += 3) {
		for (size_t b = a; b <= len; b += 5) {
			seen s;
			k8s__watch_decoder *d = new_decoder(&s, 0);
			ck_assert_int_eq(k8s__watch_decoder_feed(d, stream, a), 0);
			ck_assert_int_eq(k8s__watch_decoder_feed(d, stream + a, b - a), 0);
			ck_assert_int_eq(k8s__watch_decoder_feed(d, stream + b, len - b), 0);
			assert_stream_events(&s);
			k8s__watch_decoder_free(d);
		}
	}
}
END_TEST

START_TEST(test_byte_by_byte)
{
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	for (size_t i = 0; stream[i]; i++) {
		ck_assert_int_eq(k8s__watch_decoder_feed(d, stream + i, 1), 0);
		/* An event is delivered exactly when its newline arrives. */
		if (stream[i] != '\n')
			continue;
		size_t lines = 0;
		for (size_t j = 0; j <= i; j++)
			lines += stream[j] == '\n';
		ck_assert_int_eq(s.n, (int)lines);
	}
	assert_stream_events(&s);
	k8s__watch_decoder_free(d);
}
END_TEST

START_TEST(test_bookmark)
{
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	ck_assert_int_eq(feed_str(d, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
	                             "\"apiVersion\":\"v1\",\"metadata\":{"
	                             "\"resourceVersion\":\"12746\"}}}\n"), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.types[0], K8S_WATCH_BOOKMARK);
	k8s__watch_decoder_free(d);
}
END_TEST

START_TEST(test_error_gone)
{
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	int rc = feed_str(d,
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
		"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
		"\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource "
		"version: 5 (900)\",\"reason\":\"Expired\",\"code\":410}}\n"
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"never\"}}}\n");
	ck_assert_int_eq(rc, ASB_EGONE);
	/* The event before the ERROR was delivered; nothing after it. */
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(asb_error_last()->code, ASB_EGONE);
	ck_assert_int_eq(asb_error_last()->http_status, 410);
	ck_assert_str_eq(asb_error_last()->reason, "Expired");
	ck_assert_str_eq(asb_error_last()->message,
	                 "watch Pod: too old resource version: 5 (900) (Expired)");
	/* Sticky: later data is not looked at. */
	ck_assert_int_eq(feed_str(d, "{\"type\":\"ADDED\",\"object\":{}}\n"), ASB_EGONE);
	ck_assert_int_eq(k8s__watch_decoder_finish(d), ASB_EGONE);
	ck_assert_int_eq(s.n, 1);
	k8s__watch_decoder_free(d);
}
END_TEST

START_TEST(test_error_gone_code_only)
{
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	ck_assert_int_eq(feed_str(d, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
	                             "\"code\":410}}\n"), ASB_EGONE);
	k8s__watch_decoder_free(d);

	d = new_decoder(&s, 0);
	ck_assert_int_eq(feed_str(d, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
	                             "\"reason\":\"InternalError\",\"message\":\"boom\","
	                             "\"code\":500}}\n"), ASB_EINTERNAL);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "boom"));
	k8s__watch_decoder_free(d);
}
END_TEST

/* Feeds one bad line after a good one; expects EDECODE naming line 2. */
static void assert_bad_line(const char *line, const char *needle)
{
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	ck_assert_int_eq(feed_str(d, "{\"type\":\"ADDED\",\"object\":{}}\n"), 0);
	int rc = feed_str(d, line);
	ck_assert_msg(rc == ASB_EDECODE, "rc %d for %s", rc, line);
	const char *m = asb_error_last()->message;
	ck_assert_msg(strstr(m, needle), "\"%s\" not in: %s", needle, m);
	ck_assert_msg(strstr(m, "watch Pod: event line 2"), "no position in: %s", m);
	ck_assert_int_eq(s.n, 1);
	/* Sticky. */
	ck_assert_int_eq(feed_str(d, "{\"type\":\"ADDED\",\"object\":{}}\n"), ASB_EDECODE);
	ck_assert_int_eq(s.n, 1);
	k8s__watch_decoder_free(d);
}

START_TEST(test_malformed)
{
	assert_bad_line("{\"type\":\"ADDED\",\"object\":{\n", "not valid JSON");
	assert_bad_line("not json at all\n", "not valid JSON");
	assert_bad_line("{\"type\":\"ADDED\",\"object\":{}} trailing\n",
	                "data after the JSON object");
	assert_bad_line("[1,2,3]\n", "not a JSON object");
	assert_bad_line("{\"object\":{}}\n", "has no \"type\"");
	assert_bad_line("{\"type\":7,\"object\":{}}\n", "has no \"type\"");
	assert_bad_line("{\"type\":\"ADDED\"}\n", "has no \"object\"");
	assert_bad_line("{\"type\":\"ADDED\",\"object\":\"str\"}\n", "has no \"object\"");
	assert_bad_line("{\"type\":\"RENAMED\",\"object\":{}}\n",
	                "unknown type \"RENAMED\"");
}
END_TEST

START_TEST(test_oversize_line)
{
	char line[200];
	seen s;

	/* 150 bytes of JSON plus newline, with a 100-byte maximum. */
	int n = snprintf(line, sizeof(line), "{\"type\":\"ADDED\",\"object\":{\"pad\":\"%0*d\"}}\n",
	                 150 - 36, 0);
	ck_assert_int_eq(n, 151);

	/* In one chunk. */
	k8s__watch_decoder *d = new_decoder(&s, 100);
	ck_assert_int_eq(feed_str(d, line), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message,
	                             "event line 1 is longer than 100 bytes"));
	k8s__watch_decoder_free(d);

	/* Split into small pieces with no newline in sight: the decoder must
	 * stop buffering as soon as the bound is passed. */
	d = new_decoder(&s, 100);
	int rc = 0;
	size_t fed = 0;
	while (rc == 0 && fed < 150) {
		rc = k8s__watch_decoder_feed(d, line + fed, 10);
		fed += 10;
	}
	ck_assert_int_eq(rc, ASB_EDECODE);
	ck_assert_uint_le(fed, 110);
	k8s__watch_decoder_free(d);

	/* At exactly the bound it is accepted. */
	d = new_decoder(&s, 150);
	ck_assert_int_eq(feed_str(d, line), 0);
	ck_assert_int_eq(s.n, 1);
	k8s__watch_decoder_free(d);

	d = new_decoder(&s, 149);
	ck_assert_int_eq(k8s__watch_decoder_feed(d, line, 75), 0);
	ck_assert_int_eq(k8s__watch_decoder_feed(d, line + 75, 76), ASB_EDECODE);
	k8s__watch_decoder_free(d);
}
END_TEST

START_TEST(test_default_max_line)
{
	/* The default bound is 64 MiB: a 1 MiB event passes. */
	size_t pad = 1 << 20;
	char *big = malloc(pad + 64);
	ck_assert_ptr_nonnull(big);
	int head = sprintf(big, "{\"type\":\"ADDED\",\"object\":{\"data\":\"");
	memset(big + head, 'x', pad);
	strcpy(big + head + pad, "\"}}\n");
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	size_t len = strlen(big);
	ck_assert_int_eq(k8s__watch_decoder_feed(d, big, len / 3), 0);
	ck_assert_int_eq(k8s__watch_decoder_feed(d, big + len / 3, len - len / 3), 0);
	ck_assert_int_eq(s.n, 1);
	k8s__watch_decoder_free(d);
	free(big);
}
END_TEST

START_TEST(test_empty_lines)
{
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	ck_assert_int_eq(feed_str(d, "\n\n   \n\t\r\n"), 0);
	ck_assert_int_eq(feed_str(d, "{\"type\":\"ADDED\",\"object\":{\"metadata\":"
	                             "{\"name\":\"a\"}}}\r\n\n"), 0);
	ck_assert_int_eq(feed_str(d, "  {\"type\":\"DELETED\",\"object\":{}}  \n"), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.names[0], "a");
	/* Whitespace left at the end is not a truncated event. */
	ck_assert_int_eq(feed_str(d, "  "), 0);
	ck_assert_int_eq(k8s__watch_decoder_finish(d), 0);
	k8s__watch_decoder_free(d);
}
END_TEST

START_TEST(test_callback_stops)
{
	seen s;
	k8s__watch_decoder *d = new_decoder(&s, 0);
	s.stop_after = 2;
	ck_assert_int_eq(k8s__watch_decoder_feed(d, stream, strlen(stream)),
	                 K8S__WATCH_STOPPED);
	ck_assert_int_eq(s.n, 2);
	ck_assert_int_eq(k8s__watch_decoder_feed(d, stream, strlen(stream)),
	                 K8S__WATCH_STOPPED);
	ck_assert_int_eq(k8s__watch_decoder_finish(d), K8S__WATCH_STOPPED);
	ck_assert_int_eq(s.n, 2);
	k8s__watch_decoder_free(d);
}
END_TEST

START_TEST(test_finish)
{
	seen s;
	/* A last event without its newline still counts. */
	k8s__watch_decoder *d = new_decoder(&s, 0);
	ck_assert_int_eq(feed_str(d, "{\"type\":\"ADDED\",\"object\":{}}"), 0);
	ck_assert_int_eq(s.n, 0);
	ck_assert_int_eq(k8s__watch_decoder_finish(d), 0);
	ck_assert_int_eq(s.n, 1);
	k8s__watch_decoder_free(d);

	/* A cut-off one is a truncated stream. */
	d = new_decoder(&s, 0);
	ck_assert_int_eq(feed_str(d, "{\"type\":\"ADDED\",\"obj"), 0);
	ck_assert_int_eq(k8s__watch_decoder_finish(d), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message,
	                             "stream ended inside event line 1"));
	k8s__watch_decoder_free(d);

	/* Nothing at all is fine. */
	d = new_decoder(&s, 0);
	ck_assert_int_eq(k8s__watch_decoder_finish(d), 0);
	k8s__watch_decoder_free(d);
}
END_TEST

START_TEST(test_arguments)
{
	k8s__watch_decoder *d = (k8s__watch_decoder *)1;
	ck_assert_int_eq(k8s__watch_decoder_new(&d, 0, NULL, NULL, NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s__watch_decoder_new(NULL, 0, NULL, collect, NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s__watch_decoder_feed(NULL, "x", 1), ASB_EINVAL);
	ck_assert_int_eq(k8s__watch_decoder_finish(NULL), ASB_EINVAL);
	ck_assert_uint_eq(k8s__watch_decoder_events(NULL), 0);
	k8s__watch_decoder_free(NULL);

	/* A NULL subject gets a generic name; a zero-length feed is a no-op. */
	seen s;
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(k8s__watch_decoder_new(&d, 0, NULL, collect, &s), 0);
	ck_assert_int_eq(k8s__watch_decoder_feed(d, "", 0), 0);
	ck_assert_int_eq(feed_str(d, "x\n"), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "watch: event line 1"));
	k8s__watch_decoder_free(d);
}
END_TEST

static Suite *watch_decoder_suite(void)
{
	Suite *s = suite_create("watch_decoder");
	TCase *tc = tcase_create("framing");
	tcase_add_test(tc, test_whole_stream_one_chunk);
	tcase_add_test(tc, test_split_at_every_position);
	tcase_add_test(tc, test_split_twice_everywhere);
	tcase_add_test(tc, test_byte_by_byte);
	tcase_add_test(tc, test_bookmark);
	tcase_add_test(tc, test_empty_lines);
	tcase_add_test(tc, test_callback_stops);
	tcase_add_test(tc, test_finish);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_error_gone);
	tcase_add_test(tc, test_error_gone_code_only);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_oversize_line);
	tcase_add_test(tc, test_default_max_line);
	tcase_add_test(tc, test_arguments);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(watch_decoder_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
