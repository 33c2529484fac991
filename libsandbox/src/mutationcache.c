/*
 * mutationcache.c - read-your-own-writes for Sandboxes, see mutationcache.h.
 *
 * An asb_map from key to record behind one mutex. Records are small (the
 * last written object, packed, and a few resourceVersions) and
 * short-lived; but while the informer lags, as under a burst, there is one
 * per Sandbox written, hence packed (sandbox/cache.h).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "asb/map.h"
#include "sandbox/cache.h"
#include "sandbox/mutationcache.h"
#include "k8s/informer.h"
#include "k8s/object.h"

typedef struct entry {
	k8s_packed *obj;                                   /* last written */
	char *superseded[SBX_MUTATION_CACHE_MAX_SUPERSEDED]; /* oldest first */
	size_t n;
} entry;

struct sbx_mutation_cache {
	k8s_packer *packer;     /* immutable */
	pthread_mutex_t lock;   /* guards everything below */
	asb_map entries;        /* key -> entry * */
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

static void entry_free(void *value)
{
	entry *e = value;
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->superseded[i]);
	k8s_packed_free(e->obj);
	free(e);
}

/* Removes and frees `key`'s entry, if any. Caller holds the lock. */
static void drop_locked(sbx_mutation_cache *c, const char *key)
{
	void *old = NULL;
	if (asb_map_remove(&c->entries, key, &old))
		entry_free(old);
}

int sbx_mutation_cache_new(sbx_mutation_cache **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_mutation_cache_new: NULL out");
	sbx_mutation_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	if (sbx_packer_new(&c->packer) != 0) {
		free(c);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	pthread_mutex_init(&c->lock, NULL);
	asb_map_init(&c->entries);
	*out = c;
	return 0;
}

void sbx_mutation_cache_free(sbx_mutation_cache *c)
{
	if (!c)
		return;
	asb_map_clear(&c->entries, entry_free);
	pthread_mutex_destroy(&c->lock);
	k8s_packer_free(c->packer);
	free(c);
}

int sbx_mutation_cache_resolve(sbx_mutation_cache *c, const char *key, cJSON **obj)
{
	if (!c || !key || !obj)
		return 0;
	int used = 0;
	pthread_mutex_lock(&c->lock);
	entry *e = asb_map_get(&c->entries, key);
	if (e && *obj &&
	    sbx_mutation_choose(k8s_obj_resource_version(*obj),
	                        k8s_packed_resource_version(e->obj),
	                        (const char *const *)e->superseded, e->n) ==
	            SBX_READ_REMEMBERED) {
		cJSON *copy = k8s_packer_unpack(c->packer, e->obj);
		if (copy) {
			cJSON_Delete(*obj);
			*obj = copy;
			used = 1;
		}
	} else if (e) {
		drop_locked(c, key);
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
	k8s_transform_strip_managed_fields(result, NULL);
	const char *new_rv = k8s_obj_resource_version(result);
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	entry *e = asb_map_get(&c->entries, key);
	if (!nonempty(new_rv) || !nonempty(base_rv)) {
		drop_locked(c, key);
		cJSON_Delete(result);
		goto out;
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || asb_map_set(&c->entries, key, e, NULL) < 0) {
			free(e);
			cJSON_Delete(result);
			rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
			goto out;
		}
	} else if (!same_str(base_rv, k8s_packed_resource_version(e->obj))) {
		/* not a continuation of our chain: start anew */
		for (size_t i = 0; i < e->n; i++)
			free(e->superseded[i]);
		e->n = 0;
	}
	if (strcmp(base_rv, new_rv) != 0) {
		char *s = strdup(base_rv);
		if (!s) {
			drop_locked(c, key);
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
	k8s_packed *packed = NULL;
	rc = k8s_packer_pack(c->packer, result, &packed);
	cJSON_Delete(result);
	if (rc != 0) {
		drop_locked(c, key);   /* forgetting is safe: reads fall back to the informer */
		goto out;
	}
	k8s_packed_free(e->obj);
	e->obj = packed;
	if (e->n == 0)   /* nothing superseded: nothing to remember */
		drop_locked(c, key);
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void sbx_mutation_cache_forget(sbx_mutation_cache *c, const char *key)
{
	if (!c || !key)
		return;
	pthread_mutex_lock(&c->lock);
	drop_locked(c, key);
	pthread_mutex_unlock(&c->lock);
}

size_t sbx_mutation_cache_size(sbx_mutation_cache *c)
{
	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	size_t n = asb_map_count(&c->entries);
	pthread_mutex_unlock(&c->lock);
	return n;
}
