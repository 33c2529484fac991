/*
 * idlesync.h - the router's side of idle suspend and resume
 * (docs/router.md#idle-sandboxes): the I/O around activity.h and
 * resume.h, by merge patches of Sandboxes through the cluster client.
 *
 * - Publishing: a thread of its own wakes every `tick_ms` (1 s), collects
 *   the Sandboxes whose activity is due (rt_activity_collect()), checks
 *   each against the Sandbox cache (still there, idle policy applies, the
 *   last-activity annotation another replica may have written since) and
 *   patches the due ones (rt_activity_patch()), `publish_workers` (4) at
 *   once on threads of their own; writes not started within the tick's
 *   budget (2 s) stay due for the next tick, so a slow API server delays
 *   publication without stalling it. A write that failed is tried again
 *   at the next tick; a 404 drops the entry.
 *   sandbox_router_activity_writes_total{result} counts them,
 *   sandbox_router_activity_tracked the table,
 *   sandbox_router_activity_publish_lag_seconds how late each write was
 *   sent after it became due (rt_activity_due_at()).
 * - Resuming: rt_idlesync_resumes() is the single-flight queue whose
 *   threads send rt_resume_patch() (sandbox_router_resumes_total{result}).
 * Only with the Sandbox cache (--cache-enabled): a Sandbox without an
 * idle policy is never tracked nor written.
 *
 * RBAC: `patch` on sandboxes (deploy/router/cluster_role.yaml), and the
 * ValidatingAdmissionPolicy of deploy/router lets the router's
 * ServiceAccount change nothing but what these patches change.
 *
 * Threads: the publisher and the resume threads are this module's; the
 * accessors are thread-safe (the table and queue are).
 */
#ifndef RT_IDLESYNC_H
#define RT_IDLESYNC_H

#include "k8s/client.h"
#include "asb/log.h"
#include "activity.h"
#include "cache.h"
#include "metrics.h"
#include "resume.h"

typedef struct rt_idlesync rt_idlesync;

typedef struct {
	k8s_client *client;          /**< writes; borrowed, outlives the handle */
	rt_cache *cache;             /**< borrowed; synced before the first tick matters */
	rt_metrics *metrics;         /**< borrowed */
	asb_logger *log;             /**< borrowed; may be NULL */
	long tick_ms;                /**< publisher period; 0: 1000 */
	size_t max_entries;          /**< activity table bound; 0: RT_ACTIVITY_MAX_ENTRIES */
	int resume_workers;          /**< resume threads; 0: 2 */
	int publish_workers;         /**< activity writes sent at once; 0: 4 */
	int resume_max_pending;      /**< Sandboxes resuming at once; 0: 1024 */
} rt_idlesync_options;

/**
 * Creates the activity table and the resume queue and starts their
 * threads. Returns 0, or ASB_EINVAL / ASB_ENOMEM / ASB_ERROR (recorded).
 */
int rt_idlesync_new(rt_idlesync **out, const rt_idlesync_options *o);

/** The activity table (owned by `s`; valid until rt_idlesync_free()). */
rt_activity *rt_idlesync_activity(rt_idlesync *s);

/** The resume queue (owned by `s`; valid until rt_idlesync_free()). */
rt_resumeq *rt_idlesync_resumes(rt_idlesync *s);

/**
 * Stops the publisher (activity not yet due is not written: a restart
 * loses at most one publish interval of it, docs/router.md) and the
 * resume threads (the patches running finish), and frees. Call once no
 * loop thread uses the table or queue any more. NULL accepted.
 */
void rt_idlesync_free(rt_idlesync *s);

#endif
