/*
 * map.h - a string-keyed hash map (open hashing with chained buckets,
 * FNV-1a, power-of-two table that doubles at load factor 1). Internal to
 * libk8s: the informer cache, its indexes and the work queue sets use it.
 * Not thread-safe: callers hold their own lock.
 */
#ifndef K8S_MAP_H
#define K8S_MAP_H

#include <stddef.h>

typedef struct k8s_map_entry {
	char *key;
	void *value;
	size_t hash;
	struct k8s_map_entry *next;
} k8s_map_entry;

typedef struct {
	k8s_map_entry **buckets;
	size_t nbuckets;   /* power of two, or 0 before the first insert */
	size_t count;
} k8s_map;

/** Frees values when the map is cleared or an entry is replaced/removed. */
typedef void (*k8s_map_free_fn)(void *value);

/** Initialises an empty map (no allocation). */
void k8s_map_init(k8s_map *m);

/** Frees every entry (calling `free_value` on values when not NULL). */
void k8s_map_clear(k8s_map *m, k8s_map_free_fn free_value);

/** Returns the value for `key`, or NULL. */
void *k8s_map_get(const k8s_map *m, const char *key);

/** True when `key` is present (even with a NULL value). */
int k8s_map_has(const k8s_map *m, const char *key);

/**
 * Sets `key` (copied) to `value`. When the key exists its old value is
 * returned in *old (if `old` not NULL) and replaced. Returns 0, or -1 when
 * out of memory (the map is unchanged).
 */
int k8s_map_set(k8s_map *m, const char *key, void *value, void **old);

/** Removes `key`; its value is returned in *old (if not NULL). Returns 1 if removed, 0 if absent. */
int k8s_map_remove(k8s_map *m, const char *key, void **old);

/** Number of entries. */
size_t k8s_map_count(const k8s_map *m);

/** Iteration: pass *it = NULL and *bucket = 0 to start; returns NULL at the end. */
k8s_map_entry *k8s_map_next(const k8s_map *m, size_t *bucket, k8s_map_entry **it);

#endif
