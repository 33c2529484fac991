/*
 * flags.c - table-driven command-line flags (asb/flags.h): the built-in
 * value kinds, the Go-style and getopt-style argv scanners and the --help
 * listing. Programs keep their own messages; the scanners report what they
 * found in an asb_flags_result for the program to word.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "asb/duration.h"
#include "asb/flags.h"

const asb_flag *asb_flags_find(const asb_flag *table, const char *name, size_t len)
{
	for (const asb_flag *d = table; d->name || d->help; d++)
		if (d->name && strlen(d->name) == len && strncmp(d->name, name, len) == 0)
			return d;
	return NULL;
}

/* Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits only. */
static int parse_i64(const char *s, int64_t *out)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return -1;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int asb_flags_set(const asb_flag *fl, void *opts, const char *v, char *why, size_t cap)
{
	char *base = (char *)opts + fl->off;
	const char *want = NULL;
	int64_t n;
	switch (fl->kind) {
	case ASB_FLAG_BOOL:
		if (k8s_parse_bool(v, (bool *)base) < 0)
			want = "must be true or false";
		break;
	case ASB_FLAG_INT:
		if (parse_i64(v, &n) < 0 || n < INT_MIN || n > INT_MAX)
			want = "must be an integer";
		else
			*(int *)base = (int)n;
		break;
	case ASB_FLAG_LONG:
		if (parse_i64(v, &n) < 0 || n < LONG_MIN || n > LONG_MAX)
			want = "must be an integer";
		else
			*(long *)base = (long)n;
		break;
	case ASB_FLAG_I64:
		if (parse_i64(v, (int64_t *)base) < 0)
			want = "must be an integer";
		break;
	case ASB_FLAG_DURATION_MS:
		if (asb_duration_parse_ms(v, (long *)base) < 0)
			want = "must be a duration such as 250ms, 30s or 1m30s";
		break;
	case ASB_FLAG_STRING: {
		char *copy = strdup(v);
		if (!copy) {
			want = "out of memory";
			break;
		}
		free(*(char **)base);
		*(char **)base = copy;
		break;
	}
	case ASB_FLAG_STRING_REF:
		*(const char **)base = v;
		break;
	case ASB_FLAG_CUSTOM:
		break;
	case ASB_FLAG_TEXT:
	case ASB_FLAG_ACTION:
		want = "takes no value";
		break;
	}
	if (want) {
		snprintf(why, cap, "%s", want);
		return -1;
	}
	return fl->set ? fl->set(opts, fl, v, why, cap) : 0;
}

static int bad_value(asb_flags_result *res, const asb_flag *fl, const char *v, int set_rc)
{
	res->status = ASB_FLAGS_BAD_VALUE;
	res->flag = fl;
	res->value = v;
	res->rule = set_rc == ASB_FLAG_RULE;
	return asb_error_set(ASB_EINVAL, 0, NULL, "invalid value \"%s\" for flag --%s: %s", v,
	                     fl->name, res->why);
}

/* A row by its name, or a one-letter name by a row's short option (Go's
 * flag package answers -h with the usage, as --help). */
static const asb_flag *find_go(const asb_flag *table, const char *name, size_t len)
{
	const asb_flag *d = asb_flags_find(table, name, len);
	for (const asb_flag *r = table; !d && len == 1 && (r->name || r->help); r++)
		if (r->name && r->short_opt == name[0])
			d = r;
	return d;
}

static int parse_go(const asb_flag *table, void *opts, int argc, char **argv, bool *seen,
                    asb_flags_result *res)
{
	const char *bare_bool = NULL;  /* the word before, when a boolean without "=" */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *after_bool = bare_bool;
		bare_bool = NULL;
		if (strcmp(a, "--") == 0) {
			if (i + 1 < argc) {
				res->status = ASB_FLAGS_UNEXPECTED;
				res->word = argv[i + 1];
				return asb_error_set(ASB_EINVAL, 0, NULL, "unexpected argument \"%s\"",
				                     res->word);
			}
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			res->status = ASB_FLAGS_UNEXPECTED;
			res->word = a;
			/* "-leader-elect false": Go's booleans take no separate value */
			bool b;
			if (after_bool && k8s_parse_bool(a, &b) == 0)
				return asb_error_set(ASB_EINVAL, 0, NULL, "unexpected argument \"%s\" after %s: "
				                     "a boolean flag takes its value as %s=%s", a, after_bool,
				                     after_bool, a);
			return asb_error_set(ASB_EINVAL, 0, NULL, "unexpected argument \"%s\"", a);
		}
		const char *name = a + (a[1] == '-' ? 2 : 1);
		const char *eq = strchr(name, '=');
		size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
		const asb_flag *d = find_go(table, name, nlen);
		if (!d) {
			/* named as given, dashes included, without its value */
			res->status = ASB_FLAGS_UNKNOWN;
			res->word = a;
			res->name = name;
			res->name_len = nlen;
			return asb_error_set(ASB_EINVAL, 0, NULL, "flag provided but not defined: %.*s",
			                     (int)(name - a + nlen), a);
		}
		if (seen)
			seen[d - table] = true;
		if (d->kind == ASB_FLAG_ACTION) {
			/* Go's -version and -help are booleans: -version=false is no request */
			bool on = true;
			if (eq && k8s_parse_bool(eq + 1, &on) < 0) {
				snprintf(res->why, sizeof(res->why), "must be true or false");
				return bad_value(res, d, eq + 1, -1);
			}
			if (!on)
				continue;
			res->status = ASB_FLAGS_ACTION;
			res->flag = d;
			return ASB_OK;
		}
		const char *v;
		if (eq)
			v = eq + 1;
		else if (d->kind == ASB_FLAG_BOOL)
			v = "true", bare_bool = a;
		else if (i + 1 < argc)
			v = argv[++i];
		else {
			res->status = ASB_FLAGS_NEEDS_VALUE;
			res->flag = d;
			return asb_error_set(ASB_EINVAL, 0, NULL, "flag needs an argument: --%s", d->name);
		}
		int set_rc = asb_flags_set(d, opts, v, res->why, sizeof(res->why));
		if (set_rc < 0)
			return bad_value(res, d, v, set_rc);
	}
	return ASB_OK;
}

/* The getopt styles: a struct option per row, its val 256 + the row index,
 * so that getopt's own matching (prefixes, permutation) is unchanged. */
static int parse_getopt(const asb_flag *table, bool long_only, void *opts, int argc,
                        char **argv, bool *seen, asb_flags_result *res)
{
	size_t rows = 0;
	while (table[rows].name || table[rows].help)
		rows++;
	struct option *lo = calloc(rows + 1, sizeof(*lo));
	char *shorts = calloc(rows * 3 + 1, 1);
	if (!lo || !shorts) {
		free(lo);
		free(shorts);
		res->status = ASB_FLAGS_NOMEM;
		return asb_error_set(ASB_ENOMEM, 0, NULL, "flags: out of memory");
	}
	size_t n = 0, ns = 0;
	for (size_t i = 0; i < rows; i++) {
		const asb_flag *d = &table[i];
		if (!d->name)
			continue;
		int has = d->kind == ASB_FLAG_ACTION ? no_argument
		        : d->kind == ASB_FLAG_BOOL ? optional_argument : required_argument;
		lo[n++] = (struct option){ d->name, has, NULL, 256 + (int)i };
		if (d->short_opt) {
			shorts[ns++] = d->short_opt;
			if (has != no_argument)
				shorts[ns++] = ':';
			if (has == optional_argument)
				shorts[ns++] = ':';
		}
	}
	int rc = ASB_OK, c;
	opterr = 0;
	optind = 1;
	while ((c = long_only ? getopt_long_only(argc, argv, shorts, lo, NULL)
	                      : getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const asb_flag *d = NULL;
		if (c >= 256 && (size_t)(c - 256) < rows)
			d = &table[c - 256];
		else if (c != '?' && c != ':')
			for (size_t i = 0; i < rows && !d; i++)
				if (table[i].name && table[i].short_opt == c)
					d = &table[i];
		if (!d) {
			/* unknown, ambiguous, or a value missing or not wanted */
			res->status = ASB_FLAGS_UNKNOWN;
			res->word = argv[optind - 1];
			rc = asb_error_set(ASB_EINVAL, 0, NULL, "unknown flag or missing value: %s",
			                   res->word);
			goto out;
		}
		if (seen)
			seen[d - table] = true;
		if (d->kind == ASB_FLAG_ACTION) {
			res->status = ASB_FLAGS_ACTION;
			res->flag = d;
			goto out;
		}
		const char *v = optarg ? optarg : "true";  /* only booleans lack one */
		int set_rc = asb_flags_set(d, opts, v, res->why, sizeof(res->why));
		if (set_rc < 0) {
			rc = bad_value(res, d, v, set_rc);
			goto out;
		}
	}
	if (optind < argc) {
		res->status = ASB_FLAGS_UNEXPECTED;
		res->word = argv[optind];
		rc = asb_error_set(ASB_EINVAL, 0, NULL, "unexpected argument \"%s\"", res->word);
	}
out:
	free(lo);
	free(shorts);
	return rc;
}

int asb_flags_parse(const asb_flag *table, asb_flags_style style, void *opts, int argc,
                    char **argv, bool *seen, asb_flags_result *res)
{
	*res = (asb_flags_result){ .status = ASB_FLAGS_DONE };
	if (style == ASB_FLAGS_GO)
		return parse_go(table, opts, argc, argv, seen, res);
	return parse_getopt(table, style == ASB_FLAGS_GETOPT_LONG_ONLY, opts, argc, argv, seen, res);
}

void asb_flags_usage_line(FILE *out, const asb_flags_layout *lay, const char *left,
                          const char *help)
{
	int len = (int)strlen(left);
	int gap = len > lay->width ? lay->overflow_gap : 1;
	fprintf(out, "  %-*s%*s", lay->width, left, gap, "");
	for (const char *p = help; *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		fprintf(out, "%.*s\n", (int)l, p);
		if (!nl)
			return;
		p = nl + 1;
		fprintf(out, "%*s", 2 + lay->width + 1, "");
	}
	fputc('\n', out);
}

void asb_flags_usage(FILE *out, const asb_flag *table, const asb_flags_layout *lay)
{
	for (const asb_flag *d = table; d->name || d->help; d++) {
		if (!d->name) {
			fprintf(out, "%s\n", d->help);
			continue;
		}
		char left[256];
		const char *sep = !d->arg ? "" : d->arg[0] == '[' ? "" : " ";
		if (lay->show_short && d->short_opt)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", d->short_opt, d->name, sep,
			         d->arg ? d->arg : "");
		else
			snprintf(left, sizeof(left), "--%s%s%s", d->name, sep, d->arg ? d->arg : "");
		asb_flags_usage_line(out, lay, left, d->help ? d->help : "");
	}
}
