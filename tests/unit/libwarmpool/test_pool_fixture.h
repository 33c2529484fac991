/*
 * test_pool_fixture.h - helpers of the template and pool unit tests: load a
 * JSON fixture from tests/unit/libwarmpool/fixtures/ and edit it by dotted
 * path. Header-only (static functions) so each test program stands alone.
 */
#ifndef WP_TEST_POOL_FIXTURE_H
#define WP_TEST_POOL_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

/* Loads fixtures/<file>; fails the test when unreadable or not JSON. */
static inline cJSON *fx_load(const char *file)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", TEST_DATA_DIR, file);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	cJSON *j = cJSON_Parse(buf);
	free(buf);
	ck_assert_msg(j != NULL, "%s is not JSON", path);
	return j;
}

/* The parent object of the last segment of the dotted `path`, created as
 * needed; `*last` points at that segment inside `buf`. */
static inline cJSON *fx_parent(cJSON *obj, const char *path, char *buf, size_t cap,
                               const char **last)
{
	snprintf(buf, cap, "%s", path);
	char *seg = buf, *dot;
	while ((dot = strchr(seg, '.')) != NULL) {
		*dot = '\0';
		cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, seg);
		if (!cJSON_IsObject(c)) {
			cJSON_DeleteItemFromObjectCaseSensitive(obj, seg);
			c = cJSON_AddObjectToObject(obj, seg);
		}
		obj = c;
		seg = dot + 1;
	}
	*last = seg;
	return obj;
}

/* Sets `value` (taken) at the dotted `path` of `obj`, creating objects. */
static inline void fx_set(cJSON *obj, const char *path, cJSON *value)
{
	char buf[512];
	const char *last;
	cJSON *p = fx_parent(obj, path, buf, sizeof(buf), &last);
	cJSON_DeleteItemFromObjectCaseSensitive(p, last);
	cJSON_AddItemToObject(p, last, value);
}

static inline void fx_set_str(cJSON *obj, const char *path, const char *value)
{
	fx_set(obj, path, cJSON_CreateString(value));
}

/* Parses `json` and sets it at `path`. */
static inline void fx_set_json(cJSON *obj, const char *path, const char *json)
{
	cJSON *v = cJSON_Parse(json);
	ck_assert_msg(v != NULL, "bad JSON in test: %s", json);
	fx_set(obj, path, v);
}

/* Deletes the member at `path` (if any). */
static inline void fx_del(cJSON *obj, const char *path)
{
	char buf[512];
	const char *last;
	cJSON *p = fx_parent(obj, path, buf, sizeof(buf), &last);
	cJSON_DeleteItemFromObjectCaseSensitive(p, last);
}

/* Sets (NULL: deletes) metadata.labels[key]; keys may contain dots. */
static inline void fx_label(cJSON *obj, const char *key, const char *value)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	if (!md)
		md = cJSON_AddObjectToObject(obj, "metadata");
	cJSON *l = cJSON_GetObjectItemCaseSensitive(md, "labels");
	if (!l)
		l = cJSON_AddObjectToObject(md, "labels");
	cJSON_DeleteItemFromObjectCaseSensitive(l, key);
	if (value)
		cJSON_AddStringToObject(l, key, value);
}

#endif
