/*
 * jsonutil.h - small cJSON helpers shared by the reconcile code: typed
 * reads of direct children, get-or-create of nested objects, RFC 7386 merge
 * patches, Kubernetes "semantic" equality, owner references, sorted string
 * lists and printf into a new string.
 *
 * Some of these belong in libk8s (merge patch apply, semantic equality,
 * owner-reference classification); they live here until libk8s grows them.
 * Private to libsandbox.
 */
#ifndef SBX_JSONUTIL_H
#define SBX_JSONUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

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

/** Applies the RFC 7386 merge patch `patch` to the object `target` in place. */
bool ju_merge_patch(cJSON *target, const cJSON *patch);

/**
 * Kubernetes semantic equality over JSON produced from Go types with
 * `omitempty`: a missing member equals null, "", 0, false, [] and {};
 * objects compare as structs (an object of zero members equals a missing
 * one); arrays compare element-wise in order; numbers by value.
 */
bool ju_semantic_equal(const cJSON *a, const cJSON *b);

/** True when `v` is missing or a zero value in the sense above. */
bool ju_is_zero(const cJSON *v);

/** Ownership of an object relative to a Sandbox (docs/api.md#ownership). */
typedef enum {
	OWNER_NONE = 0,   /* unowned: no controller ownerReference */
	OWNER_THIS = 1,   /* controller ownerReference UID == the sandbox UID */
	OWNER_OTHER = 2   /* controlled by something else */
} owner_class;

/** Classifies `obj` against the sandbox UID `uid`. */
owner_class ju_owner_class(const cJSON *obj, const char *uid);

/** A new controller ownerReference to Sandbox `name`/`uid` (v1beta1). */
cJSON *ju_controller_ref(const char *name, const char *uid);

/** A new array holding only ju_controller_ref(name, uid). */
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
