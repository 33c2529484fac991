/*
 * test_codec.c - unit tests of cmd/sandboxd/codec.c: the process requests
 * (proto3 JSON names and upstream's "command is required"), stream events,
 * the python-runtime and REST bodies, percent-decoding and UTF-8 clean-up.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "asb/common.h"
#include "codec.h"

#define PARSE(json, pty, r) sbxd_proc_request_parse(json, strlen(json), pty, r)

START_TEST(proc_request_shapes)
{
	sbxd_proc_request r;
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"ls\",\"-l\"],\"envVars\":{\"A\":\"1\"},"
	                       "\"cwd\":\"sub\"},\"pty\":{\"cols\":80,\"rows\":24},"
	                       "\"timeoutSeconds\":1.5}", true, &r), 0);
	ck_assert_str_eq(r.argv[0], "ls");
	ck_assert_str_eq(r.argv[1], "-l");
	ck_assert_ptr_null(r.argv[2]);
	ck_assert_str_eq(r.env[0], "A=1");
	ck_assert_ptr_null(r.env[1]);
	ck_assert_str_eq(r.cwd, "sub");
	ck_assert(r.pty);
	ck_assert_int_eq(r.cols, 80);
	ck_assert_int_eq(r.rows, 24);
	ck_assert_int_eq(r.timeout_ms, 1500);
	sbxd_proc_request_clear(&r);
	/* proto field names, and the shell shortcut */
	ck_assert_int_eq(PARSE("{\"config\":{\"shell\":\"echo $X\",\"env_vars\":{\"X\":\"y\"}},"
	                       "\"timeout_seconds\":2}", false, &r), 0);
	ck_assert_str_eq(r.argv[0], "/bin/sh");
	ck_assert_str_eq(r.argv[1], "-c");
	ck_assert_str_eq(r.argv[2], "echo $X");
	ck_assert_str_eq(r.env[0], "X=y");
	ck_assert_ptr_null(r.cwd);
	ck_assert_int_eq(r.timeout_ms, 2000);
	sbxd_proc_request_clear(&r);
}
END_TEST

START_TEST(proc_request_errors)
{
	sbxd_proc_request r;
	ck_assert_int_eq(PARSE("{}", true, &r), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->message, "command is required");
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[]}}", true, &r), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->message, "command is required");
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"\"]}}", true, &r), ASB_EINVAL);
	ck_assert_int_eq(PARSE("not json", true, &r), ASB_EINVAL);
	ck_assert_int_eq(PARSE("[1]", true, &r), ASB_EINVAL);
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"a\",1]}}", true, &r), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->message, "config.command[1] must be a string");
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":\"ls\"}}", true, &r), ASB_EINVAL);
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"a\"],\"shell\":\"b\"}}", true, &r),
	                 ASB_EINVAL);
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"a\"],\"envVars\":{\"A=B\":\"1\"}}}",
	                       true, &r), ASB_EINVAL);
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"a\"],\"envVars\":{\"A\":1}}}", true,
	                       &r), ASB_EINVAL);
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"a\"]},\"pty\":{}}", false, &r),
	                 ASB_EINVAL);
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"a\"]},\"pty\":{\"cols\":-1}}", true,
	                       &r), ASB_EINVAL);
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"a\"]},\"timeoutSeconds\":-1}", true,
	                       &r), ASB_EINVAL);
	ck_assert_int_eq(PARSE("{\"config\":{\"command\":[\"a\"]},\"timeoutSeconds\":\"5\"}", true,
	                       &r), ASB_EINVAL);
}
END_TEST

START_TEST(control_requests)
{
	unsigned char *d;
	size_t n;
	bool eof;
	const char *j = "{\"input\":\"aGVsbG8=\"}";
	ck_assert_int_eq(sbxd_stdin_request_parse(j, strlen(j), &d, &n, &eof), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert(memcmp(d, "hello", 5) == 0);
	ck_assert(!eof);
	free(d);
	j = "{\"eof\":{}}";
	ck_assert_int_eq(sbxd_stdin_request_parse(j, strlen(j), &d, &n, &eof), 0);
	ck_assert(eof);
	ck_assert_uint_eq(n, 0);
	j = "{\"input\":\"!!!\"}";
	ck_assert_int_eq(sbxd_stdin_request_parse(j, strlen(j), &d, &n, &eof), ASB_EINVAL);
	j = "{\"input\":\"aA==\",\"eof\":{}}";
	ck_assert_int_eq(sbxd_stdin_request_parse(j, strlen(j), &d, &n, &eof), ASB_EINVAL);
	j = "{}";  /* unset payload: a no-op */
	ck_assert_int_eq(sbxd_stdin_request_parse(j, strlen(j), &d, &n, &eof), 0);
	ck_assert_uint_eq(n, 0);
	int sig;
	const char *sigs[] = { "{\"signal\":\"SIGNAL_SIGTERM\"}", "{\"signal\":\"SIGTERM\"}",
	                       "{\"signal\":15}" };
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(sbxd_signal_request_parse(sigs[i], strlen(sigs[i]), &sig), 0);
		ck_assert_int_eq(sig, SIGTERM);
	}
	j = "{\"signal\":\"SIGNAL_UNSPECIFIED\"}";
	ck_assert_int_eq(sbxd_signal_request_parse(j, strlen(j), &sig), ASB_EINVAL);
	j = "{\"signal\":0}";
	ck_assert_int_eq(sbxd_signal_request_parse(j, strlen(j), &sig), ASB_EINVAL);
	unsigned short c, r;
	j = "{\"cols\":120,\"rows\":40}";
	ck_assert_int_eq(sbxd_resize_request_parse(j, strlen(j), &c, &r), 0);
	ck_assert_int_eq(c, 120);
	ck_assert_int_eq(r, 40);
	j = "{\"cols\":0,\"rows\":40}";
	ck_assert_int_eq(sbxd_resize_request_parse(j, strlen(j), &c, &r), ASB_EINVAL);
}
END_TEST

START_TEST(events_are_ndjson_proto3)
{
	size_t len;
	char *s = sbxd_event_init(7, &len);
	ck_assert_str_eq(s, "{\"init\":{\"processId\":7}}\n");
	ck_assert_uint_eq(len, strlen(s));
	free(s);
	s = sbxd_event_output(SBXD_STDERR, "hi\0", 3, &len);
	ck_assert_str_eq(s, "{\"stderr\":\"aGkA\"}\n");
	free(s);
	sbxd_exit ex = { .exit_code = -1, .signal = 9, .timed_out = true };
	ex.truncated[SBXD_STDOUT] = true;
	s = sbxd_event_exit(&ex, &len);
	ck_assert_str_eq(s, "{\"exit\":{\"exitCode\":-1,\"signal\":9,\"timedOut\":true,"
	                    "\"stdoutTruncated\":true}}\n");
	free(s);
	sbxd_exit ok = { 0 };
	s = sbxd_execute_response(&ok, "a", 1, "", 0, &len);
	ck_assert_str_eq(s, "{\"exitCode\":0,\"stdout\":\"YQ==\",\"stderr\":\"\"}\n");
	free(s);
}
END_TEST

START_TEST(runtime_and_error_bodies)
{
	size_t len;
	char *s = sbxd_runtime_execute_response("a\xff" "b", 3, "", 0, 2, &len);
	ck_assert_str_eq(s, "{\"stdout\":\"a\xef\xbf\xbd" "b\",\"stderr\":\"\",\"exit_code\":2}");
	free(s);
	s = sbxd_error_body("NOT_FOUND", "path does not exist within the sandbox", &len);
	ck_assert_str_eq(s, "{\"code\":\"NOT_FOUND\",\"message\":\"path does not exist within the "
	                    "sandbox\"}\n");
	free(s);
	s = sbxd_message_body("Access denied", &len);
	ck_assert_str_eq(s, "{\"message\":\"Access denied\"}");
	free(s);
	s = sbxd_validation_body("body", "command", "Field required", &len);
	cJSON *j = cJSON_Parse(s);
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(j, "detail"), 0), "loc"), 1)->valuestring,
	    "command");
	cJSON_Delete(j);
	free(s);
}
END_TEST

START_TEST(listings)
{
	sbxd_entry e[2] = {
		{ .name = "a", .size = 3, .is_dir = false, .mtime = { 0, 500000000 }, .mode = 0100644 },
		{ .name = "d", .size = 4096, .is_dir = true, .mtime = { 86400, 0 }, .mode = 040755 },
	};
	size_t len;
	char *s = sbxd_listing_json("sub", e, 2, &len);
	ck_assert_str_eq(s, "{\"path\":\"/sub\",\"entries\":["
	                    "{\"name\":\"a\",\"size\":3,\"type\":\"file\","
	                    "\"modified_at\":\"1970-01-01T00:00:00Z\",\"mode\":\"0644\"},"
	                    "{\"name\":\"d\",\"size\":4096,\"type\":\"directory\","
	                    "\"modified_at\":\"1970-01-02T00:00:00Z\",\"mode\":\"0755\"}]}\n");
	free(s);
	s = sbxd_listing_json("/", e, 0, &len);
	ck_assert_str_eq(s, "{\"path\":\"/\",\"entries\":[]}\n");
	free(s);
	s = sbxd_runtime_list_json(e, 1, &len);
	ck_assert_str_eq(s, "[{\"name\":\"a\",\"size\":3,\"type\":\"file\",\"mod_time\":0.5}]");
	free(s);
}
END_TEST

START_TEST(percent_and_utf8)
{
	char *d;
	size_t n;
	ck_assert_int_eq(sbxd_percent_decode("a%2Fb%2e%2E+%00", 15, &d, &n), 0);
	ck_assert_uint_eq(n, 7);
	ck_assert(memcmp(d, "a/b..+\0", 7) == 0);
	free(d);
	ck_assert_int_eq(sbxd_percent_decode("%2", 2, &d, &n), ASB_EINVAL);
	ck_assert_int_eq(sbxd_percent_decode("%zz", 3, &d, &n), ASB_EINVAL);
	char *u = sbxd_utf8_clean("ok \xc3\xa9 \xed\xa0\x80 \x00!", 12);
	ck_assert_str_eq(u, "ok \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd!");
	free(u);
}
END_TEST

START_TEST(byte_buffer_grows)
{
	sbxd_bytes b = { 0 };
	char chunk[3000];
	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(sbxd_bytes_add(&b, chunk, sizeof(chunk)), 0);
	ck_assert_uint_eq(b.len, 30000);
	ck_assert_uint_ge(b.cap, 30000);
	ck_assert_int_eq(b.data[29999], 'x');
	sbxd_bytes_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

/* A stream's pieces appended to `b` (codec.h), checking the cursor. */
static void add_pieces(sbxd_bytes *b, const char *s, size_t n, bool text, size_t in_max)
{
	sbxd_out_cursor c = { s, n, 0 };
	while (c.off < c.n) {
		size_t len, before = c.off;
		char *p = text ? sbxd_text_cursor_next(&c, in_max, &len)
		               : sbxd_b64_cursor_next(&c, in_max, &len);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_gt(c.off, before);          /* it always moves on */
		ck_assert_uint_le(c.off - before, in_max);
		sbxd_bytes_add(b, p, len);
		free(p);
	}
}

/* The /execute answer joined from its pieces, as the server sends it. */
static char *runtime_in_pieces(const char *out, size_t on, const char *err, size_t en, int code,
                               size_t in_max, size_t *len)
{
	sbxd_bytes b = { 0 };
	sbxd_bytes_add(&b, SBXD_RUNTIME_ANSWER_HEAD, strlen(SBXD_RUNTIME_ANSWER_HEAD));
	add_pieces(&b, out, on, true, in_max);
	sbxd_bytes_add(&b, SBXD_RUNTIME_ANSWER_MID, strlen(SBXD_RUNTIME_ANSWER_MID));
	add_pieces(&b, err, en, true, in_max);
	char tail[32];
	sbxd_bytes_add(&b, tail, sbxd_runtime_answer_tail(code, tail, sizeof(tail)));
	*len = b.len;
	sbxd_bytes_add(&b, "", 1);
	return b.data;
}

/* The ExecuteResponse joined from its pieces. */
static char *execute_in_pieces(const sbxd_exit *ex, const char *out, size_t on, const char *err,
                               size_t en, size_t in_max, size_t *len)
{
	sbxd_bytes b = { 0 };
	size_t hl;
	char *head = sbxd_execute_answer_head(ex, &hl);
	ck_assert_ptr_nonnull(head);
	sbxd_bytes_add(&b, head, hl);
	free(head);
	add_pieces(&b, out, on, false, in_max);
	sbxd_bytes_add(&b, SBXD_EXECUTE_ANSWER_MID, strlen(SBXD_EXECUTE_ANSWER_MID));
	add_pieces(&b, err, en, false, in_max);
	sbxd_bytes_add(&b, SBXD_EXECUTE_ANSWER_TAIL, strlen(SBXD_EXECUTE_ANSWER_TAIL));
	*len = b.len;
	sbxd_bytes_add(&b, "", 1);
	return b.data;
}

START_TEST(answers_in_pieces_are_the_whole_answers)
{
	/* bytes that make every kind of sequence: ASCII, controls, NUL, quotes,
	 * valid and cut multi-byte characters, stray continuation bytes */
	static const unsigned char alphabet[] = { 'a', '"', '\\', '\n', 0x00, 0x01, 0x1f, 0x7f,
		0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0xed, 0xa0, 0xc0, 0xf5, 0x80, 0xbf };
	srand(15);
	static char buf[2][2000];
	for (int round = 0; round < 20; round++) {
		size_t n[2];
		for (int i = 0; i < 2; i++) {
			n[i] = (size_t)(rand() % (int)sizeof(buf[i]));
			for (size_t k = 0; k < n[i]; k++)
				buf[i][k] = (char)alphabet[rand() % (int)sizeof(alphabet)];
		}
		size_t wl;
		int code = round % 2 ? -9 : round;
		char *whole = sbxd_runtime_execute_response(buf[0], n[0], buf[1], n[1], code, &wl);
		ck_assert_ptr_nonnull(whole);
		static const size_t sizes[] = { 4, 7, 4096 };
		sbxd_exit ex = { .exit_code = code, .signal = round % 3, .timed_out = round % 2,
		                 .truncated = { false, round % 4 == 0, false } };
		size_t el;
		char *ewhole = sbxd_execute_response(&ex, buf[0], n[0], buf[1], n[1], &el);
		ck_assert_ptr_nonnull(ewhole);
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
			size_t pl;
			char *pieces = runtime_in_pieces(buf[0], n[0], buf[1], n[1], code, sizes[z], &pl);
			ck_assert_uint_eq(pl, wl);
			ck_assert_msg(memcmp(pieces, whole, wl) == 0, "round %d, pieces of %zu", round,
			              sizes[z]);
			free(pieces);
			pieces = execute_in_pieces(&ex, buf[0], n[0], buf[1], n[1], sizes[z], &pl);
			ck_assert_uint_eq(pl, el);
			ck_assert_msg(memcmp(pieces, ewhole, el) == 0, "round %d, b64 pieces of %zu",
			              round, sizes[z]);
			free(pieces);
		}
		free(whole);
		free(ewhole);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sandboxd_codec");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, proc_request_shapes);
	tcase_add_test(tc, proc_request_errors);
	tcase_add_test(tc, control_requests);
	tcase_add_test(tc, events_are_ndjson_proto3);
	tcase_add_test(tc, runtime_and_error_bodies);
	tcase_add_test(tc, listings);
	tcase_add_test(tc, percent_and_utf8);
	tcase_add_test(tc, byte_buffer_grows);
	tcase_add_test(tc, answers_in_pieces_are_the_whole_answers);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
