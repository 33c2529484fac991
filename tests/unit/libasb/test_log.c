/* Unit tests of libasb/src/log.c: logfmt quoting, JSON lines, levels. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/log.h"

static char *capture(asb_log_format fmt, asb_log_level min, asb_log_level lvl,
                     const char *msg, const char *k, const char *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	asb_logger *l;
	ck_assert_int_eq(asb_logger_new(&l, f, fmt, min), 0);
	asb_log(l, lvl, msg, k, v, NULL);
	asb_logger_free(l);
	fclose(f);
	return buf;
}

START_TEST(text_format_quotes_when_needed)
{
	char *s = capture(ASB_LOG_TEXT, ASB_LOG_INFO, ASB_LOG_INFO, "pod created", "key", "ns/a b");
	ck_assert_ptr_nonnull(strstr(s, " level=info msg=\"pod created\" key=\"ns/a b\"\n"));
	ck_assert_int_eq(strncmp(s, "ts=", 3), 0);
	free(s);
	s = capture(ASB_LOG_TEXT, ASB_LOG_INFO, ASB_LOG_WARN, "x", "err", "line1\nline2 \"q\"");
	ck_assert_ptr_nonnull(strstr(s, "err=\"line1\\nline2 \\\"q\\\"\"\n"));
	ck_assert_ptr_null(strchr(s, '\n') == s + strlen(s) - 1 ? NULL : "two lines");
	free(s);
}
END_TEST

START_TEST(json_format_is_one_object_per_line)
{
	char *s = capture(ASB_LOG_JSON, ASB_LOG_DEBUG, ASB_LOG_ERROR, "boom", "key", "v\"1");
	ck_assert_ptr_nonnull(strstr(s, "\"level\":\"error\",\"msg\":\"boom\",\"key\":\"v\\\"1\"}\n"));
	free(s);
}
END_TEST

START_TEST(levels_filter)
{
	char *s = capture(ASB_LOG_TEXT, ASB_LOG_WARN, ASB_LOG_INFO, "hidden", "k", "v");
	ck_assert(s == NULL || s[0] == '\0');
	free(s);
	ck_assert_int_eq(asb_log_level_parse("debug"), ASB_LOG_DEBUG);
	ck_assert_int_eq(asb_log_level_parse("warning"), ASB_LOG_WARN);
	ck_assert_int_eq(asb_log_level_parse("loud"), -1);
	ck_assert(!asb_log_enabled(NULL, ASB_LOG_ERROR));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, text_format_quotes_when_needed);
	tcase_add_test(tc, json_format_is_one_object_per_line);
	tcase_add_test(tc, levels_filter);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
