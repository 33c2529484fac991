/*
 * flags_file.c - the --config file (docs/upstream.md#router-configuration): a YAML map
 * whose keys are flag names and whose values are scalars, applied through
 * the same setter as the command line. Read by libk8s (k8s/yaml.h), with
 * each scalar's text kept as written (K8S_YAML_SCALAR_TEXT): the flag
 * parsers, not YAML's typing, decide what "0644" or "yes" means.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/strbuf.h"
#include "k8s/yaml.h"
#include "flags_table.h"

static int fail(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
	return -1;
}

/* A plain scalar that is a whole-number float ("3.0", "1e3") is given as
 * the integer, as the Go router renders such values (docs/upstream.md#router-configuration).
 * Plain bools and numbers come as raw nodes (K8S_YAML_SCALAR_TEXT);
 * quoted scalars are strings, given as written. */
static const char *render(const cJSON *v, char *buf, size_t cap)
{
	const char *s = v->valuestring;
	if (!cJSON_IsRaw(v) || !strpbrk(s, ".eE"))
		return s;
	char *end;
	errno = 0;
	double d = strtod(s, &end);
	if (errno || *end || !isfinite(d) || d != floor(d) || fabs(d) > 9.007199254740992e15)
		return s;
	snprintf(buf, cap, "%.0f", d);
	return buf;
}

/* A flag map is a few kB: a bound keeps a wrong path (a device such as
 * /dev/zero, a huge file) from taking the machine's memory. */
#define CONFIG_MAX_BYTES (1 << 20)

/* The whole file into `out`; -1 with errno on failure (EFBIG: larger than
 * CONFIG_MAX_BYTES). */
static int read_all(const char *path, asb_strbuf *out)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return -1;
	char chunk[4096];
	size_t n;
	while (out->len <= CONFIG_MAX_BYTES && (n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		asb_strbuf_add(out, chunk, n);
	int bad = ferror(fp) ? EIO : out->failed ? ENOMEM : out->len > CONFIG_MAX_BYTES ? EFBIG : 0;
	fclose(fp);
	errno = bad;
	return bad ? -1 : 0;
}

int rt_flags_apply_file_seen(rt_flags *f, const char *path, bool *seen, char *err, size_t cap)
{
	asb_strbuf text = ASB_STRBUF_INIT;
	if (read_all(path, &text) < 0) {
		int e = errno;
		asb_strbuf_free(&text);
		if (e == EFBIG)
			return fail(err, cap, "config file %s: larger than 1 MiB", path);
		return fail(err, cap, "config file %s: %s", path, strerror(e));
	}
	char origin[512];
	snprintf(origin, sizeof(origin), "config file %s", path);
	cJSON *root;
	int rc = k8s_yaml_to_json(&root, text.data, text.len, origin, K8S_YAML_SCALAR_TEXT);
	asb_strbuf_free(&text);
	if (rc)  /* "config file PATH: line L, column C: ..." */
		return fail(err, cap, "%s", asb_error_last()->message);
	rc = -1;
	if (cJSON_IsNull(root)) {  /* an empty file sets nothing */
		rc = 0;
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		fail(err, cap, "config file %s: want a map of flag names to values", path);
		goto out;
	}
	const cJSON *v;
	cJSON_ArrayForEach(v, root) {
		const char *key = v->string;
		const rt_flag_def *d = rt_flag_find(key, strlen(key));
		if (!d || !strcmp(key, "config")) {
			fail(err, cap, "config file %s: unknown key \"%s\"", path, key);
			goto out;
		}
		if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
			fail(err, cap, "config file %s: key \"%s\": nested values are not allowed", path, key);
			goto out;
		}
		if (cJSON_IsNull(v)) {
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
	cJSON_Delete(root);
	return rc;
}

int rt_flags_apply_file(rt_flags *f, const char *path, char *err, size_t cap)
{
	return rt_flags_apply_file_seen(f, path, NULL, err, cap);
}
