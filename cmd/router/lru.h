/*
 * lru.h - a bounded cache of authorization decisions (rt_lru): string key
 * to (verdict, detail text, expiry), least recently used entry evicted
 * when full. Used by the tokenreview mode (docs/upstream.md#router-authorization: an LRU of
 * --authz-tokenreview-cache-size entries keyed by the token's SHA-256).
 * Thread-safe (one mutex; every operation is O(1) on average).
 */
#ifndef RT_LRU_H
#define RT_LRU_H

#include <stddef.h>
#include <stdint.h>

typedef struct rt_lru rt_lru;

/** Creates a cache of at most `cap` (>= 1) entries. 0 or -1 (memory). */
int rt_lru_new(rt_lru **out, size_t cap);

/** Frees; NULL accepted. */
void rt_lru_free(rt_lru *c);

/**
 * Looks `key` up at time `now_ms`: 0 with `*verdict` and the detail
 * (copied into `detail`, truncated to `cap`) when present and not
 * expired (it becomes the most recent), else -1 (an expired entry is
 * dropped).
 */
int rt_lru_get(rt_lru *c, const char *key, int64_t now_ms, int *verdict, char *detail,
               size_t cap);

/** Stores or replaces `key` until `expires_ms`. 0 or -1 (memory). */
int rt_lru_put(rt_lru *c, const char *key, int verdict, const char *detail,
               int64_t expires_ms);

/** Number of entries. */
size_t rt_lru_size(rt_lru *c);

#endif
