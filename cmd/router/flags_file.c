/*
 * flags_file.c - the --config file (docs/upstream.md#router-configuration): a YAML map
 * whose keys are flag names and whose values are scalars, applied through
 * the same setter as the command line. Parsed by libyaml's document API.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "flags_table.h"

static int fail(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
	return -1;
}

static bool is_null(const yaml_node_t *n)
{
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *v = (const char *)n->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/* A plain scalar that is a whole-number float ("3.0", "1e3") is given as
 * the integer, as the Go router renders such values (docs/upstream.md#router-configuration). */
static const char *render(const yaml_node_t *n, char *buf, size_t cap)
{
	const char *v = (const char *)n->data.scalar.value;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !strpbrk(v, ".eE"))
		return v;
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || *end || !isfinite(d) || d != floor(d) || fabs(d) > 9.007199254740992e15)
		return v;
	snprintf(buf, cap, "%.0f", d);
	return buf;
}

int rt_flags_apply_file_seen(rt_flags *f, const char *path, bool *seen, char *err, size_t cap)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return fail(err, cap, "config file %s: %s", path, strerror(errno));
	yaml_parser_t parser;
	yaml_document_t doc;
	int rc = -1;
	if (!yaml_parser_initialize(&parser)) {
		fclose(fp);
		return fail(err, cap, "config file %s: out of memory", path);
	}
	yaml_parser_set_input_file(&parser, fp);
	if (!yaml_parser_load(&parser, &doc)) {
		fail(err, cap, "config file %s: line %zu: %s", path, parser.problem_mark.line + 1,
		     parser.problem ? parser.problem : "invalid YAML");
		yaml_parser_delete(&parser);
		fclose(fp);
		return -1;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {  /* an empty file sets nothing */
		rc = 0;
		goto out;
	}
	if (root->type != YAML_MAPPING_NODE) {
		fail(err, cap, "config file %s: want a map of flag names to values", path);
		goto out;
	}
	char origin[512];
	snprintf(origin, sizeof(origin), "config file %s", path);
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&doc, p->key);
		yaml_node_t *v = yaml_document_get_node(&doc, p->value);
		if (!k || k->type != YAML_SCALAR_NODE) {
			fail(err, cap, "config file %s: keys must be flag names", path);
			goto out;
		}
		const char *key = (const char *)k->data.scalar.value;
		const rt_flag_def *d = rt_flag_find(key, strlen(key));
		if (!d || !strcmp(key, "config")) {
			fail(err, cap, "config file %s: unknown key \"%s\"", path, key);
			goto out;
		}
		if (!v || v->type != YAML_SCALAR_NODE) {
			fail(err, cap, "config file %s: key \"%s\": nested values are not allowed", path, key);
			goto out;
		}
		if (is_null(v)) {
			fail(err, cap, "config file %s: key \"%s\" has no value", path, key);
			goto out;
		}
		char num[64];
		if (rt_flag_set(f, d, render(v, num, sizeof(num)), origin, err, cap) < 0)
			goto out;
		if (seen)
			seen[d - rt_flag_table] = true;
	}
	rc = 0;
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(fp);
	return rc;
}

int rt_flags_apply_file(rt_flags *f, const char *path, char *err, size_t cap)
{
	return rt_flags_apply_file_seen(f, path, NULL, err, cap);
}
