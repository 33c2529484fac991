/*
 * activity.c - the activity table and the publication rule (activity.h).
 *
 * An asb_map from "ns/name" to an entry, behind one mutex. The loop
 * threads touch one entry per request begin and end; the publisher walks
 * the whole table once a tick.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/common.h"
#include "asb/map.h"
#include "k8s/object.h"
#include "sandbox/idle.h"
#include "activity.h"

typedef struct {
	char ns[64];
	char name[64];
	int64_t last_activity_ms;
	int64_t published_ms;
	int64_t timeout_ms;
	int inflight;
} entry;

struct rt_activity {
	pthread_mutex_t lock;   /* guards everything below */
	asb_map map;            /* "ns/name" -> entry */
	size_t max;
};

int rt_activity_new(rt_activity **out, size_t max_entries)
{
	rt_activity *a = calloc(1, sizeof(*a));
	if (!a)
		return ASB_ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	asb_map_init(&a->map);
	a->max = max_entries ? max_entries : RT_ACTIVITY_MAX_ENTRIES;
	*out = a;
	return 0;
}

void rt_activity_free(rt_activity *a)
{
	if (!a)
		return;
	asb_map_clear(&a->map, free);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* "ns/name" into key[128]; false when either part is empty or too long. */
static bool make_key(char *key, const char *ns, const char *name)
{
	size_t nl = ns ? strlen(ns) : 0, ml = name ? strlen(name) : 0;
	if (!nl || !ml || nl > 63 || ml > 63)
		return false;
	memcpy(key, ns, nl);
	key[nl] = '/';
	memcpy(key + nl + 1, name, ml + 1);
	return true;
}

int rt_activity_begin(rt_activity *a, const char *ns, const char *name, int64_t timeout_ms,
                      int64_t now_ms)
{
	char key[128];
	if (!make_key(key, ns, name))
		return ASB_EINVAL;
	int rc = 0;
	pthread_mutex_lock(&a->lock);
	entry *e = asb_map_get(&a->map, key);
	if (!e) {
		if (asb_map_count(&a->map) >= a->max) {
			rc = ASB_ETOOLARGE;
		} else if (!(e = calloc(1, sizeof(*e)))) {
			rc = ASB_ENOMEM;
		} else {
			snprintf(e->ns, sizeof(e->ns), "%s", ns);
			snprintf(e->name, sizeof(e->name), "%s", name);
			if (asb_map_set(&a->map, key, e, NULL) < 0) {
				free(e);
				e = NULL;
				rc = ASB_ENOMEM;
			}
		}
	}
	if (e) {
		e->inflight++;
		if (now_ms > e->last_activity_ms)
			e->last_activity_ms = now_ms;
		e->timeout_ms = timeout_ms;
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

void rt_activity_end(rt_activity *a, const char *ns, const char *name, int64_t now_ms)
{
	char key[128];
	if (!make_key(key, ns, name))
		return;
	pthread_mutex_lock(&a->lock);
	entry *e = asb_map_get(&a->map, key);
	if (e) {
		if (e->inflight > 0)
			e->inflight--;
		if (now_ms > e->last_activity_ms)
			e->last_activity_ms = now_ms;
	}
	pthread_mutex_unlock(&a->lock);
}

bool rt_activity_due(int64_t last_activity_ms, int64_t published_ms, int64_t interval_ms,
                     int64_t now_ms)
{
	return last_activity_ms > published_ms && now_ms - published_ms >= interval_ms;
}

int64_t rt_activity_due_at(int64_t last_activity_ms, int64_t published_ms, int64_t interval_ms)
{
	if (last_activity_ms <= published_ms)
		return -1;
	int64_t end = published_ms + interval_ms;
	return end > last_activity_ms ? end : last_activity_ms;
}

size_t rt_activity_collect(rt_activity *a, int64_t now_ms, rt_activity_candidate *out,
                           size_t cap)
{
	size_t n = 0;
	pthread_mutex_lock(&a->lock);
	size_t nvict = 0, count = asb_map_count(&a->map);
	char (*victims)[128] = count ? malloc(count * sizeof(*victims)) : NULL;
	size_t bucket = 0;
	asb_map_entry *it = NULL;
	while ((it = (asb_map_next(&a->map, &bucket, &it)))) {
		entry *e = it->value;
		int64_t interval = sbx_idle_publish_interval_ms(e->timeout_ms);
		if (e->inflight > 0 && now_ms > e->last_activity_ms)
			e->last_activity_ms = now_ms;   /* in use all along */
		if (rt_activity_due(e->last_activity_ms, e->published_ms, interval, now_ms)) {
			if (n < cap) {
				rt_activity_candidate *c = &out[n++];
				memcpy(c->ns, e->ns, sizeof(c->ns));
				memcpy(c->name, e->name, sizeof(c->name));
				c->last_activity_ms = e->last_activity_ms;
				c->published_ms = e->published_ms;
				c->inflight = e->inflight;
			}
		} else if (!e->inflight && e->last_activity_ms <= e->published_ms &&
		           now_ms - e->last_activity_ms >= interval && victims && nvict < count) {
			snprintf(victims[nvict++], sizeof(victims[0]), "%s", it->key);
		}
	}
	/* without the memory for the list, eviction waits for the next tick */
	for (size_t i = 0; i < nvict; i++) {
		void *old = NULL;
		if (asb_map_remove(&a->map, victims[i], &old))
			free(old);
	}
	pthread_mutex_unlock(&a->lock);
	free(victims);
	return n;
}

void rt_activity_published(rt_activity *a, const char *ns, const char *name,
                           int64_t published_ms)
{
	char key[128];
	if (!make_key(key, ns, name))
		return;
	pthread_mutex_lock(&a->lock);
	entry *e = asb_map_get(&a->map, key);
	if (e && published_ms > e->published_ms)
		e->published_ms = published_ms;
	pthread_mutex_unlock(&a->lock);
}

void rt_activity_forget(rt_activity *a, const char *ns, const char *name, bool only_idle)
{
	char key[128];
	if (!make_key(key, ns, name))
		return;
	pthread_mutex_lock(&a->lock);
	entry *e = asb_map_get(&a->map, key);
	if (e && (!only_idle || !e->inflight)) {
		asb_map_remove(&a->map, key, NULL);
		free(e);
	}
	pthread_mutex_unlock(&a->lock);
}

size_t rt_activity_count(rt_activity *a)
{
	pthread_mutex_lock(&a->lock);
	size_t n = asb_map_count(&a->map);
	pthread_mutex_unlock(&a->lock);
	return n;
}

int rt_activity_inflight(rt_activity *a, const char *ns, const char *name)
{
	char key[128];
	if (!make_key(key, ns, name))
		return 0;
	pthread_mutex_lock(&a->lock);
	entry *e = asb_map_get(&a->map, key);
	int n = e ? e->inflight : 0;
	pthread_mutex_unlock(&a->lock);
	return n;
}

/* {"metadata":{"annotations":{...}}} with the last-activity annotation at
 * `now_ms`; `*ann` receives the annotations object. */
static cJSON *activity_doc(int64_t now_ms, cJSON **ann)
{
	char ts[32];
	k8s_time_format(now_ms, ts, sizeof(ts));
	cJSON *doc = cJSON_CreateObject();
	cJSON *md = doc ? cJSON_AddObjectToObject(doc, "metadata") : NULL;
	*ann = md ? cJSON_AddObjectToObject(md, "annotations") : NULL;
	if (!*ann || !cJSON_AddStringToObject(*ann, SBX_ANNOTATION_LAST_ACTIVITY, ts)) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

cJSON *rt_activity_patch(int64_t now_ms)
{
	cJSON *ann;
	return activity_doc(now_ms, &ann);
}

cJSON *rt_resume_patch(int64_t now_ms)
{
	cJSON *ann;
	cJSON *doc = activity_doc(now_ms, &ann);
	cJSON *spec = doc ? cJSON_AddObjectToObject(doc, "spec") : NULL;
	if (!spec || !cJSON_AddNullToObject(ann, SBX_ANNOTATION_IDLE_SUSPENDED_AT) ||
	    !cJSON_AddStringToObject(spec, "operatingMode", SBX_OPERATING_MODE_RUNNING)) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}
