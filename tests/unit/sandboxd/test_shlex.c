/*
 * test_shlex.c - unit tests of cmd/sandboxd/shlex.c against what Python's
 * shlex.split() returns for the same input (values taken from CPython).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "asb/common.h"
#include "shlex.h"

static void expect(const char *in, const char *const *want)
{
	char **argv;
	size_t n;
	ck_assert_msg(sbxd_shlex_split(in, strlen(in), &argv, &n) == 0, "%s: %s", in,
	              asb_error_last()->message);
	size_t i = 0;
	for (; want[i]; i++) {
		ck_assert_msg(argv[i] != NULL, "%s: word %zu missing", in, i);
		ck_assert_str_eq(argv[i], want[i]);
	}
	ck_assert_ptr_null(argv[i]);
	ck_assert_uint_eq(n, i);
	sbxd_shlex_free(argv);
}

START_TEST(words_and_quotes)
{
	expect("echo hello world", (const char *[]){ "echo", "hello", "world", NULL });
	expect("  a\t b\n", (const char *[]){ "a", "b", NULL });
	expect("", (const char *[]){ NULL });
	expect("echo 'a b' \"c d\"", (const char *[]){ "echo", "a b", "c d", NULL });
	expect("a'b c'd", (const char *[]){ "ab cd", NULL });
	expect("'' \"\"", (const char *[]){ "", "", NULL });
	expect("a\\ b", (const char *[]){ "a b", NULL });
	expect("'a\\b'", (const char *[]){ "a\\b", NULL });
	expect("\"a\\\"b\\\\c\\d\"", (const char *[]){ "a\"b\\c\\d", NULL });
	/* nothing is interpreted: pipes, globs, variables, comments are words */
	expect("ls | wc -l *.c $HOME #x", (const char *[]){ "ls", "|", "wc", "-l", "*.c", "$HOME",
	                                                    "#x", NULL });
	expect("echo \xc3\xa9t\xc3\xa9", (const char *[]){ "echo", "\xc3\xa9t\xc3\xa9", NULL });
}
END_TEST

START_TEST(errors_have_pythons_messages)
{
	char **argv;
	ck_assert_int_eq(sbxd_shlex_split("echo 'abc", 9, &argv, NULL), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->message, "No closing quotation");
	ck_assert_int_eq(sbxd_shlex_split("echo \"abc", 9, &argv, NULL), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->message, "No closing quotation");
	ck_assert_int_eq(sbxd_shlex_split("echo \\", 6, &argv, NULL), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->message, "No escaped character");
	ck_assert_int_eq(sbxd_shlex_split("a\0b", 3, &argv, NULL), ASB_EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sandboxd_shlex");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, words_and_quotes);
	tcase_add_test(tc, errors_have_pythons_messages);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
