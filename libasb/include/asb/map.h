/*
 * map.h - a string-keyed hash map (open hashing with chained buckets,
 * FNV-1a, power-of-two table that doubles at load factor 1). The informer
 * cache, its indexes, the work queue sets and the metrics registry use it.
 * Not thread-safe: callers hold their own lock.
 */
#ifndef ASB_MAP_H
#define ASB_MAP_H

#include <stddef.h>
#include "asb/common.h"

typedef struct asb_map_entry {
	char *key;
	void *value;
	size_t hash;
	struct asb_map_entry *next;
} asb_map_entry;

typedef struct {
	asb_map_entry **buckets;
	size_t nbuckets;   /* power of two, or 0 before the first insert */
	size_t count;
} asb_map;

/** Frees values when the map is cleared or an entry is replaced/removed. */
typedef void (*asb_map_free_fn)(void *value);

/** Initialises an empty map (no allocation). */
ASB_EXTERN void asb_map_init(asb_map *m);

/** Frees every entry (calling `free_value` on values when not NULL). */
ASB_EXTERN void asb_map_clear(asb_map *m, asb_map_free_fn free_value);

/** Returns the value for `key`, or NULL. */
ASB_EXTERN void *asb_map_get(const asb_map *m, const char *key);

/** True when `key` is present (even with a NULL value). */
ASB_EXTERN int asb_map_has(const asb_map *m, const char *key);

/**
 * Sets `key` (copied) to `value`. When the key exists its old value is
 * returned in *old (if `old` not NULL) and replaced. Returns 0, or -1 when
 * out of memory (the map is unchanged).
 */
ASB_EXTERN int asb_map_set(asb_map *m, const char *key, void *value, void **old);

/** Removes `key`; its value is returned in *old (if not NULL). Returns 1 if removed, 0 if absent. */
ASB_EXTERN int asb_map_remove(asb_map *m, const char *key, void **old);

/** Number of entries. */
ASB_EXTERN size_t asb_map_count(const asb_map *m);

/** Iteration: pass *it = NULL and *bucket = 0 to start; returns NULL at the end. */
ASB_EXTERN asb_map_entry *asb_map_next(const asb_map *m, size_t *bucket, asb_map_entry **it);

#endif
