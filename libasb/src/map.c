/*
 * map.c - string-keyed hash map, see map.h. Chained buckets keep removal
 * simple; the table (4 buckets at first) doubles when count reaches the
 * bucket count.
 */
#include <stdlib.h>
#include <string.h>
#include "asb/map.h"

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

void asb_map_init(asb_map *m)
{
	m->buckets = NULL;
	m->nbuckets = 0;
	m->count = 0;
}

void asb_map_clear(asb_map *m, asb_map_free_fn free_value)
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		asb_map_entry *e = m->buckets[i];
		while (e) {
			asb_map_entry *next = e->next;
			if (free_value)
				free_value(e->value);
			free(e->key);
			free(e);
			e = next;
		}
	}
	free(m->buckets);
	asb_map_init(m);
}

static asb_map_entry *find(const asb_map *m, const char *key, size_t h)
{
	if (m->nbuckets == 0)
		return NULL;
	for (asb_map_entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

void *asb_map_get(const asb_map *m, const char *key)
{
	asb_map_entry *e = find(m, key, hash_str(key));
	return e ? e->value : NULL;
}

int asb_map_has(const asb_map *m, const char *key)
{
	return find(m, key, hash_str(key)) != NULL;
}

static int grow(asb_map *m)
{
	/* small first: many maps (an informer index's sets) hold one entry */
	size_t n = m->nbuckets ? m->nbuckets * 2 : 4;
	asb_map_entry **b = calloc(n, sizeof(*b));
	if (!b)
		return -1;
	for (size_t i = 0; i < m->nbuckets; i++) {
		asb_map_entry *e = m->buckets[i];
		while (e) {
			asb_map_entry *next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
	return 0;
}

int asb_map_set(asb_map *m, const char *key, void *value, void **old)
{
	size_t h = hash_str(key);
	asb_map_entry *e = find(m, key, h);
	if (e) {
		if (old)
			*old = e->value;
		e->value = value;
		return 0;
	}
	if (old)
		*old = NULL;
	if (m->count >= m->nbuckets && grow(m) < 0)
		return -1;
	e = malloc(sizeof(*e));
	if (!e)
		return -1;
	e->key = strdup(key);
	if (!e->key) {
		free(e);
		return -1;
	}
	e->value = value;
	e->hash = h;
	e->next = m->buckets[h & (m->nbuckets - 1)];
	m->buckets[h & (m->nbuckets - 1)] = e;
	m->count++;
	return 0;
}

int asb_map_remove(asb_map *m, const char *key, void **old)
{
	if (m->nbuckets == 0)
		return 0;
	size_t h = hash_str(key);
	asb_map_entry **pp = &m->buckets[h & (m->nbuckets - 1)];
	for (; *pp; pp = &(*pp)->next) {
		asb_map_entry *e = *pp;
		if (e->hash == h && strcmp(e->key, key) == 0) {
			*pp = e->next;
			if (old)
				*old = e->value;
			free(e->key);
			free(e);
			m->count--;
			return 1;
		}
	}
	return 0;
}

size_t asb_map_count(const asb_map *m)
{
	return m->count;
}

asb_map_entry *asb_map_next(const asb_map *m, size_t *bucket, asb_map_entry **it)
{
	if (*it && (*it)->next)
		return *it = (*it)->next;
	size_t b = *it ? *bucket + 1 : *bucket;
	for (; b < m->nbuckets; b++) {
		if (m->buckets[b]) {
			*bucket = b;
			return *it = m->buckets[b];
		}
	}
	*bucket = m->nbuckets;
	return *it = NULL;
}
