/*
 * test_strbuf.c - asb_strbuf: appends keep the content NUL-terminated,
 * reserve allocates once without appending, detach hands the data over,
 * and growth across many appends keeps every byte.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "asb/strbuf.h"

START_TEST(appends)
{
	asb_strbuf b = ASB_STRBUF_INIT;
	ck_assert_int_eq(asb_strbuf_adds(&b, "GET / HTTP/1.1\r\n"), 0);
	ck_assert_int_eq(asb_strbuf_add(&b, "ab\0c", 4), 0);
	ck_assert_int_eq(asb_strbuf_addc(&b, 'z'), 0);
	ck_assert_int_eq(asb_strbuf_addf(&b, "%d-%s", 42, "x"), 0);
	ck_assert_uint_eq(b.len, 16 + 4 + 1 + 4);
	ck_assert_int_eq(memcmp(b.data + 16, "ab\0cz42-x", 9), 0);
	ck_assert_int_eq(b.data[b.len], '\0');
	ck_assert(!b.failed);
	asb_strbuf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

START_TEST(reserve_allocates_once)
{
	asb_strbuf b = ASB_STRBUF_INIT;
	ck_assert_int_eq(asb_strbuf_reserve(&b, 255), 0);
	ck_assert_uint_ge(b.cap, 256);
	ck_assert_uint_eq(b.len, 0);
	char *first = b.data;
	size_t cap = b.cap;
	for (int i = 0; i < 255; i++)
		asb_strbuf_addc(&b, 'a' + i % 26);
	ck_assert_ptr_eq(b.data, first);  /* no realloc within the room */
	ck_assert_uint_eq(b.cap, cap);
	ck_assert_int_eq(asb_strbuf_reserve(&b, 0), 0);  /* room for the NUL is there */
	ck_assert_ptr_eq(b.data, first);
	ck_assert_int_eq(asb_strbuf_reserve(&b, SIZE_MAX), -1);  /* overflow: refused, sticky */
	ck_assert(b.failed);
	ck_assert_int_eq(asb_strbuf_addc(&b, 'x'), -1);
	ck_assert_uint_eq(b.len, 255);
	asb_strbuf_free(&b);
}
END_TEST

START_TEST(integers)
{
	asb_strbuf b = ASB_STRBUF_INIT;
	const long long v[] = { 0, 7, -7, 10, 1234567890123LL, LLONG_MAX, LLONG_MIN };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char want[32];
		snprintf(want, sizeof(want), "%lld", v[i]);
		b.len = 0;
		ck_assert_int_eq(asb_strbuf_add_int(&b, v[i]), 0);
		ck_assert_str_eq(b.data, want);
		char raw[24];
		size_t n = asb_format_int(raw, v[i]);
		ck_assert_uint_eq(n, strlen(want));
		ck_assert(memcmp(raw, want, n) == 0);
	}
	asb_strbuf_free(&b);
}
END_TEST

START_TEST(growth_and_detach)
{
	asb_strbuf b = ASB_STRBUF_INIT;
	for (int i = 0; i < 10000; i++)
		ck_assert_int_eq(asb_strbuf_addf(&b, "%04d", i), 0);
	ck_assert_uint_eq(b.len, 40000);
	ck_assert_int_eq(memcmp(b.data + 4 * 9999, "9999", 4), 0);
	size_t len = 0;
	char *d = asb_strbuf_detach(&b, &len);
	ck_assert_uint_eq(len, 40000);
	ck_assert_int_eq(memcmp(d, "000000010002", 12), 0);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	free(d);
}
END_TEST

/* RFC 3629's well-formed sequences pass whole; each byte that starts none
 * becomes U+FFFD, one per byte, as Go's utf8.DecodeRune steps. */
START_TEST(utf8)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "" },
		{ "plain \x7f", "plain \x7f" },
		{ "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf" },
		{ "a\xff" "b", "a\xef\xbf\xbd" "b" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },             /* overlong '/' */
		{ "\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* overlong, 3 bytes */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* a surrogate */
		{ "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* > U+10FFFF */
		{ "x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd" },            /* cut short at the end */
		{ "\xe2\x82x", "\xef\xbf\xbd\xef\xbf\xbdx" },            /* cut short by a byte */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		asb_strbuf b = ASB_STRBUF_INIT;
		ck_assert_int_eq(asb_strbuf_add_utf8(&b, cases[i].in), 0);
		ck_assert_msg(b.len == strlen(cases[i].out) &&
		              memcmp(b.data ? b.data : "", cases[i].out, b.len) == 0, "case %zu", i);
		ck_assert(asb_utf8_valid(cases[i].out));
		ck_assert(asb_utf8_valid(cases[i].in) == (strcmp(cases[i].in, cases[i].out) == 0));
		asb_strbuf_free(&b);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strbuf");
	TCase *tc = tcase_create("strbuf");
	tcase_add_test(tc, appends);
	tcase_add_test(tc, reserve_allocates_once);
	tcase_add_test(tc, growth_and_detach);
	tcase_add_test(tc, integers);
	tcase_add_test(tc, utf8);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
