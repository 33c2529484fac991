/*
 * jsonutil.h - small cJSON helpers shared by the reconcile code: typed
 * reads of direct children, get-or-create of nested objects, Sandbox owner
 * references, sorted string lists and printf into a new string. The
 * generic object helpers they build on are libk8s's (k8s/object.h).
 * Private to libsandbox.
 */
#ifndef SBX_JSONUTIL_H
#define SBX_JSONUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "k8s/object.h"

/** Direct child `key` of `obj` as a string, or NULL. */
const char *ju_str(const cJSON *obj, const char *key);

/** `s` or "" when NULL. */
static inline const char *ju_nz(const char *s) { return s ? s : ""; }

/** True when both strings are equal, NULL counting as "". */
bool ju_str_eq(const char *a, const char *b);

/** True when `s` is NULL or "". */
static inline bool ju_empty(const char *s) { return !s || !*s; }

/**
 * Direct child object `key` of `obj`, created (empty) when missing or not
 * an object. Returns NULL only on allocation failure.
 */
cJSON *ju_obj(cJSON *obj, const char *key);

/**
 * Replaces (or adds) child `key` of `obj` by `item`, which is taken in all
 * cases (freed on failure). False on failure (or a NULL obj/item).
 */
bool ju_set(cJSON *obj, const char *key, cJSON *item);

/** ju_set() with a new string / null / bool. */
bool ju_set_str(cJSON *obj, const char *key, const char *value);
bool ju_set_null(cJSON *obj, const char *key);

/*
 * Merge patches, semantic equality and owner-reference classification are
 * libk8s's (k8s/object.h: k8s_obj_merge_patch(), k8s_obj_semantic_equal(),
 * k8s_obj_owner_class(), ...); what stays here binds them to the Sandbox.
 */

/** A new array holding only a controller ownerReference to Sandbox `name`/`uid` (v1beta1). */
cJSON *ju_controller_refs(const char *name, const char *uid);

/**
 * The ownerReferences of `obj` without any reference to `uid`, plus a
 * controller reference to Sandbox `name`/`uid` at the end (adoption).
 */
cJSON *ju_adopted_owner_refs(const cJSON *obj, const char *name,
                             const char *uid);

/** The group of an apiVersion ("apps/v1" => "apps", "v1" => ""), copied into buf. */
const char *ju_api_group(const char *api_version, char *buf, size_t cap);

/** A new string formatted like printf, or NULL on allocation failure. */
char *ju_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** A growable list of borrowed strings. */
typedef struct {
	const char **items;
	size_t len, cap;
} strlist;

bool strlist_add(strlist *l, const char *s);
bool strlist_has(const strlist *l, const char *s);
void strlist_sort(strlist *l);
/** Joins the items with `sep` into a new string ("" for none). */
char *strlist_join(const strlist *l, char sep);
void strlist_free(strlist *l);

/**
 * Splits the comma-separated `s` (NULL: empty) into `out`: items are not
 * trimmed and empty items are skipped (docs/api.md#pod-metadata). The items point
 * into the returned buffer, which the caller frees after `out`. Returns
 * NULL on allocation failure.
 */
char *ju_split_commas(const char *s, strlist *out);

#endif
