/*
 * events.c - the event recorder (see events.h), after client-go's
 * tools/events broadcaster plus the per-object spam filter of tools/record.
 *
 * Two halves:
 * - the pure part (events_internal.h): keys, token bucket, series
 *   bookkeeping, Event documents; unit-tested with chosen times;
 * - the recorder: k8s_event_record() decides under one mutex, on the
 *   caller's thread and without I/O, whether an event starts a new Event
 *   (rate limit, then a create is queued) or repeats a recent one (its
 *   series count goes up in memory). One writer thread performs the
 *   creates in queue order and the series PATCHes when they are due.
 *
 * State under `lock`:
 * - `entries`: aggregation key -> entry (one Event and its series), at most
 *   MAX_ENTRIES; an entry ends when its series window passes with nothing
 *   left to write;
 * - `buckets`: object key -> token bucket, at most MAX_BUCKETS (a full
 *   bucket is the same as a missing one, so those are evicted first);
 * - the create queue (FIFO of entry keys; retries go to the back with a
 *   not-before time), bounded by queue_size;
 * - flush generations: flush() bumps `flush_req`; the writer sets
 *   `flush_done` once nothing of that generation is left to try.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "asb/clock.h"
#include "k8s/events.h"
#include "k8s/object.h"
#include "events_internal.h"
#include "asb/map.h"
#include "asb/strbuf.h"
#include "microtime.h"
#include "rng.h"

const k8s_resource k8s_resource_events_v1 =
	{ "events.k8s.io", "v1", "events", "Event", true };

/* client-go's record.EventSourceObjectSpamFilter keeps an LRU of 4096. */
#define MAX_BUCKETS 4096
#define MAX_ENTRIES 4096
/* Drops are logged at warn level at most this often (then at debug). */
#define DROP_LOG_INTERVAL_MS 10000

/* --- pure part ----------------------------------------------------------- */

static void key_field(asb_strbuf *b, const char *s)
{
	if (!s)
		s = "";
	asb_strbuf_addf(b, "%zu:%s;", strlen(s), s);
}

static void key_ref(asb_strbuf *b, const k8s_event_ref *r)
{
	if (!r) {
		asb_strbuf_adds(b, "-;");
		return;
	}
	key_field(b, r->api_version);
	key_field(b, r->kind);
	key_field(b, r->namespace_);
	key_field(b, r->name);
	key_field(b, r->uid);
}

/* The key built in `b`, or NULL (and `b` freed) when out of memory. */
static char *key_done(asb_strbuf *b)
{
	if (b->failed) {
		asb_strbuf_free(b);
		return NULL;
	}
	return asb_strbuf_detach(b, NULL);
}

static const char *type_name(k8s_event_type t)
{
	return t == K8S_EVENT_WARNING ? "Warning" : "Normal";
}

char *k8s__event_key(const k8s_event_ref *regarding, const k8s_event_ref *related,
                     k8s_event_type type, const char *reason,
                     const char *action, const char *note)
{
	asb_strbuf b = ASB_STRBUF_INIT;
	key_ref(&b, regarding);
	key_ref(&b, related);
	key_field(&b, type_name(type));
	key_field(&b, reason);
	key_field(&b, action);
	key_field(&b, note);
	return key_done(&b);
}

char *k8s__event_object_key(const k8s_event_ref *regarding)
{
	asb_strbuf b = ASB_STRBUF_INIT;
	key_ref(&b, regarding);
	return key_done(&b);
}

void k8s__bucket_init(k8s__token_bucket *b, int burst, int64_t now_ms)
{
	b->tokens = burst;
	b->last_ms = now_ms;
}

static double refilled(const k8s__token_bucket *b, int burst,
                       long refill_interval_ms, int64_t now_ms)
{
	double t = b->tokens;
	if (now_ms > b->last_ms)
		t += (double)(now_ms - b->last_ms) / (double)refill_interval_ms;
	return t > burst ? burst : t;
}

bool k8s__bucket_take(k8s__token_bucket *b, int burst, long refill_interval_ms,
                      int64_t now_ms)
{
	b->tokens = refilled(b, burst, refill_interval_ms, now_ms);
	if (now_ms > b->last_ms)
		b->last_ms = now_ms;
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

bool k8s__bucket_full(const k8s__token_bucket *b, int burst,
                      long refill_interval_ms, int64_t now_ms)
{
	return refilled(b, burst, refill_interval_ms, now_ms) >= burst;
}

void k8s__series_start(k8s__event_series *s, int64_t now_ms, int64_t now_us)
{
	memset(s, 0, sizeof(*s));
	s->count = 1;
	s->last_observed_ms = now_ms;
	s->last_observed_us = now_us;
}

void k8s__series_observe(k8s__event_series *s, int64_t now_ms, int64_t now_us)
{
	s->count++;
	s->last_observed_ms = now_ms;
	s->last_observed_us = now_us;
}

bool k8s__series_expired(const k8s__event_series *s, int64_t now_ms, long window_ms)
{
	return now_ms - s->last_observed_ms >= window_ms;
}

int64_t k8s__series_next_patch_ms(const k8s__event_series *s, long interval_ms,
                                  long window_ms)
{
	if (!s->created || s->count <= s->written_count)
		return INT64_MAX;
	if (s->last_write_ms == 0)
		return 0;
	int64_t paced = s->last_write_ms + interval_ms;
	/* The final count goes out when the series ends, unless written since. */
	int64_t ended = s->last_observed_ms + window_ms;
	return ended > s->last_write_ms && ended < paced ? ended : paced;
}

bool k8s__series_patch_due(const k8s__event_series *s, int64_t now_ms,
                           long interval_ms, long window_ms, bool force)
{
	int64_t at = k8s__series_next_patch_ms(s, interval_ms, window_ms);
	if (at == INT64_MAX)
		return false;
	return force || now_ms >= at;
}

void k8s__event_name(char *buf, size_t cap, const char *object_name, int64_t unix_ns)
{
	size_t n = strlen(object_name);
	if (n > K8S__EVENT_NAME_PREFIX_MAX)
		n = K8S__EVENT_NAME_PREFIX_MAX;
	snprintf(buf, cap, "%.*s.%016llx", (int)n, object_name,
	         (unsigned long long)unix_ns);
}

const char *k8s__event_namespace(const k8s_event_ref *regarding)
{
	return regarding->namespace_ && regarding->namespace_[0] ? regarding->namespace_
	                                                         : "default";
}

size_t k8s__utf8_prefix(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max)
		return n;
	/* Back off continuation bytes (10xxxxxx) so the cut falls between characters. */
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Adds a string member unless `s` is NULL or empty. False when out of memory. */
static bool add_str(cJSON *o, const char *key, const char *s)
{
	if (!s || !s[0])
		return true;
	return cJSON_AddStringToObject(o, key, s) != NULL;
}

static cJSON *ref_json(const k8s_event_ref *r)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	if (!add_str(o, "apiVersion", r->api_version) || !add_str(o, "kind", r->kind) ||
	    !add_str(o, "namespace", r->namespace_) || !add_str(o, "name", r->name) ||
	    !add_str(o, "uid", r->uid) ||
	    !add_str(o, "resourceVersion", r->resource_version)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static bool add_item(cJSON *o, const char *key, cJSON *item)
{
	if (!item || !cJSON_AddItemToObject(o, key, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

static cJSON *series_json(int count, int64_t last_observed_us)
{
	char t[K8S_MICROTIME_LEN];
	cJSON *s = cJSON_CreateObject();
	if (!s || !cJSON_AddNumberToObject(s, "count", count) ||
	    !cJSON_AddStringToObject(s, "lastObservedTime",
	                             k8s__microtime_format(last_observed_us, t, sizeof(t)))) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

cJSON *k8s__event_build(const k8s__event_fields *f)
{
	char t[K8S_MICROTIME_LEN];
	cJSON *o = cJSON_CreateObject();
	cJSON *meta = cJSON_CreateObject();
	if (!add_item(o, "metadata", meta)) {
		cJSON_Delete(o);
		return NULL;
	}
	bool ok = add_str(o, "apiVersion", "events.k8s.io/v1") &&
	          add_str(o, "kind", "Event") &&
	          add_str(meta, "name", f->name) &&
	          add_str(meta, "namespace", f->ns) &&
	          add_str(o, "eventTime", k8s__microtime_format(f->event_time_us, t, sizeof(t))) &&
	          add_str(o, "reportingController", f->reporting_controller) &&
	          add_str(o, "reportingInstance", f->reporting_instance) &&
	          add_str(o, "action", f->action) &&
	          add_str(o, "reason", f->reason) &&
	          add_item(o, "regarding", ref_json(f->regarding)) &&
	          (!f->related || add_item(o, "related", ref_json(f->related))) &&
	          add_str(o, "note", f->note) &&
	          add_str(o, "type", type_name(f->type)) &&
	          (f->series_count < 2 ||
	           add_item(o, "series", series_json(f->series_count, f->series_last_us)));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *k8s__event_series_patch(int count, int64_t last_observed_us)
{
	cJSON *p = cJSON_CreateObject();
	if (!add_item(p, "series", series_json(count, last_observed_us))) {
		cJSON_Delete(p);
		return NULL;
	}
	return p;
}

int k8s_event_ref_from(const cJSON *obj, const char *api_version,
                       const char *kind, k8s_event_ref *out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "events: NULL reference");
	memset(out, 0, sizeof(*out));
	out->api_version = api_version ? api_version : k8s_obj_str(obj, "apiVersion");
	out->kind = kind ? kind : k8s_obj_str(obj, "kind");
	out->namespace_ = k8s_obj_namespace(obj);
	out->name = k8s_obj_name(obj);
	out->uid = k8s_obj_uid(obj);
	out->resource_version = k8s_obj_resource_version(obj);
	if (!out->name || !out->name[0] || !out->api_version || !out->api_version[0] ||
	    !out->kind || !out->kind[0])
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "events: the object needs metadata.name, and apiVersion and "
		                     "kind (from the object or the caller)");
	return 0;
}

/* --- the recorder --------------------------------------------------------- */

typedef struct {
	k8s__event_series series;
	char *name;            /* the Event's metadata.name */
	char *ns;              /* and namespace */
	cJSON *event;          /* the Event as first built (recreated from it if it vanished) */
	bool pending;          /* a create is queued or in flight */
	bool writing;          /* a series PATCH is in flight */
	uint64_t attempt_gen;  /* flush generation of the last write attempt */
} entry;

typedef struct item {
	char *key;             /* the entry to create */
	int tries;
	int64_t not_before_ms;
	uint64_t attempt_gen;
	struct item *next;
} item;

struct k8s_event_recorder {
	k8s_client *client;
	asb_logger *log;
	char *controller, *instance;
	size_t queue_size;
	long window_ms, interval_ms, refill_ms, retry_ms, shutdown_ms;
	int burst, max_tries;

	pthread_mutex_t lock;
	pthread_cond_t wake;      /* the writer: work, flush or stop */
	pthread_cond_t flushed;   /* flushers: flush_done moved */
	asb_map entries;          /* aggregation key -> entry* */
	asb_map buckets;          /* object key -> k8s__token_bucket* */
	item *head, *tail;
	size_t queued;
	uint64_t flush_req, flush_done;
	bool stopping, writer_done;
	int64_t last_name_ns;     /* keeps Event names unique within the recorder */
	int64_t last_drop_log_ms;
	uint64_t rng;
	k8s_event_stats stats;

	pthread_t thread;
	bool thread_started;
};

static void entry_free(void *p)
{
	entry *e = p;
	if (!e)
		return;
	free(e->name);
	free(e->ns);
	cJSON_Delete(e->event);
	free(e);
}

static void item_free(item *it)
{
	if (it) {
		free(it->key);
		free(it);
	}
}

static long positive_or(long v, long def)
{
	return v > 0 ? v : def;
}

int k8s_event_recorder_options_init(k8s_event_recorder_options *opts,
                                    unsigned int version)
{
	if (!opts || version != K8S_EVENT_RECORDER_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "events: unknown options version %u", version);
	k8s_event_recorder_options def = K8S_EVENT_RECORDER_OPTIONS_INIT;
	*opts = def;
	return 0;
}

static void *writer_main(void *arg);

int k8s_event_recorder_new(k8s_event_recorder **out, k8s_client *client,
                           const k8s_event_recorder_options *o)
{
	if (!out || !client)
		return asb_error_set(ASB_EINVAL, 0, NULL, "events: out and client are required");
	*out = NULL;
	if (!o || o->version != K8S_EVENT_RECORDER_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "events: options missing or of an unknown version");
	if (!o->reporting_controller || !o->reporting_controller[0] ||
	    !o->reporting_instance || !o->reporting_instance[0])
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "events: reporting_controller and reporting_instance are required");
	if (strlen(o->reporting_controller) > K8S__EVENT_FIELD_MAX ||
	    strlen(o->reporting_instance) > K8S__EVENT_FIELD_MAX)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "events: reporting_controller and reporting_instance are limited "
		                     "to %d bytes", K8S__EVENT_FIELD_MAX);
	k8s_event_recorder *rec = calloc(1, sizeof(*rec));
	if (!rec)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	rec->client = client;
	rec->log = o->logger;
	rec->controller = strdup(o->reporting_controller);
	rec->instance = strdup(o->reporting_instance);
	rec->queue_size = o->queue_size > 0 ? o->queue_size : 1000;
	rec->window_ms = positive_or(o->series_window_ms, 360000);
	rec->interval_ms = positive_or(o->series_interval_ms, 30000);
	rec->burst = o->burst > 0 ? o->burst : 25;
	rec->refill_ms = positive_or(o->refill_interval_ms, 300000);
	rec->max_tries = o->max_tries > 0 ? o->max_tries : 12;
	rec->retry_ms = positive_or(o->retry_delay_ms, 10000);
	rec->shutdown_ms = positive_or(o->shutdown_timeout_ms, 5000);
	rec->rng = k8s__rng_seed(rec);
	asb_map_init(&rec->entries);
	asb_map_init(&rec->buckets);
	pthread_mutex_init(&rec->lock, NULL);
	asb_cond_init_monotonic(&rec->wake);
	asb_cond_init_monotonic(&rec->flushed);
	if (!rec->controller || !rec->instance) {
		k8s_event_recorder_free(rec);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	int err = pthread_create(&rec->thread, NULL, writer_main, rec);
	if (err != 0) {
		k8s_event_recorder_free(rec);
		return asb_error_set(ASB_ERROR, 0, NULL, "events: cannot start the writer thread: %s",
		                     strerror(err));
	}
	rec->thread_started = true;
	*out = rec;
	return 0;
}

void k8s_event_recorder_free(k8s_event_recorder *rec)
{
	if (!rec)
		return;
	if (rec->thread_started) {
		if (k8s_event_recorder_flush(rec, rec->shutdown_ms) != 0)
			asb_log(rec->log, ASB_LOG_WARN, "events: pending events dropped at shutdown",
			        "error", asb_error_last()->message, NULL);
		pthread_mutex_lock(&rec->lock);
		rec->stopping = true;
		pthread_cond_broadcast(&rec->wake);
		pthread_mutex_unlock(&rec->lock);
		pthread_join(rec->thread, NULL);
	}
	while (rec->head) {
		item *it = rec->head;
		rec->head = it->next;
		item_free(it);
	}
	asb_map_clear(&rec->entries, entry_free);
	asb_map_clear(&rec->buckets, free);
	pthread_cond_destroy(&rec->flushed);
	pthread_cond_destroy(&rec->wake);
	pthread_mutex_destroy(&rec->lock);
	free(rec->controller);
	free(rec->instance);
	free(rec);
}

static int64_t now_unix_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Caller holds the lock. Warn at most every DROP_LOG_INTERVAL_MS, else debug. */
static void log_drop(k8s_event_recorder *rec, const char *why,
                     const k8s_event_ref *regarding, const char *reason, int64_t now_ms)
{
	uint64_t total = rec->stats.dropped_queue_full + rec->stats.dropped_rate_limited;
	asb_log_level level = ASB_LOG_DEBUG;
	if (rec->last_drop_log_ms == 0 || now_ms - rec->last_drop_log_ms >= DROP_LOG_INTERVAL_MS) {
		level = ASB_LOG_WARN;
		rec->last_drop_log_ms = now_ms;
	}
	asb_log_typed(rec->log, level, "events: event dropped", ASB_LOG_STR("why", why),
	              ASB_LOG_STR("kind", regarding->kind),
	              ASB_LOG_STR("namespace", regarding->namespace_),
	              ASB_LOG_STR("name", regarding->name), ASB_LOG_STR("reason", reason),
	              ASB_LOG_INT("dropped_total", total));
}

/* Removes entries whose series ended with nothing left to write. Caller holds the lock. */
static void sweep(k8s_event_recorder *rec, int64_t now_ms)
{
	size_t b = 0;
	asb_map_entry *it = NULL, *next;
	next = asb_map_next(&rec->entries, &b, &it);
	while (next) {
		entry *e = next->value;
		char *key = next->key;
		next = asb_map_next(&rec->entries, &b, &it);
		bool unwritten = e->series.created && e->series.count > e->series.written_count;
		if (!e->pending && !e->writing && !unwritten &&
		    k8s__series_expired(&e->series, now_ms, rec->window_ms)) {
			void *old = NULL;
			asb_map_remove(&rec->entries, key, &old);
			entry_free(old);
		}
	}
}

/* The bucket of an object, created full; bounded. Caller holds the lock. */
static k8s__token_bucket *bucket_for(k8s_event_recorder *rec, const char *objkey,
                                     int64_t now_ms)
{
	k8s__token_bucket *bk = asb_map_get(&rec->buckets, objkey);
	if (bk)
		return bk;
	if (asb_map_count(&rec->buckets) >= MAX_BUCKETS) {
		/* Full buckets equal fresh ones: forgetting them changes nothing. */
		size_t b = 0;
		asb_map_entry *it = NULL, *e = asb_map_next(&rec->buckets, &b, &it);
		char *victim = NULL;
		while (e) {
			asb_map_entry *cur = e;
			e = asb_map_next(&rec->buckets, &b, &it);
			void *old = NULL;
			if (k8s__bucket_full(cur->value, rec->burst, rec->refill_ms, now_ms))
				asb_map_remove(&rec->buckets, cur->key, &old);
			else if (!victim)
				victim = cur->key;
			free(old);
		}
		/* Still full: forget one object, which gets a fresh burst (bounded memory wins). */
		if (asb_map_count(&rec->buckets) >= MAX_BUCKETS && victim) {
			void *old = NULL;
			asb_map_remove(&rec->buckets, victim, &old);
			free(old);
		}
	}
	bk = malloc(sizeof(*bk));
	if (!bk)
		return NULL;
	k8s__bucket_init(bk, rec->burst, now_ms);
	if (asb_map_set(&rec->buckets, objkey, bk, NULL) != 0) {
		free(bk);
		return NULL;
	}
	return bk;
}

static int check_ref(const k8s_event_ref *r, const char *what)
{
	if (!r || !r->name || !r->name[0] || !r->kind || !r->kind[0] ||
	    !r->api_version || !r->api_version[0])
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "events: %s object needs apiVersion, kind and name", what);
	return 0;
}

/* Queues a create at the tail. Caller holds the lock. */
static void push_item(k8s_event_recorder *rec, item *it)
{
	if (rec->tail)
		rec->tail->next = it;
	else
		rec->head = it;
	rec->tail = it;
	rec->queued++;
}

/* A new Event for `key`: rate limit, queue, entry. Caller holds the lock. */
static int record_new(k8s_event_recorder *rec, char *key, const k8s_event_ref *regarding,
                      const k8s_event_ref *related, k8s_event_type type,
                      const char *reason, const char *action, const char *note,
                      int64_t now_ms, int64_t now_us)
{
	if (asb_map_count(&rec->entries) >= MAX_ENTRIES)
		sweep(rec, now_ms);
	if (rec->queued >= rec->queue_size || asb_map_count(&rec->entries) >= MAX_ENTRIES) {
		rec->stats.dropped_queue_full++;
		log_drop(rec, "queue full", regarding, reason, now_ms);
		return asb_error_set(ASB_ETOOMANYREQUESTS, 0, NULL,
		                     "events: queue full; event %s about %s %s dropped",
		                     reason, regarding->kind, regarding->name);
	}
	char *objkey = k8s__event_object_key(regarding);
	k8s__token_bucket *bk = objkey ? bucket_for(rec, objkey, now_ms) : NULL;
	free(objkey);
	if (!bk)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	if (!k8s__bucket_take(bk, rec->burst, rec->refill_ms, now_ms)) {
		rec->stats.dropped_rate_limited++;
		log_drop(rec, "rate limited", regarding, reason, now_ms);
		return asb_error_set(ASB_ETOOMANYREQUESTS, 0, NULL,
		                     "events: rate limit for %s %s reached; event %s dropped",
		                     regarding->kind, regarding->name, reason);
	}

	int64_t ns = now_unix_ns();
	if (ns <= rec->last_name_ns)
		ns = rec->last_name_ns + 1;
	rec->last_name_ns = ns;
	char name[300];
	k8s__event_name(name, sizeof(name), regarding->name, ns);
	k8s__event_fields f = {
		.name = name, .ns = k8s__event_namespace(regarding),
		.regarding = regarding, .related = related, .type = type,
		.reason = reason, .action = action, .note = note,
		.reporting_controller = rec->controller, .reporting_instance = rec->instance,
		.event_time_us = now_us,
	};
	entry *e = calloc(1, sizeof(*e));
	item *it = calloc(1, sizeof(*it));
	if (e) {
		e->name = strdup(name);
		e->ns = strdup(f.ns);
		e->event = k8s__event_build(&f);
	}
	if (it)
		it->key = strdup(key);
	if (!e || !it || !e->name || !e->ns || !e->event || !it->key ||
	    asb_map_set(&rec->entries, key, e, NULL) != 0) {
		entry_free(e);
		item_free(it);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	k8s__series_start(&e->series, now_ms, now_us);
	e->pending = true;
	push_item(rec, it);
	return 0;
}

int k8s_event_record(k8s_event_recorder *rec, const k8s_event_ref *regarding,
                     const k8s_event_ref *related, k8s_event_type type,
                     const char *reason, const char *action, const char *note)
{
	if (!rec)
		return asb_error_set(ASB_EINVAL, 0, NULL, "events: NULL recorder");
	int rc = check_ref(regarding, "the regarding");
	if (rc == 0 && related)
		rc = check_ref(related, "the related");
	if (rc < 0)
		return rc;
	if (type != K8S_EVENT_NORMAL && type != K8S_EVENT_WARNING)
		return asb_error_set(ASB_EINVAL, 0, NULL, "events: unknown event type %d", (int)type);
	if (!reason || !reason[0] || strlen(reason) > K8S__EVENT_FIELD_MAX ||
	    !action || !action[0] || strlen(action) > K8S__EVENT_FIELD_MAX)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "events: reason and action are required, at most %d bytes",
		                     K8S__EVENT_FIELD_MAX);
	/* Cut the note to the API's limit here, so the key matches what is stored. */
	char *cut = strndup(note ? note : "", k8s__utf8_prefix(note ? note : "", K8S__EVENT_NOTE_MAX));
	char *key = cut ? k8s__event_key(regarding, related, type, reason, action, cut) : NULL;
	if (!key) {
		free(cut);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	int64_t now_ms = k8s_monotonic_ms(), now_us = k8s__now_us();

	pthread_mutex_lock(&rec->lock);
	if (rec->stopping) {
		rc = asb_error_set(ASB_ESHUTDOWN, 0, NULL, "events: the recorder is shutting down");
		goto out;
	}
	entry *e = asb_map_get(&rec->entries, key);
	/*
	 * An ended series whose last count is written is forgotten here, so the
	 * repeat starts a new Event; one still being written goes on counting
	 * (the window is approximate by one write at most).
	 */
	if (e && k8s__series_expired(&e->series, now_ms, rec->window_ms) &&
	    !e->pending && !e->writing &&
	    !(e->series.created && e->series.count > e->series.written_count)) {
		void *old = NULL;
		asb_map_remove(&rec->entries, key, &old);
		entry_free(old);
		e = NULL;
	}
	if (e) {
		k8s__series_observe(&e->series, now_ms, now_us);
		rec->stats.aggregated++;
	} else {
		rc = record_new(rec, key, regarding, related, type, reason, action, cut,
		                now_ms, now_us);
	}
	if (rc == 0) {
		rec->stats.recorded++;
		pthread_cond_signal(&rec->wake);
	}
out:
	pthread_mutex_unlock(&rec->lock);
	free(key);
	free(cut);
	return rc;
}

int k8s_event_recordf(k8s_event_recorder *rec, const k8s_event_ref *regarding,
                      const k8s_event_ref *related, k8s_event_type type,
                      const char *reason, const char *action, const char *note_fmt, ...)
{
	char *note = NULL;
	if (note_fmt) {
		va_list ap;
		va_start(ap, note_fmt);
		int n = vasprintf(&note, note_fmt, ap);
		va_end(ap);
		if (n < 0)
			return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	int rc = k8s_event_record(rec, regarding, related, type, reason, action, note);
	free(note);
	return rc;
}

int k8s_event_recorder_flush(k8s_event_recorder *rec, long timeout_ms)
{
	if (!rec)
		return asb_error_set(ASB_EINVAL, 0, NULL, "events: NULL recorder");
	struct timespec deadline;
	asb_deadline_after_ms(&deadline, timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&rec->lock);
	uint64_t gen = ++rec->flush_req;
	pthread_cond_signal(&rec->wake);
	while (rec->flush_done < gen && !rec->writer_done) {
		int err = timeout_ms < 0 ? pthread_cond_wait(&rec->flushed, &rec->lock)
		                         : pthread_cond_timedwait(&rec->flushed, &rec->lock, &deadline);
		if (err == ETIMEDOUT)
			break;
	}
	bool done = rec->flush_done >= gen;
	pthread_mutex_unlock(&rec->lock);
	if (!done)
		return asb_error_set(ASB_ETIMEOUT, 0, NULL,
		                     "events: flush not finished within %ld ms", timeout_ms);
	return 0;
}

void k8s_event_recorder_stats(k8s_event_recorder *rec, k8s_event_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!rec)
		return;
	pthread_mutex_lock(&rec->lock);
	*out = rec->stats;
	pthread_mutex_unlock(&rec->lock);
}

/* --- the writer thread ------------------------------------------------------ */

/* Errors worth another try: the server was unreachable, busy or failing. */
static bool transient(int rc)
{
	return rc == ASB_ETRANSPORT || rc == ASB_ETIMEOUT || rc == ASB_ETOOMANYREQUESTS ||
	       rc == ASB_EINTERNAL || rc == ASB_ESERVICEUNAVAILABLE ||
	       rc == ASB_ESERVERTIMEOUT || rc == ASB_ENOMEM;
}

static void log_write_error(k8s_event_recorder *rec, const char *what,
                            const char *ns, const char *name, bool retry)
{
	asb_log_typed(rec->log, ASB_LOG_WARN, what, ASB_LOG_STR("namespace", ns),
	              ASB_LOG_STR("event", name), ASB_LOG_BOOL("retry", retry),
	              ASB_LOG_STR("error", asb_error_last()->message));
}

static void log_written(k8s_event_recorder *rec, const char *what, const char *ns,
                        const char *name, int count)
{
	asb_log_typed(rec->log, ASB_LOG_DEBUG, what, ASB_LOG_STR("namespace", ns),
	              ASB_LOG_STR("event", name), ASB_LOG_INT("count", count));
}

/* Detaches the first create that may run now. Caller holds the lock. */
static item *pick_item(k8s_event_recorder *rec, int64_t now_ms, uint64_t gen)
{
	item *prev = NULL;
	for (item *it = rec->head; it; prev = it, it = it->next) {
		if (it->not_before_ms > now_ms && it->attempt_gen >= gen)
			continue;
		if (prev)
			prev->next = it->next;
		else
			rec->head = it->next;
		if (rec->tail == it)
			rec->tail = prev;
		it->next = NULL;
		rec->queued--;
		return it;
	}
	return NULL;
}

/* Creates one queued Event. Called and returns with the lock held. */
static void do_create(k8s_event_recorder *rec, item *it)
{
	entry *e = asb_map_get(&rec->entries, it->key);
	if (!e) { /* cannot happen: pending entries are never swept */
		item_free(it);
		return;
	}
	/*
	 * Repeats recorded before the create went out are included as its
	 * series; a flush that asked for this create is answered by it.
	 */
	e->attempt_gen = it->attempt_gen;
	int count = e->series.count;
	cJSON *ev = cJSON_Duplicate(e->event, 1);
	if (ev && count >= 2 && !add_item(ev, "series", series_json(count, e->series.last_observed_us))) {
		cJSON_Delete(ev);
		ev = NULL;
	}
	char *ns = strdup(e->ns), *name = strdup(e->name);
	pthread_mutex_unlock(&rec->lock);

	int rc = ev && ns && name
		? k8s_client_create(rec->client, &k8s_resource_events_v1, ns, ev, NULL, NULL)
		: asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	bool retry = rc != 0 && transient(rc) && it->tries + 1 < rec->max_tries;
	if (rc != 0)
		log_write_error(rec, "events: cannot create event", ns, name, retry);
	else
		log_written(rec, "events: event created", ns, name, count);
	cJSON_Delete(ev);
	free(ns);
	free(name);

	pthread_mutex_lock(&rec->lock);
	int64_t now = k8s_monotonic_ms();
	if (rc == 0) {
		rec->stats.created++;
		e->pending = false;
		e->series.created = true;
		e->series.written_count = count;
		if (count >= 2)
			e->series.last_write_ms = now;
		item_free(it);
	} else if (retry) {
		it->tries++;
		/* client-go: wait.Jitter(10 s, 0.25) between attempts */
		it->not_before_ms = now + rec->retry_ms +
		                    (int64_t)(k8s__rng_unit(&rec->rng) * 0.25 * (double)rec->retry_ms);
		push_item(rec, it);
	} else {
		/* Abandoned; forgetting the entry lets a later identical event try again. */
		rec->stats.failed++;
		void *old = NULL;
		asb_map_remove(&rec->entries, it->key, &old);
		entry_free(old);
		item_free(it);
	}
}

/* The next entry of an iteration over the entries (`b`, `it` as
 * asb_map_next()) that no create or PATCH holds, or NULL at the end.
 * Caller holds the lock. */
static entry *next_idle(k8s_event_recorder *rec, size_t *b, asb_map_entry **it)
{
	asb_map_entry *m;
	while ((m = asb_map_next(&rec->entries, b, it))) {
		entry *e = m->value;
		if (!e->pending && !e->writing)
			return e;
	}
	return NULL;
}

/* The first entry whose series PATCH is due. Caller holds the lock. */
static entry *pick_patch(k8s_event_recorder *rec, int64_t now_ms, uint64_t gen)
{
	size_t b = 0;
	asb_map_entry *it = NULL;
	for (entry *e; (e = next_idle(rec, &b, &it));) {
		if (k8s__series_patch_due(&e->series, now_ms, rec->interval_ms, rec->window_ms,
		                          e->attempt_gen < gen))
			return e;
	}
	return NULL;
}

/*
 * Writes an entry's series. If the Event is gone (events expire on the
 * server, one hour by default), it is created again with its series, as
 * client-go does. Called and returns with the lock held; `e->writing`
 * keeps the entry alive meanwhile.
 */
static void do_patch(k8s_event_recorder *rec, entry *e)
{
	e->writing = true;
	int count = e->series.count;
	int64_t last_us = e->series.last_observed_us;
	char *ns = strdup(e->ns), *name = strdup(e->name);
	cJSON *ev = cJSON_Duplicate(e->event, 1);
	pthread_mutex_unlock(&rec->lock);

	bool recreated = false;
	cJSON *patch = k8s__event_series_patch(count, last_us);
	int rc = patch && ns && name && ev
		? k8s_client_patch(rec->client, &k8s_resource_events_v1, ns, name, NULL,
		                   K8S_PATCH_MERGE, patch, NULL, NULL)
		: asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	if (rc == ASB_ENOTFOUND && add_item(ev, "series", series_json(count, last_us))) {
		recreated = true;
		rc = k8s_client_create(rec->client, &k8s_resource_events_v1, ns, ev, NULL, NULL);
	}
	if (rc != 0)
		log_write_error(rec, "events: cannot update event series", ns, name, transient(rc));
	else
		log_written(rec, recreated ? "events: event recreated with its series"
		                           : "events: event series updated", ns, name, count);
	cJSON_Delete(patch);
	cJSON_Delete(ev);
	free(ns);
	free(name);

	pthread_mutex_lock(&rec->lock);
	e->writing = false;
	e->series.last_write_ms = k8s_monotonic_ms();
	if (rc == 0) {
		e->series.written_count = count;
		if (recreated)
			rec->stats.created++;
		else
			rec->stats.series_patches++;
	} else if (!transient(rc)) {
		/* The server refuses this write: give the count up, not the recorder. */
		e->series.written_count = count;
		rec->stats.failed++;
	}
	/* transient: written_count stays behind, so the next interval tries again */
}

/* When the writer has something to do without being woken. Caller holds the lock. */
static int64_t next_wake_ms(k8s_event_recorder *rec)
{
	int64_t next = INT64_MAX;
	for (item *it = rec->head; it; it = it->next)
		if (it->not_before_ms < next)
			next = it->not_before_ms;
	size_t b = 0;
	asb_map_entry *it = NULL;
	for (entry *e; (e = next_idle(rec, &b, &it));) {
		/* Unwritten repeats: the next PATCH; otherwise the end, for sweep(). */
		int64_t at = k8s__series_next_patch_ms(&e->series, rec->interval_ms, rec->window_ms);
		if (at == INT64_MAX)
			at = e->series.last_observed_ms + rec->window_ms;
		if (at < next)
			next = at;
	}
	return next;
}

static void *writer_main(void *arg)
{
	k8s_event_recorder *rec = arg;
	pthread_mutex_lock(&rec->lock);
	while (!rec->stopping) {
		int64_t now = k8s_monotonic_ms();
		uint64_t gen = rec->flush_req;
		sweep(rec, now);
		item *it = pick_item(rec, now, gen);
		if (it) {
			it->attempt_gen = gen;
			do_create(rec, it);
			continue;
		}
		entry *e = pick_patch(rec, now, gen);
		if (e) {
			e->attempt_gen = gen;
			do_patch(rec, e);
			continue;
		}
		if (rec->flush_done < gen) {
			rec->flush_done = gen;
			pthread_cond_broadcast(&rec->flushed);
		}
		int64_t next = next_wake_ms(rec);
		if (next == INT64_MAX) {
			pthread_cond_wait(&rec->wake, &rec->lock);
		} else if (next > now) {
			struct timespec ts;
			asb_deadline_after_ms(&ts, (long)(next - now));
			pthread_cond_timedwait(&rec->wake, &rec->lock, &ts);
		}
	}
	rec->writer_done = true;
	pthread_cond_broadcast(&rec->flushed);
	pthread_mutex_unlock(&rec->lock);
	return NULL;
}
