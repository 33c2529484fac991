/*
 * informer.c - list+watch into a cache with handlers and indexes (see
 * informer.h).
 *
 * One thread per informer runs: LIST (paged) -> replace the cache -> WATCH
 * from the list's resourceVersion -> on a normal end or a transport error,
 * WATCH again from the last version seen (with bounded backoff on errors),
 * and on 410 Gone LIST again. Only this thread mutates the cache, so a
 * handler may read the object it was given without the lock, and the thread
 * itself reads the cache without it; listers take the read lock and return
 * deep copies.
 *
 * A cache value is a cJSON object, or, with a codec, the codec's struct: the
 * cJSON shape then exists only while an event is applied (the transformed
 * object) or when encoded again for a lister, an old object or an index.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "asb/clock.h"
#include "k8s/informer.h"
#include "k8s/object.h"
#include "informer_internal.h"
#include "asb/map.h"

#define MAX_INDEXES 8
#define MAX_INDEX_VALUES 16
#define LIST_PAGE 500
#define MAX_HANDLERS 16

/* One consumer's handlers; a shared informer fans each event out to all. */
typedef struct {
	k8s_on_add_fn on_add;
	k8s_on_update_fn on_update;
	k8s_on_delete_fn on_delete;
	void *userdata;
} handler_set;

typedef struct {
	char *name;
	k8s_index_fn fn;
	void *userdata;
	asb_map values;  /* index value -> set of object keys (see idx_set below) */
} index_def;

struct k8s_informer {
	k8s_client *client;
	k8s_resource resource;
	char *ns, *label_selector, *field_selector;
	long resync_ms, watch_timeout_s;
	k8s_transform_fn transform;
	void *userdata;     /* of the transform (and of the first handler set) */
	k8s_object_codec codec;
	bool has_codec;
	handler_set handlers[MAX_HANDLERS];
	int nhandlers;
	asb_logger *log;

	pthread_rwlock_t cache_lock;
	asb_map cache;  /* key -> cJSON*, or the codec's struct */
	index_def indexes[MAX_INDEXES];
	int nindexes;
	char last_rv[64];

	pthread_mutex_t state_lock;
	pthread_cond_t state_cond;
	bool synced, started, stopping;
	atomic_int cancel;
	pthread_t thread, resync_thread;
	bool resync_running;
};

int k8s_informer_options_init(k8s_informer_options *opts, unsigned int version)
{
	if (!opts || version < 1 || version > K8S_INFORMER_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer options: unknown version %u", version);
	k8s_informer_options d = K8S_INFORMER_OPTIONS_INIT;
	d.version = version;
	memcpy(opts, &d, version == 1 ? offsetof(k8s_informer_options, codec) : sizeof(d));
	return 0;
}

/* Copies options of any known version into the current layout (an older
 * caller's struct is shorter: never read past it). False: unknown version. */
static bool options_current(const k8s_informer_options *o, k8s_informer_options *cur)
{
	if (!o || o->version < 1 || o->version > K8S_INFORMER_OPTIONS_VERSION)
		return false;
	k8s_informer_options_init(cur, K8S_INFORMER_OPTIONS_VERSION);
	memcpy(cur, o, o->version == 1 ? offsetof(k8s_informer_options, codec) : sizeof(*cur));
	cur->version = K8S_INFORMER_OPTIONS_VERSION;
	return true;
}

int k8s_informer_new(k8s_informer **out, k8s_client *client,
                     const k8s_informer_options *opts)
{
	k8s_informer_options cur;
	const k8s_informer_options *o = &cur;
	if (!options_current(opts, &cur) || !o->resource || !client)
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer: options version, resource and client are required");
	if (o->codec && (!o->codec->decode || !o->codec->encode || !o->codec->free))
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer for %s: a codec needs decode, encode and free",
		                     o->resource->resource);
	k8s_informer *inf = calloc(1, sizeof(*inf));
	if (!inf)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	inf->client = client;
	inf->resource = *o->resource;
	inf->ns = o->namespace_ ? strdup(o->namespace_) : NULL;
	inf->label_selector = o->label_selector ? strdup(o->label_selector) : NULL;
	inf->field_selector = o->field_selector ? strdup(o->field_selector) : NULL;
	inf->resync_ms = o->resync_ms;
	inf->watch_timeout_s = o->watch_timeout_s > 0 ? o->watch_timeout_s : 300;
	inf->transform = o->transform;
	inf->userdata = o->userdata;
	if (o->codec) {
		inf->codec = *o->codec;
		inf->has_codec = true;
	}
	if (o->on_add || o->on_update || o->on_delete)
		inf->handlers[inf->nhandlers++] = (handler_set){ o->on_add, o->on_update, o->on_delete, o->userdata };
	inf->log = o->logger;
	pthread_rwlock_init(&inf->cache_lock, NULL);
	asb_map_init(&inf->cache);
	pthread_mutex_init(&inf->state_lock, NULL);
	asb_cond_init_monotonic(&inf->state_cond);
	atomic_init(&inf->cancel, 0);
	*out = inf;
	return 0;
}

int k8s_informer_add_index(k8s_informer *inf, const char *name,
                           k8s_index_fn fn, void *userdata)
{
	if (inf->started || inf->nindexes == MAX_INDEXES || !name || !fn)
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer: cannot add index \"%s\"", name ? name : "");
	for (int i = 0; i < inf->nindexes; i++)
		if (strcmp(inf->indexes[i].name, name) == 0)
			return asb_error_set(ASB_EINVAL, 0, NULL, "informer: duplicate index \"%s\"", name);
	index_def *d = &inf->indexes[inf->nindexes];
	if (!(d->name = strdup(name)))
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	d->fn = fn;
	d->userdata = userdata;
	asb_map_init(&d->values);
	inf->nindexes++;
	return 0;
}

int k8s_informer_add_handlers(k8s_informer *inf, k8s_on_add_fn on_add,
                              k8s_on_update_fn on_update,
                              k8s_on_delete_fn on_delete, void *userdata)
{
	if (inf->started || inf->nhandlers == MAX_HANDLERS)
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer for %s: %s", inf->resource.resource,
		                     inf->started ? "handlers must be added before start" : "too many handler sets");
	inf->handlers[inf->nhandlers++] = (handler_set){ on_add, on_update, on_delete, userdata };
	return 0;
}

static bool has_delete_handler(const k8s_informer *inf)
{
	for (int i = 0; i < inf->nhandlers; i++)
		if (inf->handlers[i].on_delete)
			return true;
	return false;
}

static void notify_add(k8s_informer *inf, const cJSON *obj)
{
	for (int i = 0; i < inf->nhandlers; i++)
		if (inf->handlers[i].on_add)
			inf->handlers[i].on_add(obj, inf->handlers[i].userdata);
}

static void notify_update(k8s_informer *inf, const cJSON *old, const cJSON *obj)
{
	for (int i = 0; i < inf->nhandlers; i++)
		if (inf->handlers[i].on_update)
			inf->handlers[i].on_update(old, obj, inf->handlers[i].userdata);
}

static void notify_delete(k8s_informer *inf, const cJSON *obj)
{
	for (int i = 0; i < inf->nhandlers; i++)
		if (inf->handlers[i].on_delete)
			inf->handlers[i].on_delete(obj, inf->handlers[i].userdata);
}

/* ---- ready-made index functions ---- */

int k8s_index_by_namespace(const cJSON *obj, const char **keys, int cap, void *ud)
{
	const char *ns = k8s_obj_namespace(obj);
	if (!ns || !*ns || cap < 1)
		return 0;
	keys[0] = ns;
	return 1;
}

int k8s_index_by_owner_uid(const cJSON *obj, const char **keys, int cap, void *ud)
{
	int n = 0;
	const cJSON *ref;
	cJSON_ArrayForEach(ref, k8s_obj_at(obj, "metadata.ownerReferences")) {
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(ref, "uid");
		if (n < cap && cJSON_IsString(uid) && *uid->valuestring)
			keys[n++] = uid->valuestring;
	}
	return n;
}

int k8s_index_by_label(const cJSON *obj, const char **keys, int cap, void *ud)
{
	const char *v = ud ? k8s_obj_label(obj, ud) : NULL;
	if (!v || cap < 1)
		return 0;
	keys[0] = v;
	return 1;
}

/* ---- cache and index maintenance (informer thread, write lock held) ---- */

cJSON *k8s_transform_strip_managed_fields(cJSON *obj, void *userdata)
{
	(void)userdata;
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
	                                        "managedFields");
	return obj;
}

/*
 * An index value's set of object keys: most values index one object (a
 * Sandbox's name hash, an owner's UID), so a set of one is its key itself,
 * strdup'd and tagged in the pointer's low bit (malloc's pointers are
 * aligned); from the second key on, an asb_map of the keys. A map left
 * with one key by removals stays a map.
 */
static bool set_is_one(const void *v)
{
	return ((uintptr_t)v & 1) != 0;
}

static char *set_one_key(const void *v)
{
	return (char *)((uintptr_t)v & ~(uintptr_t)1);
}

static void set_free(void *v)
{
	if (set_is_one(v)) {
		free(set_one_key(v));
		return;
	}
	asb_map_clear(v, NULL);
	free(v);
}

typedef struct {
	const void *set;   /* NULL: empty */
	size_t bucket;
	asb_map_entry *it;
	bool done;
} set_iter;

/* The next key of the set, or NULL at the end. */
static const char *set_next(set_iter *i)
{
	if (!i->set || i->done)
		return NULL;
	if (set_is_one(i->set)) {
		i->done = true;
		return set_one_key(i->set);
	}
	return asb_map_next(i->set, &i->bucket, &i->it) ? i->it->key : NULL;
}

static void set_remove(index_def *d, const char *value, const char *key)
{
	void *set = asb_map_get(&d->values, value);
	if (!set)
		return;
	if (set_is_one(set) ? strcmp(set_one_key(set), key) == 0
	                    : (asb_map_remove(set, key, NULL), asb_map_count(set) == 0)) {
		asb_map_remove(&d->values, value, NULL);
		set_free(set);
	}
}

/* Out of memory leaves the key out of the index (as it always has). */
static void set_add(index_def *d, const char *value, const char *key)
{
	void *set = asb_map_get(&d->values, value);
	if (!set) {
		char *k = strdup(key);
		if (k && asb_map_set(&d->values, value, (void *)((uintptr_t)k | 1), NULL) < 0)
			free(k);
		return;
	}
	if (!set_is_one(set)) {
		asb_map_set(set, key, (void *)1, NULL);
		return;
	}
	char *one = set_one_key(set);
	if (strcmp(one, key) == 0)
		return;
	asb_map *m = calloc(1, sizeof(*m));
	if (!m)
		return;
	asb_map_init(m);
	if (asb_map_set(m, one, (void *)1, NULL) < 0 || asb_map_set(m, key, (void *)1, NULL) < 0) {
		asb_map_clear(m, NULL);
		free(m);
		return;
	}
	asb_map_set(&d->values, value, m, NULL);   /* an existing key: cannot fail */
	free(one);
}

static void index_update(k8s_informer *inf, const char *key,
                         const cJSON *old_obj, const cJSON *new_obj)
{
	for (int i = 0; i < inf->nindexes; i++) {
		index_def *d = &inf->indexes[i];
		const char *vals[MAX_INDEX_VALUES];
		int n;
		if (old_obj) {
			n = d->fn(old_obj, vals, MAX_INDEX_VALUES, d->userdata);
			for (int j = 0; j < n; j++)
				set_remove(d, vals[j], key);
		}
		if (new_obj) {
			n = d->fn(new_obj, vals, MAX_INDEX_VALUES, d->userdata);
			for (int j = 0; j < n; j++)
				set_add(d, vals[j], key);
		}
	}
}

static void value_free(k8s_informer *inf, void *v)
{
	if (!v)
		return;
	if (inf->has_codec)
		inf->codec.free(v, inf->codec.userdata);
	else
		cJSON_Delete(v);
}

/* A new cJSON copy of the cache value `v` (NULL when out of memory). */
static cJSON *value_copy(k8s_informer *inf, const void *v)
{
	cJSON *o = inf->has_codec ? inf->codec.encode(v, inf->codec.userdata)
	                          : cJSON_Duplicate(v, 1);
	if (!o)
		asb_error_set(ASB_ENOMEM, 0, NULL, "informer for %s: out of memory copying an object",
		              inf->resource.resource);
	return o;
}

/* The cJSON shape of an old value, for indexes and handlers: the value itself
 * without a codec; with one, an encoding, made only when someone needs it. */
static cJSON *old_shape(k8s_informer *inf, void *old, bool wanted)
{
	if (!inf->has_codec)
		return old;
	if (!old || !(wanted || inf->nindexes))
		return NULL;
	cJSON *o = inf->codec.encode(old, inf->codec.userdata);
	if (!o)
		asb_log(inf->log, ASB_LOG_ERROR, "informer: out of memory encoding a cached object",
		        "resource", inf->resource.resource, NULL);
	return o;
}

/*
 * Ends a cache write (the lock held): moves the indexes from the replaced
 * value `old` (with a codec, `enc` is its cJSON shape) to `json` (NULL: the
 * key is gone), unlocks, and hands the old value's cJSON shape to
 * *old_json (with a codec the old value itself is freed).
 */
static void write_done(k8s_informer *inf, const char *key, void *old, cJSON *enc,
                       const cJSON *json, cJSON **old_json)
{
	index_update(inf, key, inf->has_codec ? enc : old, json);
	pthread_rwlock_unlock(&inf->cache_lock);
	if (inf->has_codec) {
		value_free(inf, old);
		*old_json = enc;
	} else {
		*old_json = old;
	}
}

/*
 * Stores `val` (owned; `json` is its cJSON shape, the same pointer without a
 * codec) under `key`. *had_old says whether a value was replaced; *old_json
 * receives the replaced value's cJSON shape (caller frees; NULL when there
 * was none, or with a codec when nobody needs it). Returns false when out of
 * memory: nothing changed and `val` is still the caller's.
 */
static bool cache_put(k8s_informer *inf, const char *key, void *val, const cJSON *json,
                      bool *had_old, cJSON **old_json)
{
	/* only this thread writes the cache: reading it unlocked is safe */
	void *prev = asb_map_get(&inf->cache, key);
	cJSON *enc = inf->has_codec ? old_shape(inf, prev, inf->nhandlers > 0) : NULL;
	void *old = NULL;
	pthread_rwlock_wrlock(&inf->cache_lock);
	if (asb_map_set(&inf->cache, key, val, &old) < 0) {
		pthread_rwlock_unlock(&inf->cache_lock);
		asb_log(inf->log, ASB_LOG_ERROR, "informer: out of memory, object dropped",
		        "resource", inf->resource.resource, "key", key, NULL);
		cJSON_Delete(enc);
		*had_old = false;
		*old_json = NULL;
		return false;
	}
	*had_old = old != NULL;
	write_done(inf, key, old, enc, json, old_json);
	return true;
}

/* Removes `key`; returns whether it was cached, with its cJSON shape in
 * *old_json as cache_put() does (`want_old`: a handler needs it). */
static bool cache_remove(k8s_informer *inf, const char *key, bool want_old, cJSON **old_json)
{
	*old_json = NULL;
	void *prev = asb_map_get(&inf->cache, key);
	if (!prev)
		return false;
	cJSON *enc = old_shape(inf, prev, want_old);
	void *old = NULL;
	pthread_rwlock_wrlock(&inf->cache_lock);
	asb_map_remove(&inf->cache, key, &old);
	write_done(inf, key, old, enc, NULL, old_json);
	return true;
}

static void set_last_rv(k8s_informer *inf, const char *rv)
{
	if (!rv)
		return;
	pthread_rwlock_wrlock(&inf->cache_lock);
	snprintf(inf->last_rv, sizeof(inf->last_rv), "%s", rv);
	pthread_rwlock_unlock(&inf->cache_lock);
}

/* Applies an upsert: transform, store, call add/update. Takes ownership. */
static void apply_upsert(k8s_informer *inf, cJSON *obj)
{
	const char *rv = k8s_obj_resource_version(obj);
	char rvbuf[64] = "";
	if (rv)
		snprintf(rvbuf, sizeof(rvbuf), "%s", rv);
	char *key = k8s_obj_key(obj);
	if (!key) {
		cJSON_Delete(obj);
		return;
	}
	if (inf->transform)
		obj = inf->transform(obj, inf->userdata);
	cJSON *old = NULL;
	if (!obj) {
		/* the transform dropped it: treat as gone */
		if (cache_remove(inf, key, has_delete_handler(inf), &old) && old)
			notify_delete(inf, old);
		goto out;
	}
	void *val = obj;
	if (inf->has_codec) {
		int rc = inf->codec.decode(obj, &val, inf->codec.userdata);
		if (rc < 0) {
			/* the previous state, if any, stays cached: the next event retries */
			asb_log(inf->log, ASB_LOG_ERROR, "informer: cannot decode object, not cached",
			        "resource", inf->resource.resource, "key", key,
			        "error", asb_error_last()->message, NULL);
			cJSON_Delete(obj);
			goto out;
		}
	}
	bool had_old = false;
	if (!cache_put(inf, key, val, obj, &had_old, &old)) {
		if (inf->has_codec)
			value_free(inf, val);
		cJSON_Delete(obj);
		goto out;
	}
	if (!had_old)
		notify_add(inf, obj);
	else if (old)
		notify_update(inf, old, obj);
	if (inf->has_codec)
		cJSON_Delete(obj);  /* the cache holds the struct */
out:
	cJSON_Delete(old);
	set_last_rv(inf, rvbuf);
	free(key);
}

static void apply_delete(k8s_informer *inf, cJSON *obj)
{
	char *key = k8s_obj_key(obj);
	const char *rv = k8s_obj_resource_version(obj);
	if (key) {
		bool notify = has_delete_handler(inf);
		if (notify && inf->transform)
			obj = inf->transform(obj, inf->userdata);
		/* the cached state is needed for the handler only when the
		 * transform dropped the event's object */
		cJSON *old = NULL;
		cache_remove(inf, key, notify && !obj, &old);
		const cJSON *last = obj ? obj : old;
		if (notify && last)
			notify_delete(inf, last);
		cJSON_Delete(old);
		free(key);
	}
	if (obj) {
		rv = k8s_obj_resource_version(obj);
		set_last_rv(inf, rv);
		cJSON_Delete(obj);
	}
}

static int watch_cb(k8s_watch_event_type type, cJSON *obj, void *ud)
{
	k8s_informer *inf = ud;
	switch (type) {
	case K8S_WATCH_ADDED:
	case K8S_WATCH_MODIFIED:
		apply_upsert(inf, obj);
		break;
	case K8S_WATCH_DELETED:
		apply_delete(inf, obj);
		break;
	case K8S_WATCH_BOOKMARK:
		set_last_rv(inf, k8s_obj_resource_version(obj));
		cJSON_Delete(obj);
		break;
	}
	return atomic_load(&inf->cancel) ? 1 : 0;
}

/* True when the cached `key` has resourceVersion `rv` (informer thread). */
static bool cached_rv_is(k8s_informer *inf, const char *key, const char *rv)
{
	const void *cur = asb_map_get(&inf->cache, key);
	if (!cur || !rv)
		return false;
	if (!inf->has_codec) {
		const char *crv = k8s_obj_resource_version(cur);
		return crv && strcmp(crv, rv) == 0;
	}
	if (inf->codec.resource_version) {
		const char *crv = inf->codec.resource_version(cur, inf->codec.userdata);
		return crv && strcmp(crv, rv) == 0;
	}
	cJSON *o = inf->codec.encode(cur, inf->codec.userdata);
	const char *crv = k8s_obj_resource_version(o);
	bool same = crv && strcmp(crv, rv) == 0;
	cJSON_Delete(o);
	return same;
}

/* Upserts the listed `items` (taken one by one out of the array), noting
 * their keys in `seen`; unchanged objects (same resourceVersion) are skipped
 * so a relist does not wake every handler. */
static void relist_items(k8s_informer *inf, cJSON *items, asb_map *seen)
{
	while (cJSON_IsArray(items) && items->child) {
		/* detach by pointer: by index would walk the array each time */
		cJSON *item = cJSON_DetachItemViaPointer(items, items->child);
		char *key = k8s_obj_key(item);
		if (!key) {
			cJSON_Delete(item);
			continue;
		}
		asb_map_set(seen, key, (void *)1, NULL);
		bool same = cached_rv_is(inf, key, k8s_obj_resource_version(item));
		free(key);
		if (same)
			cJSON_Delete(item);
		else
			apply_upsert(inf, item);
	}
}

/* Synthesises deletes for cached objects not in `seen` (they vanished while
 * nobody watched) and records the list's resourceVersion `rv`. */
static void relist_finish(k8s_informer *inf, const asb_map *seen, const char *rv)
{
	size_t nkeys = 0, cap = 0;
	char **gone = NULL;
	size_t b = 0;
	asb_map_entry *it = NULL;
	while (asb_map_next(&inf->cache, &b, &it)) {
		if (!asb_map_has(seen, it->key)) {
			if (nkeys == cap) {
				cap = cap ? cap * 2 : 16;
				char **g = realloc(gone, cap * sizeof(*g));
				if (!g)
					break;
				gone = g;
			}
			gone[nkeys++] = strdup(it->key);
		}
	}
	bool notify = has_delete_handler(inf);
	for (size_t i = 0; i < nkeys; i++) {
		if (gone[i]) {
			cJSON *old = NULL;
			if (cache_remove(inf, gone[i], notify, &old) && old)
				notify_delete(inf, old);
			cJSON_Delete(old);
		}
		free(gone[i]);
	}
	free(gone);
	set_last_rv(inf, rv);
}

/*
 * LISTs everything (paged) and replaces the cache: upserts for what is
 * listed (update handlers only when the resourceVersion moved), deletes for
 * what vanished since the last list/watch.
 */
static int relist(k8s_informer *inf)
{
	asb_map seen;
	asb_map_init(&seen);
	char *cont = NULL;
	char rv[64] = "";
	int rc = 0;
	do {
		k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
		lo.label_selector = inf->label_selector;
		lo.field_selector = inf->field_selector;
		lo.limit = LIST_PAGE;
		lo.continue_token = cont;
		cJSON *list = NULL;
		rc = k8s_client_list(inf->client, &inf->resource, inf->ns, &lo, &list);
		free(cont);
		cont = NULL;
		if (rc < 0)
			break;
		const char *c = k8s_obj_str(list, "metadata.continue");
		if (c && *c)
			cont = strdup(c);
		const char *lrv = k8s_obj_str(list, "metadata.resourceVersion");
		if (lrv)
			snprintf(rv, sizeof(rv), "%s", lrv);
		relist_items(inf, cJSON_GetObjectItemCaseSensitive(list, "items"), &seen);
		cJSON_Delete(list);
	} while (cont && !atomic_load(&inf->cancel));
	free(cont);
	if (rc == 0)
		relist_finish(inf, &seen, rv);
	asb_map_clear(&seen, NULL);
	return rc;
}

void k8s__informer_replace(k8s_informer *inf, cJSON *items, const char *rv)
{
	asb_map seen;
	asb_map_init(&seen);
	relist_items(inf, items, &seen);
	relist_finish(inf, &seen, rv);
	asb_map_clear(&seen, NULL);
}

void k8s__informer_apply(k8s_informer *inf, k8s_watch_event_type type, cJSON *obj)
{
	watch_cb(type, obj, inf);
}

/* Sleeps up to `ms` or until stopped; returns true when stopping. */
static bool sleep_or_stop(k8s_informer *inf, long ms)
{
	struct timespec ts;
	asb_deadline_after_ms(&ts, ms);
	pthread_mutex_lock(&inf->state_lock);
	while (!inf->stopping) {
		if (pthread_cond_timedwait(&inf->state_cond, &inf->state_lock, &ts) != 0)
			break;
	}
	bool stop = inf->stopping;
	pthread_mutex_unlock(&inf->state_lock);
	return stop;
}

static void *run(void *arg)
{
	k8s_informer *inf = arg;
	long backoff = 0;
	bool need_list = true;
	while (!atomic_load(&inf->cancel)) {
		if (need_list) {
			int rc = relist(inf);
			if (rc < 0) {
				backoff = backoff ? (backoff * 2 > 30000 ? 30000 : backoff * 2) : 500;
				asb_log(inf->log, ASB_LOG_WARN, "list failed; retrying",
				        "resource", inf->resource.resource,
				        "error", asb_error_last()->message, NULL);
				if (sleep_or_stop(inf, backoff))
					break;
				continue;
			}
			need_list = false;
			pthread_mutex_lock(&inf->state_lock);
			if (!inf->synced) {
				inf->synced = true;
				pthread_cond_broadcast(&inf->state_cond);
			}
			pthread_mutex_unlock(&inf->state_lock);
		}
		char rv[64];
		k8s_informer_last_resource_version(inf, rv, sizeof(rv));
		k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
		lo.label_selector = inf->label_selector;
		lo.field_selector = inf->field_selector;
		lo.resource_version = rv;
		lo.allow_watch_bookmarks = true;
		/* spread reconnects of many informers, as client-go does */
		lo.timeout_seconds = inf->watch_timeout_s + (rand() % (inf->watch_timeout_s / 2 + 1));
		int rc = k8s_client_watch(inf->client, &inf->resource, inf->ns, &lo,
		                          watch_cb, inf, &inf->cancel);
		if (atomic_load(&inf->cancel))
			break;
		if (rc == 0) {
			backoff = 0;
			continue;
		}
		if (rc == ASB_EGONE) {
			asb_log(inf->log, ASB_LOG_INFO, "watch expired; relisting",
			        "resource", inf->resource.resource, "resourceVersion", rv, NULL);
			need_list = true;
			continue;
		}
		backoff = backoff ? (backoff * 2 > 30000 ? 30000 : backoff * 2) : 200;
		asb_log(inf->log, ASB_LOG_WARN, "watch failed; resuming",
		        "resource", inf->resource.resource, "resourceVersion", rv,
		        "error", asb_error_last()->message, NULL);
		if (sleep_or_stop(inf, backoff))
			break;
	}
	return NULL;
}

static void *resync_run(void *arg)
{
	k8s_informer *inf = arg;
	while (!sleep_or_stop(inf, inf->resync_ms)) {
		cJSON *all = NULL;
		if (k8s_informer_list(inf, NULL, &all) < 0)
			continue;
		const cJSON *o;
		cJSON_ArrayForEach(o, all)
			notify_update(inf, o, o);
		cJSON_Delete(all);
	}
	return NULL;
}

int k8s_informer_start(k8s_informer *inf)
{
	if (inf->started)
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer: already started");
	inf->started = true;
	if (pthread_create(&inf->thread, NULL, run, inf) != 0) {
		inf->started = false;
		return asb_error_set(ASB_ERROR, 0, NULL, "informer: cannot start thread");
	}
	if (inf->resync_ms > 0 && inf->nhandlers > 0 &&
	    pthread_create(&inf->resync_thread, NULL, resync_run, inf) == 0)
		inf->resync_running = true;
	return 0;
}

bool k8s_informer_has_synced(k8s_informer *inf)
{
	pthread_mutex_lock(&inf->state_lock);
	bool s = inf->synced;
	pthread_mutex_unlock(&inf->state_lock);
	return s;
}

int k8s_informer_wait_synced(k8s_informer *inf, long timeout_ms)
{
	struct timespec ts;
	asb_deadline_after_ms(&ts, timeout_ms >= 0 ? timeout_ms : 0);
	int rc = 0;
	pthread_mutex_lock(&inf->state_lock);
	while (!inf->synced && !inf->stopping) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&inf->state_cond, &inf->state_lock);
		} else if (pthread_cond_timedwait(&inf->state_cond, &inf->state_lock, &ts) != 0) {
			break;
		}
	}
	if (!inf->synced)
		rc = inf->stopping ? ASB_ESHUTDOWN : ASB_ETIMEOUT;
	pthread_mutex_unlock(&inf->state_lock);
	if (rc)
		return asb_error_set(rc, 0, NULL, "informer for %s: %s before the first list completed",
		                     inf->resource.resource, rc == ASB_ETIMEOUT ? "timed out" : "stopped");
	return 0;
}

int k8s_informer_get(k8s_informer *inf, const char *ns, const char *name, cJSON **out)
{
	*out = NULL;
	char key[512];
	if (ns && *ns)
		snprintf(key, sizeof(key), "%s/%s", ns, name);
	else
		snprintf(key, sizeof(key), "%s", name);
	pthread_rwlock_rdlock(&inf->cache_lock);
	void *o = asb_map_get(&inf->cache, key);
	if (o)
		*out = value_copy(inf, o);
	pthread_rwlock_unlock(&inf->cache_lock);
	if (!o)
		return ASB_ENOTFOUND;
	return *out ? 0 : ASB_ENOMEM;
}

static void object_key(char *key, size_t cap, const char *ns, const char *name)
{
	if (ns && *ns)
		snprintf(key, cap, "%s/%s", ns, name ? name : "");
	else
		snprintf(key, cap, "%s", name ? name : "");
}

int k8s_informer_read(k8s_informer *inf, const char *ns, const char *name,
                      k8s_informer_read_fn fn, void *userdata)
{
	char key[512];
	object_key(key, sizeof(key), ns, name);
	pthread_rwlock_rdlock(&inf->cache_lock);
	const void *o = asb_map_get(&inf->cache, key);
	int rc = o ? fn(o, userdata) : ASB_ENOTFOUND;
	pthread_rwlock_unlock(&inf->cache_lock);
	return rc;
}

static index_def *find_index(k8s_informer *inf, const char *index)
{
	for (int i = 0; i < inf->nindexes; i++)
		if (strcmp(inf->indexes[i].name, index) == 0)
			return &inf->indexes[i];
	asb_error_set(ASB_EINVAL, 0, NULL, "informer: unknown index \"%s\"", index);
	return NULL;
}

int k8s_informer_read_index(k8s_informer *inf, const char *index, const char *value,
                            k8s_informer_read_fn fn, void *userdata)
{
	index_def *d = find_index(inf, index);
	if (!d)
		return ASB_EINVAL;
	int rc = 0;
	pthread_rwlock_rdlock(&inf->cache_lock);
	set_iter si = { .set = asb_map_get(&d->values, value) };
	const char *key;
	while (rc == 0 && (key = set_next(&si))) {
		const void *o = asb_map_get(&inf->cache, key);
		if (o)
			rc = fn(o, userdata);
	}
	pthread_rwlock_unlock(&inf->cache_lock);
	return rc;
}

/* Ends a listing (the read lock held): unlocks, and hands out `arr`, or
 * frees it when a copy ran out of memory. */
static int list_done(k8s_informer *inf, cJSON *arr, bool oom, cJSON **out)
{
	pthread_rwlock_unlock(&inf->cache_lock);
	if (oom) {
		cJSON_Delete(arr);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "informer for %s: out of memory listing",
		                     inf->resource.resource);
	}
	*out = arr;
	return 0;
}

int k8s_informer_list(k8s_informer *inf, const char *ns, cJSON **out)
{
	cJSON *arr = cJSON_CreateArray();
	if (!arr)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	pthread_rwlock_rdlock(&inf->cache_lock);
	size_t b = 0;
	asb_map_entry *it = NULL;
	size_t nslen = ns ? strlen(ns) : 0;
	bool oom = false;
	while (!oom && asb_map_next(&inf->cache, &b, &it)) {
		if (ns && inf->has_codec) {
			/* the key is "namespace/name": no need to encode to filter */
			if (strncmp(it->key, ns, nslen) != 0 || it->key[nslen] != '/')
				continue;
		} else if (ns) {
			const char *ons = k8s_obj_namespace(it->value);
			if (!ons || strcmp(ons, ns) != 0)
				continue;
		}
		cJSON *o = value_copy(inf, it->value);
		oom = !o || !cJSON_AddItemToArray(arr, o);
	}
	return list_done(inf, arr, oom, out);
}

int k8s_informer_by_index(k8s_informer *inf, const char *index, const char *value, cJSON **out)
{
	*out = NULL;
	index_def *d = find_index(inf, index);
	if (!d)
		return ASB_EINVAL;
	cJSON *arr = cJSON_CreateArray();
	if (!arr)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	pthread_rwlock_rdlock(&inf->cache_lock);
	set_iter si = { .set = asb_map_get(&d->values, value) };
	const char *key;
	bool oom = false;
	while (!oom && (key = set_next(&si))) {
		const void *v = asb_map_get(&inf->cache, key);
		if (!v)
			continue;
		cJSON *o = value_copy(inf, v);
		oom = !o || !cJSON_AddItemToArray(arr, o);
	}
	return list_done(inf, arr, oom, out);
}

size_t k8s_informer_size(k8s_informer *inf)
{
	pthread_rwlock_rdlock(&inf->cache_lock);
	size_t n = asb_map_count(&inf->cache);
	pthread_rwlock_unlock(&inf->cache_lock);
	return n;
}

void k8s_informer_last_resource_version(k8s_informer *inf, char *buf, size_t cap)
{
	pthread_rwlock_rdlock(&inf->cache_lock);
	snprintf(buf, cap, "%s", inf->last_rv);
	pthread_rwlock_unlock(&inf->cache_lock);
}

void k8s_informer_stop(k8s_informer *inf)
{
	if (!inf)
		return;
	pthread_mutex_lock(&inf->state_lock);
	bool was_started = inf->started && !inf->stopping;
	inf->stopping = true;
	atomic_store(&inf->cancel, 1);
	pthread_cond_broadcast(&inf->state_cond);
	pthread_mutex_unlock(&inf->state_lock);
	if (was_started) {
		pthread_join(inf->thread, NULL);
		if (inf->resync_running)
			pthread_join(inf->resync_thread, NULL);
	}
}

void k8s_informer_free(k8s_informer *inf)
{
	if (!inf)
		return;
	k8s_informer_stop(inf);
	size_t b = 0;
	asb_map_entry *it = NULL;
	while (asb_map_next(&inf->cache, &b, &it))
		value_free(inf, it->value);
	asb_map_clear(&inf->cache, NULL);
	for (int i = 0; i < inf->nindexes; i++) {
		asb_map_clear(&inf->indexes[i].values, set_free);
		free(inf->indexes[i].name);
	}
	free(inf->ns);
	free(inf->label_selector);
	free(inf->field_selector);
	pthread_rwlock_destroy(&inf->cache_lock);
	pthread_mutex_destroy(&inf->state_lock);
	pthread_cond_destroy(&inf->state_cond);
	free(inf);
}

/* ---- shared informers: one list+watch per resource and selector ---- */

#define MAX_FACTORY_INFORMERS 32

struct k8s_informer_factory {
	k8s_client *client;
	asb_logger *log;
	pthread_mutex_t lock;
	k8s_informer *informers[MAX_FACTORY_INFORMERS];
	int n;
};

int k8s_informer_factory_new(k8s_informer_factory **out, k8s_client *client,
                             asb_logger *logger)
{
	if (!client)
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer factory: client is required");
	k8s_informer_factory *f = calloc(1, sizeof(*f));
	if (!f)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	f->client = client;
	f->log = logger;
	pthread_mutex_init(&f->lock, NULL);
	*out = f;
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool same_source(const k8s_informer *inf, const k8s_informer_options *o)
{
	return str_eq(inf->resource.group, o->resource->group) &&
	       str_eq(inf->resource.version, o->resource->version) &&
	       str_eq(inf->resource.resource, o->resource->resource) &&
	       str_eq(inf->ns, o->namespace_) &&
	       str_eq(inf->label_selector, o->label_selector) &&
	       str_eq(inf->field_selector, o->field_selector);
}

static bool same_codec(const k8s_informer *inf, const k8s_object_codec *c)
{
	if (!c || !inf->has_codec)
		return !c && !inf->has_codec;
	return inf->codec.decode == c->decode && inf->codec.encode == c->encode &&
	       inf->codec.free == c->free && inf->codec.userdata == c->userdata;
}

int k8s_informer_factory_informer(k8s_informer_factory *f,
                                  const k8s_informer_options *opts,
                                  k8s_informer **out)
{
	*out = NULL;
	k8s_informer_options cur;
	const k8s_informer_options *o = &cur;
	if (!options_current(opts, &cur) || !o->resource)
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer factory: options version and resource are required");
	pthread_mutex_lock(&f->lock);
	int rc = 0;
	for (int i = 0; i < f->n; i++) {
		k8s_informer *inf = f->informers[i];
		if (!same_source(inf, o))
			continue;
		/* a shared cache holds one shape of object: the transforms must agree */
		if (inf->transform != o->transform || (o->transform && inf->userdata != o->userdata) ||
		    !same_codec(inf, o->codec)) {
			rc = asb_error_set(ASB_EINVAL, 0, NULL,
			                   "informer factory: %s already has an informer with another transform or codec",
			                   o->resource->resource);
		} else if (o->on_add || o->on_update || o->on_delete) {
			rc = k8s_informer_add_handlers(inf, o->on_add, o->on_update, o->on_delete, o->userdata);
		}
		if (rc == 0)
			*out = inf;
		pthread_mutex_unlock(&f->lock);
		return rc;
	}
	if (f->n == MAX_FACTORY_INFORMERS) {
		pthread_mutex_unlock(&f->lock);
		return asb_error_set(ASB_EINVAL, 0, NULL, "informer factory: too many informers");
	}
	k8s_informer_options copy = *o;
	if (!copy.logger)
		copy.logger = f->log;
	rc = k8s_informer_new(&f->informers[f->n], f->client, &copy);
	if (rc == 0)
		*out = f->informers[f->n++];
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int k8s_informer_factory_start(k8s_informer_factory *f)
{
	pthread_mutex_lock(&f->lock);
	int rc = 0;
	for (int i = 0; i < f->n && rc == 0; i++)
		if (!f->informers[i]->started)
			rc = k8s_informer_start(f->informers[i]);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int k8s_informer_factory_wait_synced(k8s_informer_factory *f, long timeout_ms)
{
	int64_t deadline = k8s_monotonic_ms() + timeout_ms;
	pthread_mutex_lock(&f->lock);
	int n = f->n;
	k8s_informer *infs[MAX_FACTORY_INFORMERS];
	memcpy(infs, f->informers, sizeof(infs[0]) * (size_t)n);
	pthread_mutex_unlock(&f->lock);
	for (int i = 0; i < n; i++) {
		long left = timeout_ms < 0 ? -1 : (long)(deadline - k8s_monotonic_ms());
		if (timeout_ms >= 0 && left < 0)
			left = 0;
		int rc = k8s_informer_wait_synced(infs[i], left);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void k8s_informer_factory_stop(k8s_informer_factory *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	for (int i = f->n - 1; i >= 0; i--)
		k8s_informer_stop(f->informers[i]);
	pthread_mutex_unlock(&f->lock);
}

void k8s_informer_factory_free(k8s_informer_factory *f)
{
	if (!f)
		return;
	k8s_informer_factory_stop(f);
	for (int i = 0; i < f->n; i++)
		k8s_informer_free(f->informers[i]);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
