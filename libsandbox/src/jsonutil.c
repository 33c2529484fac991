/*
 * jsonutil.c - the cJSON helpers of jsonutil.h. Merge patches and semantic
 * equality live in libk8s (object.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsonutil.h"
#include "sandbox/api.h"
#include "k8s/object.h"

const char *ju_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

bool ju_str_eq(const char *a, const char *b)
{
	return strcmp(ju_nz(a), ju_nz(b)) == 0;
}

bool ju_set(cJSON *obj, const char *key, cJSON *item)
{
	return k8s_obj_set(obj, key, item);
}

bool ju_set_str(cJSON *obj, const char *key, const char *value)
{
	return ju_set(obj, key, cJSON_CreateString(ju_nz(value)));
}

bool ju_set_null(cJSON *obj, const char *key)
{
	return ju_set(obj, key, cJSON_CreateNull());
}

cJSON *ju_obj(cJSON *obj, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsObject(v))
		return v;
	v = cJSON_CreateObject();
	return ju_set(obj, key, v) ? v : NULL;
}

cJSON *ju_controller_refs(const char *name, const char *uid)
{
	return k8s_obj_controller_refs_new(SBX_API_VERSION, SBX_KIND, name, uid);
}

cJSON *ju_adopted_owner_refs(const cJSON *obj, const char *name,
                             const char *uid)
{
	return k8s_obj_adopted_owner_refs(obj, SBX_API_VERSION, SBX_KIND, name, uid);
}

const char *ju_api_group(const char *api_version, char *buf, size_t cap)
{
	const char *slash = api_version ? strchr(api_version, '/') : NULL;
	size_t n = slash ? (size_t)(slash - api_version) : 0;
	if (n >= cap)
		n = cap - 1;
	if (n)
		memcpy(buf, api_version, n);
	buf[n] = '\0';
	return buf;
}

char *ju_printf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

bool strlist_add(strlist *l, const char *s)
{
	if (l->len == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		const char **items = realloc(l->items, cap * sizeof(*items));
		if (!items)
			return false;
		l->items = items;
		l->cap = cap;
	}
	l->items[l->len++] = s;
	return true;
}

bool strlist_has(const strlist *l, const char *s)
{
	for (size_t i = 0; i < l->len; i++)
		if (strcmp(l->items[i], s) == 0)
			return true;
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void strlist_sort(strlist *l)
{
	if (l->len > 1)
		qsort(l->items, l->len, sizeof(*l->items), cmp_str);
}

char *strlist_join(const strlist *l, char sep)
{
	size_t total = 1;
	for (size_t i = 0; i < l->len; i++)
		total += strlen(l->items[i]) + 1;
	char *out = malloc(total), *p = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < l->len; i++) {
		if (i)
			*p++ = sep;
		size_t n = strlen(l->items[i]);
		memcpy(p, l->items[i], n);
		p += n;
	}
	*p = '\0';
	return out;
}

void strlist_free(strlist *l)
{
	free(l->items);
	l->items = NULL;
	l->len = l->cap = 0;
}

char *ju_split_commas(const char *s, strlist *out)
{
	char *buf = strdup(ju_nz(s));
	if (!buf)
		return NULL;
	char *p = buf;
	for (;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (*p && !strlist_add(out, p)) {
			free(buf);
			return NULL;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return buf;
}
