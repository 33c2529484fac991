/*
 * activity.h - what this router replica saw of each idle-policy Sandbox's
 * use, and when that is worth publishing (docs/router.md#idle-sandboxes).
 *
 * A Sandbox with spec.idleTimeoutSeconds is suspended (or deleted) by the
 * controller once its last activity is older than its timeout
 * (sandbox/idle.h). The router is where activity is seen: every proxied
 * request that resolves to such a Sandbox begins and ends an entry here,
 * and a background thread (idlesync.h) publishes it as the Sandbox's
 * agents.x-k8s.io/last-activity annotation, at most once per
 * sbx_idle_publish_interval_ms(timeout) per Sandbox.
 *
 * The table: one entry per Sandbox ("ns/name"), holding
 * - the exchanges in flight (requests, streaming responses, upgrade
 *   tunnels): while any is, the Sandbox is in use, and each tick
 *   (rt_activity_collect()) moves its activity to now;
 * - the last activity seen here (wall clock, ms);
 * - the latest publication known: the later of what this replica last
 *   wrote and the annotation the Sandbox cache showed (another replica's
 *   write counts as ours: replicas coalesce);
 * - the idle timeout the Sandbox had when last resolved (its interval).
 * Keys come only from Sandboxes found in an authoritative cache with an
 * idle policy, never from a raw header, so the table cannot hold more
 * entries than there are such Sandboxes; it is bounded besides
 * (`max_entries`), and entries with nothing in flight or to publish are
 * evicted once idle for their interval (the cache's annotation then says
 * what they said).
 *
 * Times are wall-clock milliseconds since the epoch, passed in (no clock
 * read here): the annotation is compared with them.
 * Thread-safety: every function on a table may be called from any thread
 * (one mutex; each call holds it for one hash lookup, or one walk of the
 * table for rt_activity_collect()). rt_activity_due() and the body
 * builders are pure.
 */
#ifndef RT_ACTIVITY_H
#define RT_ACTIVITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/** Default bound of the table (about 200 bytes an entry). */
#define RT_ACTIVITY_MAX_ENTRIES 65536

typedef struct rt_activity rt_activity;

/** A Sandbox whose activity may be due for publication (rt_activity_collect()). */
typedef struct {
	char ns[64];
	char name[64];
	int64_t last_activity_ms;   /**< latest activity seen here */
	int64_t published_ms;       /**< latest publication known here (0: none) */
	int inflight;               /**< exchanges in flight */
} rt_activity_candidate;

/**
 * Creates an empty table of at most `max_entries` entries (0: the
 * default). Returns 0, or ASB_ENOMEM.
 */
int rt_activity_new(rt_activity **out, size_t max_entries);

/** Frees the table; NULL accepted. No other call may run or follow. */
void rt_activity_free(rt_activity *a);

/**
 * An exchange with Sandbox ns/name begins (a request forwarded to it):
 * its in-flight count goes up by one and its activity is `now_ms`.
 * `timeout_ms` is its idle timeout as resolved (> 0). `ns` and `name` are
 * at most 63 bytes (DNS labels, as the contract checked them).
 * Returns 0; ASB_ETOOLARGE when the table is full (nothing recorded: do not
 * call rt_activity_end()); ASB_EINVAL for an empty or too long name;
 * ASB_ENOMEM.
 */
int rt_activity_begin(rt_activity *a, const char *ns, const char *name, int64_t timeout_ms,
                      int64_t now_ms);

/**
 * The exchange that rt_activity_begin() recorded ends: in flight down by
 * one, activity `now_ms`. An entry dropped meanwhile (its Sandbox gone) is
 * ignored.
 */
void rt_activity_end(rt_activity *a, const char *ns, const char *name, int64_t now_ms);

/**
 * Pure: whether a Sandbox's activity is due for publication at `now_ms`:
 * there is activity newer than the latest publication known
 * (`published_ms`, 0 for none), and that publication is at least
 * `interval_ms` old. So one Sandbox is written at most once per interval,
 * whichever replica wrote last, and the first activity after a quiet
 * interval is written at once.
 */
bool rt_activity_due(int64_t last_activity_ms, int64_t published_ms, int64_t interval_ms,
                     int64_t now_ms);

/**
 * Pure: when that activity became (or becomes) due: the later of the
 * activity and the end of the interval after the publication; -1 when
 * nothing is newer than the publication. rt_activity_due() is
 * `due_at >= 0 && now_ms >= due_at`; the publisher's lag is now - due_at.
 */
int64_t rt_activity_due_at(int64_t last_activity_ms, int64_t published_ms, int64_t interval_ms);

/**
 * One tick of the publisher, under the table's lock: moves the activity of
 * every entry with exchanges in flight to `now_ms`; evicts the entries
 * with nothing in flight and nothing to publish whose last activity is at
 * least their interval old; and copies into `out` (at most `cap`) the
 * entries that are due by what this replica knows (rt_activity_due()
 * against their own publication; the caller then checks the cache's
 * annotation). Returns how many were copied; those past `cap` stay due
 * for the next tick.
 */
size_t rt_activity_collect(rt_activity *a, int64_t now_ms, rt_activity_candidate *out,
                           size_t cap);

/**
 * Records a publication of ns/name's activity at `published_ms` (this
 * replica's write, or a newer annotation seen in the cache): the entry's
 * latest publication becomes the later of the two. Unknown entries are
 * ignored.
 */
void rt_activity_published(rt_activity *a, const char *ns, const char *name,
                           int64_t published_ms);

/**
 * Drops the entry of ns/name: its Sandbox is gone (a write answered 404,
 * or the cache no longer has it), or no longer has an idle policy. With
 * `only_idle` the entry is kept while exchanges are in flight.
 */
void rt_activity_forget(rt_activity *a, const char *ns, const char *name, bool only_idle);

/** Entries in the table now. */
size_t rt_activity_count(rt_activity *a);

/** In-flight exchanges of ns/name now (0 when untracked); for tests. */
int rt_activity_inflight(rt_activity *a, const char *ns, const char *name);

/**
 * Pure: the merge patch that publishes activity at `now_ms`:
 * {"metadata":{"annotations":{"agents.x-k8s.io/last-activity":"<RFC 3339>"}}}.
 * A new tree the caller frees with cJSON_Delete(), or NULL (no memory).
 */
cJSON *rt_activity_patch(int64_t now_ms);

/**
 * Pure: the merge patch that resumes a Sandbox suspended for idleness at
 * `now_ms`: the last-activity annotation set to now (its idle clock starts
 * again), the agents.x-k8s.io/idle-suspended-at annotation removed (null),
 * spec.operatingMode Running. A new tree (cJSON_Delete()), or NULL.
 */
cJSON *rt_resume_patch(int64_t now_ms);

#endif
