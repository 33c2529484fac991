/*
 * controller_metrics.h - controller-runtime's reconcile metrics
 * (sigs.k8s.io/controller-runtime/pkg/internal/controller/metrics):
 * controller_runtime_reconcile_total{controller,result},
 * controller_runtime_reconcile_errors_total{controller},
 * controller_runtime_reconcile_time_seconds{controller},
 * controller_runtime_active_workers{controller},
 * controller_runtime_max_concurrent_reconciles{controller}, and at 0:
 * controller_runtime_terminal_reconcile_errors_total{controller},
 * controller_runtime_reconcile_panics_total{controller},
 * controller_runtime_reconcile_timeouts_total{controller}.
 *
 * Why those three stay 0: controller-runtime counts a Go panic that it
 * recovers (a C reconcile that crashes takes the process with it, so there
 * is nothing left to count), a reconcile cut by its ReconciliationTimeout
 * (ours have no deadline; upstream's controller sets none either), and an
 * error wrapped in reconcile.TerminalError, which is not requeued (every
 * error of ours is requeued with backoff).
 *
 * Internal to libk8s. A NULL handle means metrics are off: every function
 * then does nothing. Recording is lock-free (the series are looked up once).
 */
#ifndef K8S_CONTROLLER_METRICS_H
#define K8S_CONTROLLER_METRICS_H

#include "asb/metrics.h"

typedef struct k8s__ctrl_metrics k8s__ctrl_metrics;

/** How a reconcile ended: the `result` label. */
typedef enum {
	K8S__RECONCILE_SUCCESS = 0,
	K8S__RECONCILE_ERROR,
	K8S__RECONCILE_REQUEUE,
	K8S__RECONCILE_REQUEUE_AFTER,
	K8S__RECONCILE_RESULTS
} k8s__reconcile_result;

/**
 * Registers (or finds) the families in `reg`, sets max_concurrent_reconciles
 * to `workers` and active_workers to 0, and creates every result series at
 * 0 as controller-runtime does at start. `reg` NULL: *out = NULL and 0.
 * Returns 0 or the registry's error (recorded).
 */
int k8s__ctrl_metrics_new(k8s__ctrl_metrics **out, asb_metrics_registry *reg,
                          const char *controller, int workers);

/** Frees; NULL accepted. */
void k8s__ctrl_metrics_free(k8s__ctrl_metrics *m);

/** A worker starts a reconcile: active_workers +1. Returns the start
 *  time to hand to k8s__ctrl_metrics_end() (monotonic seconds). */
double k8s__ctrl_metrics_begin(k8s__ctrl_metrics *m);

/** The reconcile begun at `start` ended: active -1, total{result} +1,
 *  errors +1 on error, reconcile_time observed. */
void k8s__ctrl_metrics_end(k8s__ctrl_metrics *m, k8s__reconcile_result result,
                           double start);

#endif
