/* Unit tests of libasb/src/flags.c: setting values by kind, both argv
 * styles, and the --help listing. */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/flags.h"

typedef struct {
	bool on;
	int n;
	long ms;
	const char *name;
} opts;

static const asb_flag table[] = {
	ASB_FLAG("on", ASB_FLAG_BOOL, offsetof(opts, on), "[=B]", "a switch"),
	ASB_FLAG("n", ASB_FLAG_INT, offsetof(opts, n), "N", "a number\nsecond line"),
	ASB_FLAG("wait", ASB_FLAG_DURATION_MS, offsetof(opts, ms), "D", "a duration"),
	ASB_FLAG("name", ASB_FLAG_STRING_REF, offsetof(opts, name), "S", "a name"),
	ASB_FLAG_LINE("Other:"),
	{ .name = "help", .kind = ASB_FLAG_ACTION, .help = "help", .short_opt = 'h' },
	ASB_FLAGS_END,
};

START_TEST(go_style_takes_both_spellings)
{
	char *argv[] = { "p", "-on", "--n=7", "-wait", "1m30s", "--name", "x", NULL };
	opts o = { 0 };
	bool seen[8] = { false };
	asb_flags_result r;
	ck_assert_int_eq(asb_flags_parse(table, ASB_FLAGS_GO, &o, 7, argv, seen, &r), 0);
	ck_assert_int_eq(r.status, ASB_FLAGS_DONE);
	ck_assert(o.on && o.n == 7 && o.ms == 90000 && !strcmp(o.name, "x"));
	ck_assert(seen[0] && seen[1] && !seen[5]);
}
END_TEST

START_TEST(errors_name_the_flag)
{
	opts o = { 0 };
	asb_flags_result r;
	char *bad[] = { "p", "--n=x", NULL };
	ck_assert_int_eq(asb_flags_parse(table, ASB_FLAGS_GO, &o, 2, bad, NULL, &r), ASB_EINVAL);
	ck_assert_int_eq(r.status, ASB_FLAGS_BAD_VALUE);
	ck_assert_str_eq(asb_error_last()->message, "invalid value \"x\" for flag --n: must be an integer");
	char *unk[] = { "p", "--nope=3", NULL };
	asb_flags_parse(table, ASB_FLAGS_GO, &o, 2, unk, NULL, &r);
	ck_assert_int_eq(r.status, ASB_FLAGS_UNKNOWN);
	/* as given, dashes and all, without its value */
	ck_assert_str_eq(asb_error_last()->message, "flag provided but not defined: --nope");
	char *unk1[] = { "p", "-on", "-x", NULL };
	asb_flags_parse(table, ASB_FLAGS_GO, &o, 3, unk1, NULL, &r);
	ck_assert_str_eq(asb_error_last()->message, "flag provided but not defined: -x");
	char *last[] = { "p", "--n", NULL };
	asb_flags_parse(table, ASB_FLAGS_GO, &o, 2, last, NULL, &r);
	ck_assert_int_eq(r.status, ASB_FLAGS_NEEDS_VALUE);
	char *pos[] = { "p", "word", NULL };
	asb_flags_parse(table, ASB_FLAGS_GO, &o, 2, pos, NULL, &r);
	ck_assert_int_eq(r.status, ASB_FLAGS_UNEXPECTED);
	/* a boolean's value as the next word (Go reads it as no flag): the
	 * message names the flag and the spelling that works */
	char *sep[] = { "p", "-on", "false", NULL };
	asb_flags_parse(table, ASB_FLAGS_GO, &o, 3, sep, NULL, &r);
	ck_assert_int_eq(r.status, ASB_FLAGS_UNEXPECTED);
	ck_assert_str_eq(r.word, "false");
	ck_assert_str_eq(asb_error_last()->message, "unexpected argument \"false\" after -on: "
	                 "a boolean flag takes its value as -on=false");
	char *other[] = { "p", "--on", "word", NULL };
	asb_flags_parse(table, ASB_FLAGS_GO, &o, 3, other, NULL, &r);
	ck_assert_str_eq(asb_error_last()->message, "unexpected argument \"word\"");
	char *val[] = { "p", "-name", "-on", "true", NULL };  /* "-on" is -name's value */
	asb_flags_parse(table, ASB_FLAGS_GO, &o, 4, val, NULL, &r);
	ck_assert_str_eq(asb_error_last()->message, "unexpected argument \"true\"");
}
END_TEST

/* Go's -h, and its boolean -help=false (no request) */
/* A setter's verdicts: -1 (not of the type) and ASB_FLAG_RULE (a bound). */
static int positive(void *o, const asb_flag *fl, const char *v, char *why, size_t cap)
{
	if (((opts *)o)->n > 0)
		return 0;
	snprintf(why, cap, "must be > 0");
	return ASB_FLAG_RULE;
}

static const asb_flag ruled[] = {
	ASB_FLAG_FN("n", ASB_FLAG_INT, offsetof(opts, n), "N", "a positive number", positive),
	ASB_FLAGS_END,
};

START_TEST(rule_refusals_are_told_apart_from_type_errors)
{
	opts o = { 0 };
	asb_flags_result r;
	char *zero[] = { "p", "-n=0", NULL };
	ck_assert_int_eq(asb_flags_parse(ruled, ASB_FLAGS_GO, &o, 2, zero, NULL, &r), ASB_EINVAL);
	ck_assert_int_eq(r.status, ASB_FLAGS_BAD_VALUE);
	ck_assert(r.rule);
	ck_assert_str_eq(asb_error_last()->message, "invalid value \"0\" for flag --n: must be > 0");
	char *word[] = { "p", "-n=x", NULL };
	ck_assert_int_eq(asb_flags_parse(ruled, ASB_FLAGS_GO, &o, 2, word, NULL, &r), ASB_EINVAL);
	ck_assert_int_eq(r.status, ASB_FLAGS_BAD_VALUE);
	ck_assert(!r.rule);  /* the built-in int parse refused it: the setter never ran */
	char *getopt[] = { "p", "--n=-3", NULL };
	ck_assert_int_eq(asb_flags_parse(ruled, ASB_FLAGS_GETOPT, &o, 2, getopt, NULL, &r),
	                 ASB_EINVAL);
	ck_assert(r.rule);
	char *good[] = { "p", "-n", "4", NULL };
	ck_assert_int_eq(asb_flags_parse(ruled, ASB_FLAGS_GO, &o, 3, good, NULL, &r), 0);
	ck_assert(!r.rule && o.n == 4);
}
END_TEST

START_TEST(go_style_short_option_and_boolean_actions)
{
	opts o = { 0 };
	asb_flags_result r;
	char *h[] = { "p", "-n", "1", "-h", NULL };
	ck_assert_int_eq(asb_flags_parse(table, ASB_FLAGS_GO, &o, 4, h, NULL, &r), 0);
	ck_assert_int_eq(r.status, ASB_FLAGS_ACTION);
	ck_assert_str_eq(r.flag->name, "help");
	char *off[] = { "p", "-help=false", "--on", NULL };
	ck_assert_int_eq(asb_flags_parse(table, ASB_FLAGS_GO, &o, 3, off, NULL, &r), 0);
	ck_assert_int_eq(r.status, ASB_FLAGS_DONE);
	ck_assert(o.on);
	char *bad[] = { "p", "--help=perhaps", NULL };
	ck_assert_int_eq(asb_flags_parse(table, ASB_FLAGS_GO, &o, 2, bad, NULL, &r), ASB_EINVAL);
	ck_assert_int_eq(r.status, ASB_FLAGS_BAD_VALUE);
	ck_assert_str_eq(asb_error_last()->message,
	                 "invalid value \"perhaps\" for flag --help: must be true or false");
}
END_TEST

START_TEST(getopt_style_and_actions)
{
	opts o = { 0 };
	asb_flags_result r;
	char *argv[] = { "p", "--on=false", "--n", "3", "-h", NULL };
	ck_assert_int_eq(asb_flags_parse(table, ASB_FLAGS_GETOPT, &o, 5, argv, NULL, &r), 0);
	ck_assert_int_eq(r.status, ASB_FLAGS_ACTION);
	ck_assert_str_eq(r.flag->name, "help");
	ck_assert(!o.on && o.n == 3);
}
END_TEST

START_TEST(usage_lists_rows)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	asb_flags_layout lay = { .width = 8, .overflow_gap = 2, .show_short = true };
	asb_flags_usage(f, table, &lay);
	fclose(f);
	ck_assert_str_eq(buf, "  --on[=B] a switch\n"
	                      "  --n N    a number\n"
	                      "           second line\n"
	                      "  --wait D a duration\n"
	                      "  --name S a name\n"
	                      "Other:\n"
	                      "  -h, --help  help\n");
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("asb_flags");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, go_style_takes_both_spellings);
	tcase_add_test(tc, errors_name_the_flag);
	tcase_add_test(tc, rule_refusals_are_told_apart_from_type_errors);
	tcase_add_test(tc, getopt_style_and_actions);
	tcase_add_test(tc, go_style_short_option_and_boolean_actions);
	tcase_add_test(tc, usage_lists_rows);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
