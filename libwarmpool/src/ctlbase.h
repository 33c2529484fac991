/*
 * ctlbase.h - the wiring the three libwarmpool controllers (templatectl.c,
 * poolctl.c, claimctl.c) share: their k8s_controller, their informer
 * handler sets, start, and the registration of a table of metrics. Each
 * controller keeps its own handlers, indexes and reconcile. Private to
 * libwarmpool.
 */
#ifndef WP_CTLBASE_H
#define WP_CTLBASE_H

#include <stddef.h>
#include "k8s/controller.h"
#include "k8s/informer.h"
#include "asb/log.h"
#include "asb/metrics.h"

/*
 * A k8s_controller named `name` with `workers` workers (> 0) running
 * `reconcile` with `ud`, logging to `logger` and registering its
 * controller_runtime_* metrics in `metrics` (either may be NULL).
 * Returns 0 or k8s_controller_new()'s error.
 */
int wp_ctl_new(k8s_controller **out, const char *name, int workers, k8s_reconcile_fn reconcile,
               void *ud, asb_logger *logger, asb_metrics_registry *metrics);

/* One informer's handler set (any callback may be NULL). */
typedef struct {
	k8s_informer *informer;
	k8s_on_add_fn on_add;
	k8s_on_update_fn on_update;
	k8s_on_delete_fn on_delete;
	void *userdata;             /* NULL: the `ud` of wp_ctl_add_handlers() */
} wp_ctl_handlers;

/* Enqueues the "namespace/name" key of `obj` on `ctl` (out of memory: the
 * key is dropped; the object's next event brings it back). */
void wp_ctl_enqueue_key(k8s_controller *ctl, const cJSON *obj);

/* Enqueues "ns/name" on `ctl` (same out-of-memory rule). */
void wp_ctl_enqueue(k8s_controller *ctl, const char *ns, const char *name);

/* The handler set of `inf` that enqueues, on `ctl`, the key of each object
 * added or deleted and of the new object of each update. */
wp_ctl_handlers wp_ctl_own_key_handlers(k8s_informer *inf, k8s_controller *ctl);

/*
 * Adds the `n` handler sets in order, each with its own userdata or else
 * `ud`. Returns 0
 * or the first failure's code (an informer already started), with the sets
 * before it left in: the caller must not start the informers after that.
 */
int wp_ctl_add_handlers(const wp_ctl_handlers *sets, size_t n, void *ud);

/* k8s_controller_start() of `ctl` (NULL when the caller's handle is NULL:
 * ASB_EINVAL "<what>: NULL"). */
int wp_ctl_start(k8s_controller *ctl, const char *what);

/* One metric of a controller's table (asb_metric_options' fields). */
typedef struct {
	asb_metric **out;
	asb_metric_type type;
	const char *name, *help;
	const char *const *labels;
	const double *buckets;
	size_t nbuckets;
} wp_ctl_metric;

/* Registers the `n` metrics in `reg` in order. Returns 0 or the first
 * asb_metrics_register() error. */
int wp_ctl_register_metrics(asb_metrics_registry *reg, const wp_ctl_metric *defs, size_t n);

#endif
