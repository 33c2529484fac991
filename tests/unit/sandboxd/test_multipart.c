/*
 * test_multipart.c - unit tests of cmd/sandboxd/multipart.c: boundaries
 * from Content-Type, parts and their names, bodies split at every byte
 * (the delimiter straddling two reads), and malformed bodies.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "asb/common.h"
#include "multipart.h"

typedef struct {
	char names[8][64], files[8][64];
	char data[8][256];
	size_t len[8];
	int parts, ended;
} collect;

static int begin(const char *name, const char *filename, void *ud)
{
	collect *c = ud;
	int i = c->parts++;
	strcpy(c->names[i], name ? name : "(null)");
	strcpy(c->files[i], filename ? filename : "(null)");
	c->len[i] = 0;
	return 0;
}

static int data(const char *d, size_t n, void *ud)
{
	collect *c = ud;
	int i = c->parts - 1;
	memcpy(c->data[i] + c->len[i], d, n);
	c->len[i] += n;
	return 0;
}

static int end(void *ud)
{
	((collect *)ud)->ended++;
	return 0;
}

static const sbxd_multipart_callbacks cbs = { begin, data, end };

static const char body[] =
	"preamble\r\n"
	"--XyZ\r\n"
	"Content-Disposition: form-data; name=\"note\"\r\n"
	"\r\n"
	"hello\r\n"
	"--XyZ  \r\n"
	"content-disposition: form-data; name=file; filename=\"dir/a \\\"b\\\".bin\"\r\n"
	"Content-Type: application/octet-stream\r\n"
	"\r\n"
	"\x00\x01\r\n--XY\r\n--XyZ-not\r\n"
	"--XyZ--\r\n"
	"epilogue";

/* Feeds `body` in pieces of `step` bytes. */
static void parse_in_steps(size_t step, collect *c)
{
	memset(c, 0, sizeof(*c));
	sbxd_multipart *m;
	ck_assert_int_eq(sbxd_multipart_new(&m, "XyZ", &cbs, c), 0);
	size_t n = sizeof(body) - 1;
	for (size_t off = 0; off < n; off += step) {
		size_t k = n - off < step ? n - off : step;
		ck_assert_int_eq(sbxd_multipart_feed(m, body + off, k), 0);
	}
	ck_assert_int_eq(sbxd_multipart_finish(m), 0);
	sbxd_multipart_free(m);
}

START_TEST(parts_at_every_split)
{
	for (size_t step = 1; step <= sizeof(body); step++) {
		collect c;
		parse_in_steps(step, &c);
		ck_assert_int_eq(c.parts, 2);
		ck_assert_int_eq(c.ended, 2);
		ck_assert_str_eq(c.names[0], "note");
		ck_assert_str_eq(c.files[0], "(null)");
		ck_assert_uint_eq(c.len[0], 5);
		ck_assert(memcmp(c.data[0], "hello", 5) == 0);
		ck_assert_str_eq(c.names[1], "file");
		ck_assert_str_eq(c.files[1], "dir/a \"b\".bin");
		const char want[] = "\x00\x01\r\n--XY\r\n--XyZ-not";
		ck_assert_uint_eq(c.len[1], sizeof(want) - 1);
		ck_assert(memcmp(c.data[1], want, sizeof(want) - 1) == 0);
	}
}
END_TEST

START_TEST(backslashes_in_a_filename)
{
	/* on the wire: filename="x\dir\\a\"b\n.txt" (libcurl and HTML forms
	 * leave a lone backslash as it is); python-multipart reads
	 * x\dir\a"b\n.txt: only \\ and \" are escapes */
	static const char b[] =
		"--q\r\n"
		"Content-Disposition: form-data; name=file; filename=\"x\\dir\\\\a\\\"b\\n.txt\"\r\n"
		"\r\n"
		"x\r\n--q--\r\n";
	collect c;
	memset(&c, 0, sizeof(c));
	sbxd_multipart *m;
	ck_assert_int_eq(sbxd_multipart_new(&m, "q", &cbs, &c), 0);
	ck_assert_int_eq(sbxd_multipart_feed(m, b, sizeof(b) - 1), 0);
	ck_assert_int_eq(sbxd_multipart_finish(m), 0);
	sbxd_multipart_free(m);
	ck_assert_int_eq(c.parts, 1);
	ck_assert_str_eq(c.files[0], "x\\dir\\a\"b\\n.txt");
}
END_TEST

START_TEST(boundary_from_content_type)
{
	char *b;
	ck_assert_int_eq(sbxd_multipart_boundary("multipart/form-data; boundary=abc", &b), 0);
	ck_assert_str_eq(b, "abc");
	free(b);
	ck_assert_int_eq(sbxd_multipart_boundary("Multipart/Form-Data;charset=x; BOUNDARY=\"a b\"",
	                                         &b), 0);
	ck_assert_str_eq(b, "a b");
	free(b);
	ck_assert_int_eq(sbxd_multipart_boundary("application/octet-stream", &b), ASB_ENOTFOUND);
	ck_assert_int_eq(sbxd_multipart_boundary("multipart/form-dataX; boundary=a", &b),
	                 ASB_ENOTFOUND);
	ck_assert_int_eq(sbxd_multipart_boundary(NULL, &b), ASB_ENOTFOUND);
	ck_assert_int_eq(sbxd_multipart_boundary("multipart/form-data", &b), ASB_EINVAL);
	ck_assert_int_eq(sbxd_multipart_boundary("multipart/form-data; boundary=", &b), ASB_EINVAL);
}
END_TEST

static int feed_all(const char *s, size_t n)
{
	collect c;
	memset(&c, 0, sizeof(c));
	sbxd_multipart *m;
	ck_assert_int_eq(sbxd_multipart_new(&m, "b", &cbs, &c), 0);
	int rc = sbxd_multipart_feed(m, s, n);
	if (!rc)
		rc = sbxd_multipart_finish(m);
	sbxd_multipart_free(m);
	return rc;
}

/* a string literal, without its NUL */
#define FEED(lit) feed_all(lit, sizeof(lit) - 1)

START_TEST(malformed_bodies)
{
	ck_assert_int_eq(FEED(""), ASB_EINVAL);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "invalid multipart body"));
	ck_assert_int_eq(FEED("--b\r\nno colon\r\n\r\nx\r\n--b--"), ASB_EINVAL);
	ck_assert_int_eq(FEED("--b\r\nX: y\r\n\r\n--bX\r\n"), ASB_EINVAL);  /* no end */
	ck_assert_int_eq(FEED("--b\r\n\r\nunterminated"), ASB_EINVAL);
	static char big[SBXD_MULTIPART_MAX_HEADERS + 100];
	memcpy(big, "--b\r\nX: ", 8);
	memset(big + 8, 'a', sizeof(big) - 8);
	ck_assert_int_eq(feed_all(big, sizeof(big)), ASB_EINVAL);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "too large"));
	/* a part without headers is fine */
	ck_assert_int_eq(FEED("--b\r\n\r\nx\r\n--b--"), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sandboxd_multipart");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, parts_at_every_split);
	tcase_add_test(tc, backslashes_in_a_filename);
	tcase_add_test(tc, boundary_from_content_type);
	tcase_add_test(tc, malformed_bodies);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
