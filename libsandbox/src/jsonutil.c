/*
 * jsonutil.c - the cJSON helpers of jsonutil.h.
 *
 * The two subtle ones are ju_merge_patch() (RFC 7386: objects merge
 * recursively, null deletes, anything else replaces, arrays included) and
 * ju_semantic_equal(), which reproduces what Go's equality.Semantic sees
 * when two objects went through JSON with `omitempty`: absent, null, "",
 * 0, false, [] and {} all read back as the zero value, so they compare
 * equal. Without that, a status read back from the API server (which drops
 * empty fields) would always "differ" from the computed one and every pass
 * would write.
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
	if (!obj || !item) {
		cJSON_Delete(item);
		return false;
	}
	bool ok;
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		ok = cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
	else
		ok = cJSON_AddItemToObject(obj, key, item);
	if (!ok)
		cJSON_Delete(item);
	return ok;
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

/* Returns the merged node: `target` edited in place, or a new node that
 * replaces it (the caller then frees `target`). NULL on allocation failure. */
static cJSON *merge(cJSON *target, const cJSON *patch, bool *ok)
{
	if (!cJSON_IsObject(patch)) {
		cJSON *copy = cJSON_Duplicate(patch, true);
		if (!copy)
			*ok = false;
		return copy;
	}
	if (!cJSON_IsObject(target)) {
		target = cJSON_CreateObject();
		if (!target) {
			*ok = false;
			return NULL;
		}
	}
	for (const cJSON *p = patch->child; p; p = p->next) {
		if (cJSON_IsNull(p)) {
			cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
			continue;
		}
		cJSON *cur = cJSON_GetObjectItemCaseSensitive(target, p->string);
		cJSON *m = merge(cur, p, ok);
		if (!m)
			continue;
		if (m != cur && !ju_set(target, p->string, m))
			*ok = false;
	}
	return target;
}

bool ju_merge_patch(cJSON *target, const cJSON *patch)
{
	bool ok = true;
	if (!cJSON_IsObject(target) || !cJSON_IsObject(patch))
		return false;
	merge(target, patch, &ok);
	return ok;
}

bool ju_is_zero(const cJSON *v)
{
	if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v))
		return true;
	if (cJSON_IsNumber(v))
		return v->valuedouble == 0;
	if (cJSON_IsString(v))
		return !v->valuestring || !*v->valuestring;
	if (cJSON_IsArray(v) || cJSON_IsObject(v))
		return v->child == NULL;
	return false;
}

/* An object whose members are all (deeply) zero reads back as a zero
 * struct: objects are compared as Go structs, never as maps. */
static bool deep_zero(const cJSON *v)
{
	if (ju_is_zero(v))
		return true;
	if (!cJSON_IsObject(v))
		return false;
	for (const cJSON *c = v->child; c; c = c->next)
		if (!deep_zero(c))
			return false;
	return true;
}

bool ju_semantic_equal(const cJSON *a, const cJSON *b)
{
	bool za = ju_is_zero(a), zb = ju_is_zero(b);
	if (za || zb)
		return deep_zero(a) && deep_zero(b);
	if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
		for (const cJSON *x = a->child; x; x = x->next)
			if (!ju_semantic_equal(x, cJSON_GetObjectItemCaseSensitive(b, x->string)))
				return false;
		for (const cJSON *y = b->child; y; y = y->next)
			if (!cJSON_GetObjectItemCaseSensitive(a, y->string) && !ju_is_zero(y))
				return false;
		return true;
	}
	if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
		const cJSON *x = a->child, *y = b->child;
		for (; x && y; x = x->next, y = y->next)
			if (!ju_semantic_equal(x, y))
				return false;
		return !x && !y;
	}
	if (cJSON_IsString(a) && cJSON_IsString(b))
		return strcmp(a->valuestring, b->valuestring) == 0;
	if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
		return a->valuedouble == b->valuedouble;
	if (cJSON_IsBool(a) && cJSON_IsBool(b))
		return cJSON_IsTrue(a) == cJSON_IsTrue(b);
	return false;
}

owner_class ju_owner_class(const cJSON *obj, const char *uid)
{
	const cJSON *ref = k8s_obj_controller_ref(obj);
	if (!ref)
		return OWNER_NONE;
	const char *ref_uid = ju_str(ref, "uid");
	if (uid && *uid && ref_uid && strcmp(ref_uid, uid) == 0)
		return OWNER_THIS;
	return OWNER_OTHER;
}

cJSON *ju_controller_ref(const char *name, const char *uid)
{
	cJSON *ref = cJSON_CreateObject();
	if (!ref)
		return NULL;
	bool ok = ju_set_str(ref, "apiVersion", SBX_API_VERSION) &&
	          ju_set_str(ref, "kind", SBX_KIND) &&
	          ju_set_str(ref, "name", name) &&
	          ju_set_str(ref, "uid", uid) &&
	          ju_set(ref, "controller", cJSON_CreateTrue()) &&
	          ju_set(ref, "blockOwnerDeletion", cJSON_CreateTrue());
	if (!ok) {
		cJSON_Delete(ref);
		return NULL;
	}
	return ref;
}

cJSON *ju_controller_refs(const char *name, const char *uid)
{
	cJSON *refs = cJSON_CreateArray();
	cJSON *ref = ju_controller_ref(name, uid);
	if (!refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
		cJSON_Delete(refs);
		cJSON_Delete(ref);
		return NULL;
	}
	return refs;
}

cJSON *ju_adopted_owner_refs(const cJSON *obj, const char *name,
                             const char *uid)
{
	cJSON *refs = cJSON_CreateArray();
	if (!refs)
		return NULL;
	const cJSON *old = k8s_obj_at(obj, "metadata.ownerReferences");
	const cJSON *r;
	cJSON_ArrayForEach(r, old) {
		if (ju_str_eq(ju_str(r, "uid"), uid))
			continue;
		cJSON *copy = cJSON_Duplicate(r, true);
		if (!copy || !cJSON_AddItemToArray(refs, copy)) {
			cJSON_Delete(copy);
			cJSON_Delete(refs);
			return NULL;
		}
	}
	cJSON *ctrl = ju_controller_ref(name, uid);
	if (!ctrl || !cJSON_AddItemToArray(refs, ctrl)) {
		cJSON_Delete(ctrl);
		cJSON_Delete(refs);
		return NULL;
	}
	return refs;
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
