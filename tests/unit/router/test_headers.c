/*
 * test_headers.c - unit tests of cmd/router/headers.c: the request head
 * sent to a sandbox (hop-by-hop fields and those named by Connection
 * dropped, RFC 9110 §7.6.1; X-Forwarded-* replaced, docs/upstream.md#request-rewriting; credentials
 * dropped; upgrade kept; framing; injection refused) and the response
 * fields relayed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "headers.h"

#define KV(...) ((const char *const[]){ __VA_ARGS__, NULL })

static rt_head head_of(rt_header *hs, const char *const *kv, const char *target)
{
	size_t n = 0;
	for (; kv[2 * n]; n++)
		hs[n] = (rt_header){ kv[2 * n], kv[2 * n + 1] };
	return (rt_head){ .method = "POST", .target = target, .path = target, .headers = hs,
	                  .nheaders = n, .peer_ip = "10.9.8.7" };
}

/* The head written for `kv`, or NULL (rej filled). Caller frees. */
static char *outbound(const char *const *kv, const char *target, bool tls, rt_reject *rej)
{
	rt_header hs[32];
	rt_head h = head_of(hs, kv, target);
	h.tls = tls;
	rt_outbound o = { .host = "10.0.0.5", .port = 8888 };
	rt_headers_framing(&h, &o.framing);
	o.upgrade = rt_headers_wants_upgrade(&h);
	asb_strbuf b = ASB_STRBUF_INIT;
	if (rt_headers_request(&h, &o, &b, rej) < 0) {
		asb_strbuf_free(&b);
		return NULL;
	}
	return b.data;
}

START_TEST(request_line_and_forwarding)
{
	rt_reject rej;
	char *s = outbound(KV("Host", "router.example", "X-Forwarded-For", "6.6.6.6",
	                      "Forwarded", "for=6.6.6.6", "X-Forwarded-Proto", "https",
	                      "X-Forwarded-Host", "evil", "Authorization", "Bearer secret",
	                      "X-Sandbox-ID", "sb", "User-Agent", "ua/1", "Content-Length", "3"),
	                   "/a%2Fb/../c?x=1&y=%20", false, &rej);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(strncmp(s, "POST /a%2Fb/../c?x=1&y=%20 HTTP/1.1\r\nHost: 10.0.0.5:8888\r\n", 58) == 0, "%s", s);
	ck_assert_ptr_null(strstr(s, "6.6.6.6"));
	ck_assert_ptr_null(strstr(s, "evil"));
	ck_assert_ptr_null(strstr(s, "secret"));
	ck_assert_ptr_null(strstr(s, "Forwarded: for"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Forwarded-For: 10.9.8.7\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Forwarded-Host: router.example\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Forwarded-Proto: http\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nVia: 1.1 sandbox-router\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Sandbox-ID: sb\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nUser-Agent: ua/1\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nContent-Length: 3\r\n\r\n"));
	ck_assert_int_eq(s[strlen(s) - 1], '\n');
	free(s);
	s = outbound(KV("X-A", "1"), "/", true, &rej);
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Forwarded-Proto: https\r\n"));
	ck_assert_ptr_null(strstr(s, "X-Forwarded-Host"));
	ck_assert_ptr_null(strstr(s, "Content-Length"));
	ck_assert_ptr_null(strstr(s, "Transfer-Encoding"));
	free(s);
}
END_TEST

START_TEST(hop_by_hop)
{
	rt_reject rej;
	char *s = outbound(KV("Connection", "keep-alive, X-Secret-Hop", "Keep-Alive", "timeout=5",
	                      "X-Secret-Hop", "1", "Proxy-Connection", "keep-alive",
	                      "Proxy-Authorization", "Basic x", "Te", "trailers", "Trailer", "X-T",
	                      "Upgrade", "h2c", "Transfer-Encoding", "chunked", "Expect", "100-continue",
	                      "X-Keep", "yes"),
	                   "/", false, &rej);
	ck_assert_ptr_nonnull(s);
	for (const char *const *p = (const char *const[]){ "Connection:", "Keep-Alive", "X-Secret-Hop",
	                                                    "Proxy-", "Te:", "Trailer", "Upgrade",
	                                                    "Expect", NULL }; *p; p++)
		ck_assert_msg(!strstr(s, *p), "%s relayed:\n%s", *p, s);
	ck_assert_ptr_nonnull(strstr(s, "\r\nX-Keep: yes\r\n"));
	/* the body keeps its framing: chunked in, chunked out */
	ck_assert_ptr_nonnull(strstr(s, "\r\nTransfer-Encoding: chunked\r\n\r\n"));
	free(s);
}
END_TEST

START_TEST(upgrade)
{
	rt_reject rej;
	char *s = outbound(KV("Connection", "Upgrade", "Upgrade", "websocket", "Origin", "http://x",
	                      "Sec-WebSocket-Key", "abc", "Sec-WebSocket-Version", "13"),
	                   "/ws", false, &rej);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(strstr(s, "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\nSec-WebSocket-Key: abc\r\n"));
	ck_assert_ptr_null(strstr(s, "Origin"));
	free(s);
	/* Origin stays on a plain request; Upgrade without Connection is no upgrade */
	s = outbound(KV("Upgrade", "websocket", "Origin", "http://x"), "/", false, &rej);
	ck_assert_ptr_nonnull(strstr(s, "Origin: http://x"));
	ck_assert_ptr_null(strstr(s, "Upgrade"));
	free(s);
}
END_TEST

START_TEST(injection_refused)
{
	rt_reject rej;
	ck_assert_ptr_null(outbound(KV("X-A", "x\r\nX-Injected: 1"), "/", false, &rej));
	ck_assert_int_eq(rej.status, 400);
	ck_assert_ptr_null(outbound(KV("X-A", "x\nY"), "/", false, &rej));
	ck_assert_ptr_null(outbound(KV("X-A", "x\x01"), "/", false, &rej));
	ck_assert_ptr_null(outbound(KV("Bad Name", "x"), "/", false, &rej));
	ck_assert_ptr_null(outbound(KV("", "x"), "/", false, &rej));
	ck_assert_ptr_null(outbound(KV("X-A", "1"), "http://other/", false, &rej));
	ck_assert_str_eq(rej.detail, "Invalid request target.");
	ck_assert_ptr_null(outbound(KV("X-A", "1"), "/a b", false, &rej));
	ck_assert_ptr_null(outbound(KV("X-A", "1"), "*", false, &rej));
	char *s = outbound(KV("X-A", "tab\there"), "/", false, &rej);
	ck_assert_ptr_nonnull(s);
	free(s);
}
END_TEST

START_TEST(ipv6_host)
{
	rt_header hs[1];
	rt_head h = head_of(hs, KV("X", "1"), "/");
	rt_outbound o = { .host = "2001:db8::5", .port = 8080, .framing = { .content_length = -1 } };
	asb_strbuf b = ASB_STRBUF_INIT;
	rt_reject rej;
	ck_assert_int_eq(rt_headers_request(&h, &o, &b, &rej), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "\r\nHost: [2001:db8::5]:8080\r\n"));
	asb_strbuf_free(&b);
}
END_TEST

static void collect(const char *name, const char *value, void *ud)
{
	asb_strbuf *b = ud;
	asb_strbuf_addf(b, "%s=%s;", name, value);
}

START_TEST(response_filter)
{
	rt_header hs[] = {
		{ "Content-Type", "text/plain" }, { "Connection", "close, X-Hop, Upgrade" }, { "X-Hop", "1" },
		{ "Keep-Alive", "x" }, { "Transfer-Encoding", "chunked" }, { "Content-Length", "5" },
		{ "Date", "yesterday" }, { "Set-Cookie", "a=1" }, { "Set-Cookie", "b=2" },
		{ "Upgrade", "websocket" }, { "X-Bad", "a\r\nb" }, { "Trailer", "X" },
	};
	asb_strbuf b = ASB_STRBUF_INIT;
	rt_headers_response(hs, sizeof(hs) / sizeof(hs[0]), false, collect, &b);
	ck_assert_str_eq(b.data, "Content-Type=text/plain;Set-Cookie=a=1;Set-Cookie=b=2;");
	asb_strbuf_free(&b);
	rt_headers_response(hs, sizeof(hs) / sizeof(hs[0]), true, collect, &b);
	ck_assert_str_eq(b.data, "Content-Type=text/plain;Set-Cookie=a=1;Set-Cookie=b=2;Upgrade=websocket;");
	asb_strbuf_free(&b);
}
END_TEST


/* A head of the size the server admits (--max-header-bytes up to 80 KiB)
 * can hold ~20,000 fields and a Connection list of as many names. Each
 * field used to be checked against every Connection field's whole list:
 * quadratic, seconds of a loop thread per request (the request was a CPU
 * amplifier). The filter must stay near-linear: this test is correct
 * either way, and the quadratic version runs past the tcase timeout. */
#define MANY 30000
START_TEST(many_fields_linear)
{
	rt_header *hs = calloc(MANY + 1, sizeof(*hs));
	char (*names)[12] = calloc(MANY, sizeof(*names));
	asb_strbuf conn = ASB_STRBUF_INIT;
	ck_assert_ptr_nonnull(hs);
	ck_assert_ptr_nonnull(names);
	for (size_t i = 0; i < MANY; i++) {
		snprintf(names[i], sizeof(names[i]), "X-H%07zu", i);
		hs[i] = (rt_header){ names[i], "v" };
		/* every odd field is named by Connection, in reverse order */
		if ((MANY - 1 - i) % 2)
			asb_strbuf_addf(&conn, "%sx-h%07zu", conn.len ? ", " : "", MANY - 1 - i);
	}
	hs[MANY] = (rt_header){ "Connection", conn.data };
	rt_head h = { .method = "GET", .target = "/", .path = "/", .headers = hs,
	              .nheaders = MANY + 1, .peer_ip = "10.9.8.7" };
	rt_outbound o = { .host = "10.0.0.5", .port = 8888, .framing = { .content_length = -1 } };
	asb_strbuf b = ASB_STRBUF_INIT;
	rt_reject rej;
	ck_assert_int_eq(rt_headers_request(&h, &o, &b, &rej), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "\r\nX-H0000000: v\r\n"));
	ck_assert_ptr_null(strstr(b.data, "\r\nX-H0000001: v\r\n"));
	ck_assert_ptr_nonnull(strstr(b.data, "\r\nX-H0029998: v\r\n"));
	ck_assert_ptr_null(strstr(b.data, "\r\nX-H0029999: v\r\n"));
	ck_assert_ptr_null(strstr(b.data, "Connection"));
	asb_strbuf_free(&b);
	asb_strbuf kept = ASB_STRBUF_INIT;
	rt_headers_response(hs, MANY + 1, false, collect, &kept);
	ck_assert_ptr_nonnull(strstr(kept.data, "X-H0000000=v;"));
	ck_assert_ptr_null(strstr(kept.data, "X-H0000001=v;"));
	ck_assert_ptr_null(strstr(kept.data, "Connection"));
	asb_strbuf_free(&kept);
	asb_strbuf_free(&conn);
	free(names);
	free(hs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("headers");
	TCase *tc = tcase_create("headers");
	tcase_add_test(tc, request_line_and_forwarding);
	tcase_add_test(tc, hop_by_hop);
	tcase_add_test(tc, upgrade);
	tcase_add_test(tc, injection_refused);
	tcase_add_test(tc, ipv6_host);
	tcase_add_test(tc, response_filter);
	suite_add_tcase(s, tc);
	TCase *big = tcase_create("many-fields");
	tcase_set_timeout(big, 10);
	tcase_add_test(big, many_fields_linear);
	suite_add_tcase(s, big);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
