/*
 * Unit tests of libhttpd/src/parser.c (httpd/parser.h): requests fed in
 * pieces, a chunked response, keep-alive and upgrade, errors, pause and
 * resume, and the URL split. No sockets: bytes go straight in.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "httpd/parser.h"

/* What the callbacks saw: pieces concatenated, fields as "name=value;". */
typedef struct {
	char url[256], status[64], fields[512], body[512];
	int begins, heads, completes;
	int in_value;
	int pause_at_head;             /* pause in on_headers_complete */
	int skip_body;                 /* on_headers_complete returns 1 */
} seen;

static void cat(char *dst, size_t cap, const char *at, size_t len)
{
	size_t n = strlen(dst);
	ck_assert_uint_lt(n + len, cap);
	memcpy(dst + n, at, len);
	dst[n + len] = '\0';
}

static int on_begin(httpd_parser *p)
{
	seen *s = httpd_parser_data(p);
	s->begins++;
	return 0;
}

static int on_url(httpd_parser *p, const char *at, size_t len)
{
	seen *s = httpd_parser_data(p);
	cat(s->url, sizeof(s->url), at, len);
	return 0;
}

static int on_status(httpd_parser *p, const char *at, size_t len)
{
	seen *s = httpd_parser_data(p);
	cat(s->status, sizeof(s->status), at, len);
	return 0;
}

static int on_field(httpd_parser *p, const char *at, size_t len)
{
	seen *s = httpd_parser_data(p);
	if (s->in_value)
		cat(s->fields, sizeof(s->fields), ";", 1);
	s->in_value = 0;
	cat(s->fields, sizeof(s->fields), at, len);
	return 0;
}

static int on_value(httpd_parser *p, const char *at, size_t len)
{
	seen *s = httpd_parser_data(p);
	if (!s->in_value)
		cat(s->fields, sizeof(s->fields), "=", 1);
	s->in_value = 1;
	cat(s->fields, sizeof(s->fields), at, len);
	return 0;
}

static int on_head(httpd_parser *p)
{
	seen *s = httpd_parser_data(p);
	s->heads++;
	if (s->pause_at_head)
		httpd_parser_pause(p);
	return s->skip_body ? 1 : 0;
}

static int on_body(httpd_parser *p, const char *at, size_t len)
{
	seen *s = httpd_parser_data(p);
	cat(s->body, sizeof(s->body), at, len);
	return 0;
}

static int on_complete(httpd_parser *p)
{
	seen *s = httpd_parser_data(p);
	s->completes++;
	return 0;
}

static const httpd_parser_callbacks cbs = {
	.on_message_begin = on_begin, .on_url = on_url, .on_status = on_status,
	.on_header_field = on_field, .on_header_value = on_value,
	.on_headers_complete = on_head, .on_body = on_body, .on_message_complete = on_complete,
};

/* Feeds `msg` in pieces of `step` bytes; returns the last state. */
static httpd_parser_error feed(httpd_parser *p, const char *msg, size_t step)
{
	size_t len = strlen(msg), off = 0;
	httpd_parser_error e = HTTPD_PARSER_OK;
	while (off < len) {
		size_t n = len - off < step ? len - off : step, used = 0;
		e = httpd_parser_execute(p, msg + off, n, &used);
		if (e != HTTPD_PARSER_OK)
			return e;
		ck_assert_uint_eq(used, n);
		off += n;
	}
	return e;
}

START_TEST(request_in_pieces)
{
	static const char req[] =
	    "POST /api/run?x=1 HTTP/1.1\r\n"
	    "Host: example\r\n"
	    "Content-Length: 11\r\n"
	    "X-Long-Field-Name: a value with spaces\r\n"
	    "\r\n"
	    "hello world";
	/* every piece size, down to one byte at a time */
	for (size_t step = 1; step <= sizeof(req); step++) {
		seen s = { 0 };
		httpd_parser p;
		httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &cbs, &s);
		ck_assert_ptr_eq(httpd_parser_data(&p), &s);
		ck_assert_int_eq(feed(&p, req, step), HTTPD_PARSER_OK);
		ck_assert_str_eq(httpd_parser_method(&p), "POST");
		ck_assert_str_eq(s.url, "/api/run?x=1");
		ck_assert_str_eq(s.fields,
		                 "Host=example;Content-Length=11;X-Long-Field-Name=a value with spaces");
		ck_assert_str_eq(s.body, "hello world");
		ck_assert_int_eq(s.begins, 1);
		ck_assert_int_eq(s.heads, 1);
		ck_assert_int_eq(s.completes, 1);
		ck_assert_int_eq(httpd_parser_http_major(&p), 1);
		ck_assert_int_eq(httpd_parser_http_minor(&p), 1);
		ck_assert(!httpd_parser_chunked(&p));
		ck_assert(httpd_parser_keep_alive(&p));
		ck_assert(!httpd_parser_upgrade(&p));
	}
}
END_TEST

static uint64_t head_length;
static int head_has_length;

static int on_head_length(httpd_parser *p)
{
	head_has_length = httpd_parser_content_length(p, &head_length);
	return 0;
}

START_TEST(content_length_in_head)
{
	static const httpd_parser_callbacks c = { .on_headers_complete = on_head_length };
	httpd_parser p;
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &c, NULL);
	const char *r = "PUT /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde";
	ck_assert_int_eq(feed(&p, r, 1000), HTTPD_PARSER_OK);
	ck_assert(head_has_length);
	ck_assert_uint_eq(head_length, 5);
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &c, NULL);
	ck_assert_int_eq(feed(&p, "GET /x HTTP/1.1\r\n\r\n", 1000), HTTPD_PARSER_OK);
	ck_assert(!head_has_length);
}
END_TEST

START_TEST(chunked_response)
{
	static const char res[] =
	    "HTTP/1.1 200 OK\r\n"
	    "Transfer-Encoding: chunked\r\n"
	    "\r\n"
	    "5\r\nhello\r\n"
	    "6\r\n world\r\n"
	    "0\r\n\r\n";
	for (size_t step = 1; step <= sizeof(res); step += 3) {
		seen s = { 0 };
		httpd_parser p;
		httpd_parser_init(&p, HTTPD_PARSER_RESPONSE, &cbs, &s);
		ck_assert_int_eq(feed(&p, res, step), HTTPD_PARSER_OK);
		ck_assert_int_eq(httpd_parser_status_code(&p), 200);
		ck_assert_str_eq(s.status, "OK");
		ck_assert(httpd_parser_chunked(&p));
		ck_assert(!httpd_parser_content_length(&p, NULL));
		ck_assert_str_eq(s.body, "hello world");
		ck_assert_int_eq(s.completes, 1);
		ck_assert(httpd_parser_keep_alive(&p));
	}
}
END_TEST

START_TEST(response_to_head_and_close_delimited)
{
	/* on_headers_complete returning 1: no body whatever Content-Length says */
	seen s = { .skip_body = 1 };
	httpd_parser p;
	httpd_parser_init(&p, HTTPD_PARSER_RESPONSE, &cbs, &s);
	ck_assert_int_eq(feed(&p, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", 1000),
	                 HTTPD_PARSER_OK);
	ck_assert_int_eq(s.completes, 1);
	/* a body delimited by the close completes at len 0 */
	seen t = { 0 };
	httpd_parser_init(&p, HTTPD_PARSER_RESPONSE, &cbs, &t);
	ck_assert_int_eq(feed(&p, "HTTP/1.0 200 OK\r\n\r\nuntil close", 1000), HTTPD_PARSER_OK);
	ck_assert_int_eq(t.completes, 0);
	ck_assert(!httpd_parser_keep_alive(&p));
	ck_assert_int_eq(httpd_parser_execute(&p, "", 0, NULL), HTTPD_PARSER_OK);
	ck_assert_int_eq(t.completes, 1);
	ck_assert_str_eq(t.body, "until close");
}
END_TEST

START_TEST(keep_alive_flags)
{
	static const struct {
		const char *req;
		int keep_alive;
	} cases[] = {
		{ "GET / HTTP/1.1\r\n\r\n", 1 },
		{ "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 0 },
		{ "GET / HTTP/1.0\r\n\r\n", 0 },
		{ "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		seen s = { 0 };
		httpd_parser p;
		httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &cbs, &s);
		ck_assert_int_eq(feed(&p, cases[i].req, 1000), HTTPD_PARSER_OK);
		ck_assert_int_eq(httpd_parser_keep_alive(&p), cases[i].keep_alive);
	}
}
END_TEST

START_TEST(upgrade_stops_after_the_head)
{
	static const char req[] =
	    "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
	    "\x81\x05hello";
	seen s = { 0 };
	httpd_parser p;
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &cbs, &s);
	size_t used = 0;
	size_t len = sizeof(req) - 1;
	ck_assert_int_eq(httpd_parser_execute(&p, req, len, &used), HTTPD_PARSER_OK);
	ck_assert(httpd_parser_upgrade(&p));
	ck_assert_uint_eq(used, len - 7);  /* the frame bytes are not HTTP */
	ck_assert_int_eq(s.completes, 1);

	seen t = { 0 };
	httpd_parser_init(&p, HTTPD_PARSER_RESPONSE, &cbs, &t);
	static const char res[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	                          "Connection: Upgrade\r\n\r\nraw";
	ck_assert_int_eq(httpd_parser_execute(&p, res, sizeof(res) - 1, &used), HTTPD_PARSER_OK);
	ck_assert_int_eq(httpd_parser_status_code(&p), 101);
	ck_assert(httpd_parser_upgrade(&p));
	ck_assert_uint_eq(used, sizeof(res) - 1 - 3);
}
END_TEST

START_TEST(invalid_request_has_an_error_name)
{
	seen s = { 0 };
	httpd_parser p;
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &cbs, &s);
	httpd_parser_error e = feed(&p, "GET / HTTP/1.1\r\nBad Field\r\n\r\n", 1000);
	ck_assert_int_eq(e, HTTPD_PARSER_EINVALID);
	ck_assert_int_eq(httpd_parser_get_error(&p), HTTPD_PARSER_EINVALID);
	ck_assert_str_eq(httpd_parser_error_name(&p), "HPE_INVALID_HEADER_TOKEN");
	ck_assert_ptr_nonnull(httpd_parser_error_description(&p));
	ck_assert_uint_gt(strlen(httpd_parser_error_description(&p)), 0);
	/* the error stays */
	ck_assert_int_eq(httpd_parser_execute(&p, "x", 1, NULL), HTTPD_PARSER_EINVALID);
	/* pause and resume leave an error state alone */
	httpd_parser_pause(&p);
	httpd_parser_resume(&p);
	ck_assert_int_eq(httpd_parser_get_error(&p), HTTPD_PARSER_EINVALID);

	/* smuggling: Content-Length with Transfer-Encoding is refused */
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &cbs, &s);
	e = feed(&p, "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
	         1000);
	ck_assert_int_eq(e, HTTPD_PARSER_EINVALID);
	ck_assert_str_eq(httpd_parser_error_name(&p), "HPE_UNEXPECTED_CONTENT_LENGTH");
}
END_TEST

static int refuse(httpd_parser *p, const char *at, size_t len) { return -1; }

START_TEST(callback_error)
{
	static const httpd_parser_callbacks c = { .on_url = refuse };
	httpd_parser p;
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &c, NULL);
	ck_assert_int_eq(feed(&p, "GET /x HTTP/1.1\r\n\r\n", 1000), HTTPD_PARSER_ECALLBACK);
	ck_assert_str_eq(httpd_parser_error_name(&p), "HPE_CB_url");
}
END_TEST

START_TEST(header_overflow)
{
	/* the library's own limit (80 KiB in http-parser) */
	size_t n = 100 * 1024;
	char *big = malloc(n + 64);
	ck_assert_ptr_nonnull(big);
	strcpy(big, "GET / HTTP/1.1\r\nX: ");
	memset(big + strlen(big), 'a', n);
	big[19 + n] = '\0';
	seen s = { 0 };
	httpd_parser p;
	static const httpd_parser_callbacks c = { 0 };
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &c, &s);
	ck_assert_int_eq(httpd_parser_execute(&p, big, strlen(big), NULL),
	                 HTTPD_PARSER_EHEADER_OVERFLOW);
	free(big);
}
END_TEST

START_TEST(pause_and_resume)
{
	static const char two[] = "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
	seen s = { .pause_at_head = 1 };
	httpd_parser p;
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &cbs, &s);
	size_t off = 0, used = 0;
	size_t len = sizeof(two) - 1;
	ck_assert_int_eq(httpd_parser_execute(&p, two, len, &used), HTTPD_PARSER_PAUSED);
	ck_assert_int_eq(s.heads, 1);
	ck_assert_int_eq(s.completes, 0);
	ck_assert_uint_lt(used, len);
	off += used;
	/* paused: nothing is parsed until resumed */
	ck_assert_int_eq(httpd_parser_get_error(&p), HTTPD_PARSER_PAUSED);
	int rounds = 0;
	while (off < len && rounds++ < 10) {
		httpd_parser_resume(&p);
		httpd_parser_error e = httpd_parser_execute(&p, two + off, len - off, &used);
		ck_assert(e == HTTPD_PARSER_OK || e == HTTPD_PARSER_PAUSED);
		off += used;
	}
	httpd_parser_resume(&p);
	httpd_parser_execute(&p, "", 0, NULL);
	ck_assert_uint_eq(off, len);
	ck_assert_int_eq(s.heads, 2);
	ck_assert_int_eq(s.completes, 2);
	ck_assert_str_eq(s.url, "/a/b");
	/* resume when not paused does nothing */
	httpd_parser_resume(&p);
	ck_assert_int_eq(httpd_parser_get_error(&p), HTTPD_PARSER_OK);
}
END_TEST

START_TEST(split_url)
{
	const char *u = "http://user@example.com:8080/p/a/t/h?query=1&b=2#frag";
	httpd_url parts;
	ck_assert_int_eq(httpd_parser_split_url(u, strlen(u), false, &parts), 0);
	ck_assert(parts.schema.set);
	ck_assert_int_eq(strncmp(u + parts.schema.off, "http", parts.schema.len), 0);
	ck_assert_uint_eq(parts.schema.len, 4);
	ck_assert(parts.host.set);
	ck_assert_int_eq(strncmp(u + parts.host.off, "example.com", parts.host.len), 0);
	ck_assert(parts.port.set);
	ck_assert_uint_eq(parts.port_number, 8080);
	ck_assert(parts.userinfo.set);
	ck_assert_int_eq(strncmp(u + parts.userinfo.off, "user", parts.userinfo.len), 0);
	ck_assert(parts.path.set);
	ck_assert_int_eq(strncmp(u + parts.path.off, "/p/a/t/h", parts.path.len), 0);
	ck_assert_uint_eq(parts.path.len, 8);
	ck_assert(parts.query.set);
	ck_assert_int_eq(strncmp(u + parts.query.off, "query=1&b=2", parts.query.len), 0);
	ck_assert(parts.fragment.set);
	ck_assert_int_eq(strncmp(u + parts.fragment.off, "frag", parts.fragment.len), 0);

	/* origin form: a path only, no query */
	const char *o = "/healthz";
	ck_assert_int_eq(httpd_parser_split_url(o, strlen(o), false, &parts), 0);
	ck_assert(parts.path.set && !parts.query.set && !parts.host.set && !parts.schema.set);
	ck_assert_uint_eq(parts.path.off, 0);
	ck_assert_uint_eq(parts.path.len, 8);

	/* CONNECT's authority form needs is_connect */
	const char *a = "example.com:443";
	ck_assert_int_eq(httpd_parser_split_url(a, strlen(a), true, &parts), 0);
	ck_assert(parts.host.set && parts.port.set && !parts.path.set);
	ck_assert_uint_eq(parts.port_number, 443);
	ck_assert_int_eq(httpd_parser_split_url(o, strlen(o), true, &parts), ASB_EINVAL);

	/* not a target */
	ck_assert_int_eq(httpd_parser_split_url("a b", 3, false, &parts), ASB_EINVAL);
	ck_assert_int_eq(httpd_parser_split_url("", 0, false, &parts), ASB_EINVAL);
}
END_TEST

/* Hostile framing a client or a sandbox pod may send: each is an error,
 * never a body of a size the sender chose to confuse us with. */
START_TEST(hostile_framing_is_refused)
{
	static const char *const bad[] = {
		/* two Content-Lengths that disagree (request smuggling) */
		"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		/* a chunk size beyond 64 bits */
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
		"fffffffffffffffffff\r\n",
		/* a chunk size that is not hex */
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n",
		/* a Content-Length that is not a number */
		"POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
		/* a space inside the method */
		"G ET / HTTP/1.1\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		seen s = { 0 };
		httpd_parser p;
		httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &cbs, &s);
		ck_assert_msg(feed(&p, bad[i], 7) != HTTPD_PARSER_OK, "accepted: %s", bad[i]);
		ck_assert_int_eq(s.completes, 0);
	}
	/* a NUL inside a header value ends parsing with an error, byte by byte too */
	static const char nul[] = "GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n";
	seen s = { 0 };
	httpd_parser p;
	httpd_parser_init(&p, HTTPD_PARSER_REQUEST, &cbs, &s);
	httpd_parser_error e = HTTPD_PARSER_OK;
	for (size_t off = 0; off < sizeof(nul) - 1 && e == HTTPD_PARSER_OK; off++)
		e = httpd_parser_execute(&p, nul + off, 1, NULL);
	ck_assert_int_ne(e, HTTPD_PARSER_OK);
	ck_assert_int_eq(s.completes, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("httpd_parser");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, request_in_pieces);
	tcase_add_test(tc, content_length_in_head);
	tcase_add_test(tc, chunked_response);
	tcase_add_test(tc, response_to_head_and_close_delimited);
	tcase_add_test(tc, keep_alive_flags);
	tcase_add_test(tc, upgrade_stops_after_the_head);
	tcase_add_test(tc, invalid_request_has_an_error_name);
	tcase_add_test(tc, callback_error);
	tcase_add_test(tc, header_overflow);
	tcase_add_test(tc, pause_and_resume);
	tcase_add_test(tc, split_url);
	tcase_add_test(tc, hostile_framing_is_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
