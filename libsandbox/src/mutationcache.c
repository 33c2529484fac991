/*
 * mutationcache.c - read-your-own-writes for Sandboxes, see mutationcache.h.
 *
 * A string-keyed hash map (chained buckets, FNV-1a, power-of-two table
 * doubling at load factor 1) behind one mutex. Entries are small (the last
 * written object and a few resourceVersions) and short-lived.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sandbox/mutationcache.h"
#include "k8s/object.h"

typedef struct entry {
	char *key;
	size_t hash;
	cJSON *obj;                                        /* last written */
	char *superseded[SBX_MUTATION_CACHE_MAX_SUPERSEDED]; /* oldest first */
	size_t n;
	struct entry *next;
} entry;

struct sbx_mutation_cache {
	pthread_mutex_t lock;   /* guards everything below */
	entry **buckets;
	size_t nbuckets;        /* power of two, or 0 before the first insert */
	size_t count;
};

static bool nonempty(const char *s)
{
	return s && *s;
}

/* Equal non-NULL strings. */
static bool same_str(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

sbx_read_choice sbx_mutation_choose(const char *informer_rv,
                                    const char *remembered_rv,
                                    const char *const *superseded, size_t n)
{
	if (!nonempty(informer_rv) || !nonempty(remembered_rv) || !superseded ||
	    strcmp(informer_rv, remembered_rv) == 0)
		return SBX_READ_INFORMER;
	for (size_t i = 0; i < n; i++)
		if (nonempty(superseded[i]) && strcmp(superseded[i], informer_rv) == 0)
			return SBX_READ_REMEMBERED;
	return SBX_READ_INFORMER;
}

static size_t fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

static void entry_free(entry *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->superseded[i]);
	cJSON_Delete(e->obj);
	free(e->key);
	free(e);
}

/* The link pointing at `key`'s entry (or at the NULL ending its bucket).
 * Caller holds the lock; nbuckets > 0. */
static entry **find_link(sbx_mutation_cache *c, const char *key, size_t hash)
{
	entry **link = &c->buckets[hash & (c->nbuckets - 1)];
	while (*link && ((*link)->hash != hash || strcmp((*link)->key, key) != 0))
		link = &(*link)->next;
	return link;
}

/* Unlinks and frees `key`'s entry, if any. Caller holds the lock. */
static void drop_locked(sbx_mutation_cache *c, const char *key, size_t hash)
{
	if (!c->nbuckets)
		return;
	entry **link = find_link(c, key, hash);
	entry *e = *link;
	if (e) {
		*link = e->next;
		c->count--;
		entry_free(e);
	}
}

/* Doubles the table when full (load factor 1). Failure keeps the old
 * table, which still works, only with longer chains. */
static void grow_locked(sbx_mutation_cache *c)
{
	if (c->nbuckets && c->count < c->nbuckets)
		return;
	size_t nb = c->nbuckets ? c->nbuckets * 2 : 64;
	entry **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		entry *e = c->buckets[i];
		while (e) {
			entry *next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
			e = next;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = nb;
}

int sbx_mutation_cache_new(sbx_mutation_cache **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_mutation_cache_new: NULL out");
	sbx_mutation_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

void sbx_mutation_cache_free(sbx_mutation_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		entry *e = c->buckets[i];
		while (e) {
			entry *next = e->next;
			entry_free(e);
			e = next;
		}
	}
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int sbx_mutation_cache_resolve(sbx_mutation_cache *c, const char *key, cJSON **obj)
{
	if (!c || !key || !obj)
		return 0;
	size_t hash = fnv1a(key);
	int used = 0;
	pthread_mutex_lock(&c->lock);
	entry *e = c->nbuckets ? *find_link(c, key, hash) : NULL;
	if (e && *obj &&
	    sbx_mutation_choose(k8s_obj_resource_version(*obj),
	                        k8s_obj_resource_version(e->obj),
	                        (const char *const *)e->superseded, e->n) ==
	            SBX_READ_REMEMBERED) {
		cJSON *copy = cJSON_Duplicate(e->obj, true);
		if (copy) {
			cJSON_Delete(*obj);
			*obj = copy;
			used = 1;
		}
	} else if (e) {
		drop_locked(c, key, hash);
	}
	pthread_mutex_unlock(&c->lock);
	return used;
}

int sbx_mutation_cache_wrote(sbx_mutation_cache *c, const char *key,
                             const char *base_rv, cJSON *result)
{
	if (!c || !key || !result) {
		cJSON_Delete(result);
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "sbx_mutation_cache_wrote: NULL cache, key or result");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(result, "metadata"), "managedFields");
	const char *new_rv = k8s_obj_resource_version(result);
	size_t hash = fnv1a(key);
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	grow_locked(c);
	entry *e = c->nbuckets ? *find_link(c, key, hash) : NULL;
	if (!nonempty(new_rv) || !nonempty(base_rv) || !c->nbuckets) {
		drop_locked(c, key, hash);
		cJSON_Delete(result);
		rc = c->nbuckets ? 0 : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
		goto out;
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		char *k = e ? strdup(key) : NULL;
		if (!k) {
			free(e);
			cJSON_Delete(result);
			rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
			goto out;
		}
		e->key = k;
		e->hash = hash;
		entry **link = &c->buckets[hash & (c->nbuckets - 1)];
		e->next = *link;
		*link = e;
		c->count++;
	} else if (!same_str(base_rv, k8s_obj_resource_version(e->obj))) {
		/* not a continuation of our chain: start anew */
		for (size_t i = 0; i < e->n; i++)
			free(e->superseded[i]);
		e->n = 0;
	}
	if (strcmp(base_rv, new_rv) != 0) {
		char *s = strdup(base_rv);
		if (!s) {
			drop_locked(c, key, hash);
			cJSON_Delete(result);
			rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
			goto out;
		}
		if (e->n == SBX_MUTATION_CACHE_MAX_SUPERSEDED) {
			free(e->superseded[0]);
			memmove(e->superseded, e->superseded + 1,
			        (e->n - 1) * sizeof(e->superseded[0]));
			e->n--;
		}
		e->superseded[e->n++] = s;
	}
	cJSON_Delete(e->obj);
	e->obj = result;
	if (e->n == 0)   /* nothing superseded: nothing to remember */
		drop_locked(c, key, hash);
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void sbx_mutation_cache_forget(sbx_mutation_cache *c, const char *key)
{
	if (!c || !key)
		return;
	size_t hash = fnv1a(key);
	pthread_mutex_lock(&c->lock);
	drop_locked(c, key, hash);
	pthread_mutex_unlock(&c->lock);
}

size_t sbx_mutation_cache_size(sbx_mutation_cache *c)
{
	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	size_t n = c->count;
	pthread_mutex_unlock(&c->lock);
	return n;
}
