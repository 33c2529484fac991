/*
 * object.c - helpers over cJSON Kubernetes objects (see object.h): reads,
 * RFC 7386 merge patches, semantic equality, owner references, and the
 * RFC 3339 time conversions used by conditions and expiry.
 *
 * The two subtle ones are k8s_obj_merge_patch() (objects merge
 * recursively, null deletes, anything else replaces, arrays included) and
 * k8s_obj_semantic_equal(), which reproduces what Go's equality.Semantic
 * sees when two objects went through JSON with `omitempty`: absent, null,
 * "", 0, false, [] and {} all read back as the zero value, so they compare
 * equal. Without that, a status read back from the API server (which drops
 * empty fields) would always "differ" from the computed one and every
 * reconcile would write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "k8s/object.h"

const cJSON *k8s_obj_at(const cJSON *obj, const char *path)
{
	const cJSON *cur = obj;
	const char *p = path;
	char seg[256];
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(seg) || !cJSON_IsObject(cur))
			return NULL;
		memcpy(seg, p, n);
		seg[n] = '\0';
		cur = cJSON_GetObjectItemCaseSensitive(cur, seg);
		p += n;
		if (*p == '.')
			p++;
	}
	return cur;
}

const char *k8s_obj_str(const cJSON *obj, const char *path)
{
	const cJSON *n = k8s_obj_at(obj, path);
	return cJSON_IsString(n) ? n->valuestring : NULL;
}

const char *k8s_obj_name(const cJSON *obj) { return k8s_obj_str(obj, "metadata.name"); }
const char *k8s_obj_namespace(const cJSON *obj) { return k8s_obj_str(obj, "metadata.namespace"); }
const char *k8s_obj_uid(const cJSON *obj) { return k8s_obj_str(obj, "metadata.uid"); }
const char *k8s_obj_resource_version(const cJSON *obj) { return k8s_obj_str(obj, "metadata.resourceVersion"); }

int64_t k8s_obj_generation(const cJSON *obj)
{
	const cJSON *n = k8s_obj_at(obj, "metadata.generation");
	/* a number beyond int64 (only in a malformed object) must not reach
	 * the conversion, which is undefined behaviour for it */
	if (!cJSON_IsNumber(n) || !(n->valuedouble > -9.2e18 && n->valuedouble < 9.2e18))
		return 0;
	return (int64_t)n->valuedouble;
}

bool k8s_obj_is_deleting(const cJSON *obj)
{
	const cJSON *n = k8s_obj_at(obj, "metadata.deletionTimestamp");
	return n && !cJSON_IsNull(n);
}

static const char *map_str(const cJSON *obj, const char *map, const char *key)
{
	const cJSON *m = k8s_obj_at(obj, map);
	const cJSON *v = cJSON_IsObject(m) ? cJSON_GetObjectItemCaseSensitive(m, key) : NULL;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *k8s_obj_label(const cJSON *obj, const char *key)
{
	return map_str(obj, "metadata.labels", key);
}

const char *k8s_obj_annotation(const cJSON *obj, const char *key)
{
	return map_str(obj, "metadata.annotations", key);
}

const cJSON *k8s_obj_controller_ref(const cJSON *obj)
{
	const cJSON *refs = k8s_obj_at(obj, "metadata.ownerReferences");
	const cJSON *r;
	cJSON_ArrayForEach(r, refs) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller")))
			return r;
	}
	return NULL;
}

/* --- editing, merge patch and semantic equality -------------------------- */

bool k8s_obj_set(cJSON *obj, const char *key, cJSON *item)
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
		if (m != cur && !k8s_obj_set(target, p->string, m))
			*ok = false;
	}
	return target;
}

bool k8s_obj_merge_patch(cJSON *target, const cJSON *patch)
{
	bool ok = true;
	if (!cJSON_IsObject(target) || !cJSON_IsObject(patch))
		return false;
	merge(target, patch, &ok);
	return ok;
}

bool k8s_obj_is_zero(const cJSON *v)
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
	if (k8s_obj_is_zero(v))
		return true;
	if (!cJSON_IsObject(v))
		return false;
	for (const cJSON *c = v->child; c; c = c->next)
		if (!deep_zero(c))
			return false;
	return true;
}

bool k8s_obj_semantic_equal(const cJSON *a, const cJSON *b)
{
	bool za = k8s_obj_is_zero(a), zb = k8s_obj_is_zero(b);
	if (za || zb)
		return deep_zero(a) && deep_zero(b);
	if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
		for (const cJSON *x = a->child; x; x = x->next)
			if (!k8s_obj_semantic_equal(x, cJSON_GetObjectItemCaseSensitive(b, x->string)))
				return false;
		for (const cJSON *y = b->child; y; y = y->next)
			if (!cJSON_GetObjectItemCaseSensitive(a, y->string) && !k8s_obj_is_zero(y))
				return false;
		return true;
	}
	if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
		const cJSON *x = a->child, *y = b->child;
		for (; x && y; x = x->next, y = y->next)
			if (!k8s_obj_semantic_equal(x, y))
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

/* --- owner references ---------------------------------------------------- */

k8s_owner_class k8s_obj_owner_class(const cJSON *obj, const char *uid)
{
	const cJSON *ref = k8s_obj_controller_ref(obj);
	if (!ref)
		return K8S_OWNER_NONE;
	const char *ref_uid = k8s_obj_str(ref, "uid");
	if (uid && *uid && ref_uid && strcmp(ref_uid, uid) == 0)
		return K8S_OWNER_THIS;
	return K8S_OWNER_OTHER;
}

static bool set_str(cJSON *obj, const char *key, const char *value)
{
	return k8s_obj_set(obj, key, cJSON_CreateString(value ? value : ""));
}

cJSON *k8s_obj_controller_ref_new(const char *api_version, const char *kind,
                                  const char *name, const char *uid)
{
	cJSON *ref = cJSON_CreateObject();
	if (!ref)
		return NULL;
	bool ok = set_str(ref, "apiVersion", api_version) &&
	          set_str(ref, "kind", kind) &&
	          set_str(ref, "name", name) &&
	          set_str(ref, "uid", uid) &&
	          k8s_obj_set(ref, "controller", cJSON_CreateTrue()) &&
	          k8s_obj_set(ref, "blockOwnerDeletion", cJSON_CreateTrue());
	if (!ok) {
		cJSON_Delete(ref);
		return NULL;
	}
	return ref;
}

cJSON *k8s_obj_controller_refs_new(const char *api_version, const char *kind,
                                   const char *name, const char *uid)
{
	cJSON *refs = cJSON_CreateArray();
	cJSON *ref = k8s_obj_controller_ref_new(api_version, kind, name, uid);
	if (!refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
		cJSON_Delete(refs);
		cJSON_Delete(ref);
		return NULL;
	}
	return refs;
}

cJSON *k8s_obj_adopted_owner_refs(const cJSON *obj, const char *api_version,
                                  const char *kind, const char *name,
                                  const char *uid)
{
	cJSON *refs = cJSON_CreateArray();
	if (!refs)
		return NULL;
	const cJSON *old = k8s_obj_at(obj, "metadata.ownerReferences");
	const cJSON *r;
	cJSON_ArrayForEach(r, old) {
		const char *ref_uid = k8s_obj_str(r, "uid");
		if (strcmp(ref_uid ? ref_uid : "", uid ? uid : "") == 0)
			continue;
		cJSON *copy = cJSON_Duplicate(r, true);
		if (!copy || !cJSON_AddItemToArray(refs, copy)) {
			cJSON_Delete(copy);
			cJSON_Delete(refs);
			return NULL;
		}
	}
	cJSON *ctrl = k8s_obj_controller_ref_new(api_version, kind, name, uid);
	if (!ctrl || !cJSON_AddItemToArray(refs, ctrl)) {
		cJSON_Delete(ctrl);
		cJSON_Delete(refs);
		return NULL;
	}
	return refs;
}

char *k8s_obj_key(const cJSON *obj)
{
	const char *name = k8s_obj_name(obj);
	const char *ns = k8s_obj_namespace(obj);
	if (!name)
		return NULL;
	size_t n = strlen(name) + (ns ? strlen(ns) + 1 : 0) + 1;
	char *k = malloc(n);
	if (!k)
		return NULL;
	if (ns && *ns)
		snprintf(k, n, "%s/%s", ns, name);
	else
		snprintf(k, n, "%s", name);
	return k;
}

int k8s_key_split(const char *key, char **ns, char **name)
{
	*ns = *name = NULL;
	if (!key || !*key)
		return asb_error_set(ASB_EINVAL, 0, NULL, "empty object key");
	const char *slash = strchr(key, '/');
	*ns = slash ? strndup(key, (size_t)(slash - key)) : strdup("");
	*name = strdup(slash ? slash + 1 : key);
	if (!*ns || !*name) {
		free(*ns);
		free(*name);
		*ns = *name = NULL;
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

int k8s_time_parse(const char *s, int64_t *ms_out)
{
	int Y, M, D, h, m, sec, n = 0;
	if (!s || sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6 || n == 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "invalid RFC 3339 time \"%s\"", s ? s : "");
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return asb_error_set(ASB_EINVAL, 0, NULL, "invalid RFC 3339 time \"%s\"", s);
	const char *p = s + n;
	int64_t frac_ms = 0;
	if (*p == '.') {
		int digits = 0;
		p++;
		while (*p >= '0' && *p <= '9') {
			if (digits < 3)
				frac_ms = frac_ms * 10 + (*p - '0');
			digits++;
			p++;
		}
		if (digits == 0)
			return asb_error_set(ASB_EINVAL, 0, NULL, "invalid RFC 3339 time \"%s\"", s);
		for (; digits < 3; digits++)
			frac_ms *= 10;
	}
	int64_t offset_s = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;
		if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
			return asb_error_set(ASB_EINVAL, 0, NULL, "invalid RFC 3339 offset in \"%s\"", s);
		offset_s = (oh * 3600 + om * 60) * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return asb_error_set(ASB_EINVAL, 0, NULL, "RFC 3339 time \"%s\" has no zone", s);
	}
	if (*p != '\0')
		return asb_error_set(ASB_EINVAL, 0, NULL, "trailing characters in time \"%s\"", s);
	int64_t days = days_from_civil(Y, (unsigned)M, (unsigned)D);
	int64_t secs = days * 86400 + h * 3600 + m * 60 + sec - offset_s;
	*ms_out = secs * 1000 + frac_ms;
	return 0;
}

char *k8s_time_format(int64_t ms, char *buf, size_t cap)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

int64_t k8s_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t k8s_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
