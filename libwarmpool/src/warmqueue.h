/*
 * warmqueue.h - the in-memory warm sandbox queue of the SandboxClaim
 * controller (docs/api.md#warm-queue), and the pure decisions around it: the
 * NodeSpread + FIFO picker (docs/api.md#claim-adoption) and the feeder's "is adoptable / should
 * push" rules (docs/api.md#warm-queue). Private to libwarmpool.
 *
 * The queue maps a pool key "<namespace>/<poolName>" to a FIFO list of
 * Sandboxes {namespace, name, nodeName}, deduplicated by namespace/name.
 * Every queue call is thread-safe (one mutex); the pure functions are
 * thread-safe on read-only arguments.
 *
 * The functions are hidden in the shared library: they are not API (no
 * public header); the unit tests reach them through libwarmpool_internal.
 */
#ifndef WP_WARMQUEUE_H
#define WP_WARMQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "warmpool/api.h"

typedef struct wp_warm_queue wp_warm_queue;

/** One queued warm Sandbox (strings owned by whoever holds the item). */
typedef struct {
	char *namespace_;
	char *name;
	char *node_name;  /**< status.nodeName when queued; "" when unknown */
} wp_warm_item;

/** Frees the strings of `it` (not `it` itself); NULL accepted. */
void wp_warm_item_clear(wp_warm_item *it);

/** Creates an empty queue. Returns 0 or ASB_ENOMEM. */
int wp_warm_queue_new(wp_warm_queue **out);

/** Frees the queue and every item; NULL accepted. */
void wp_warm_queue_free(wp_warm_queue *q);

/**
 * Appends `ns`/`name` at the tail of the list of `pool_key`; when the
 * Sandbox is already queued there only its node name is updated (the
 * position is kept). `node` may be NULL or "". Strings are copied.
 * Returns 0, ASB_EINVAL (NULL/empty argument) or ASB_ENOMEM.
 */
int wp_warm_queue_push(wp_warm_queue *q, const char *pool_key, const char *ns,
                       const char *name, const char *node);

/**
 * Removes `ns`/`name` from the list of `pool_key`. Returns true when it
 * was queued.
 */
bool wp_warm_queue_remove(wp_warm_queue *q, const char *pool_key,
                          const char *ns, const char *name);

/** Drops the whole list of `pool_key` (pool deleted, docs/api.md#pool-deletion). */
void wp_warm_queue_drop(wp_warm_queue *q, const char *pool_key);

/**
 * Takes one item out of the list of `pool_key`, chosen by
 * wp_warm_pick(), into `*out` (the caller clears it with
 * wp_warm_item_clear()). The pick and the removal are one atomic step.
 * Returns 0, ASB_ENOTFOUND (empty or unknown list) or ASB_ENOMEM.
 */
int wp_warm_queue_pop(wp_warm_queue *q, const char *pool_key, wp_warm_item *out);

/** Number of items queued for `pool_key`. */
size_t wp_warm_queue_len(wp_warm_queue *q, const char *pool_key);

/**
 * The NodeSpread + FIFO picker (docs/api.md#claim-adoption) over `items[0..n-1]` in queue
 * order (oldest first): a single item is taken as is; when some items
 * have a node name, only those are considered: the nodes with the most
 * queued items win and, among their items, the earliest queued one;
 * without any node name the oldest item. Returns its index, or (size_t)-1
 * when n == 0. Pure.
 */
size_t wp_warm_pick(const wp_warm_item *items, size_t n);

/* ---- feeder (Sandbox informer events, docs/api.md#warm-queue) ---- */

/**
 * The name of the SandboxWarmPool that owns `sbx`: its controller
 * reference when that is a SandboxWarmPool of extensions.agents.x-k8s.io
 * (any version), else any SandboxWarmPool ownerReference; NULL when none.
 * Borrowed from `sbx`.
 */
const char *wp_warm_pool_owner(const cJSON *sbx);

/**
 * True when `sbx` may be adopted by a claim (docs/api.md#warm-queue): not being deleted,
 * carries the warm-pool-sandbox and sandbox-template-ref-hash labels, and
 * is controlled by a SandboxWarmPool. NULL: false.
 */
bool wp_warm_adoptable(const cJSON *sbx);

/**
 * The feeder's decision on a create (`old_obj` NULL) or update: true when
 * `new_obj` is adoptable and it just became so, or its pool owner name or
 * its status.nodeName changed. Pure.
 */
bool wp_warm_should_push(const cJSON *old_obj, const cJSON *new_obj);

/**
 * Writes the pool key "<namespace>/<pool>" into a new string (caller
 * frees), or NULL on allocation failure.
 */
char *wp_warm_pool_key(const char *ns, const char *pool);

#endif
