/*
 * controller_metrics.c - controller-runtime's reconcile metrics (see
 * controller_metrics.h), with its names, help texts and buckets.
 */
#include <stdlib.h>
#include <time.h>
#include "controller_metrics.h"
#include "metric_family.h"

struct k8s__ctrl_metrics {
	asb_metric_series *total[K8S__RECONCILE_RESULTS];
	asb_metric_series *errors, *time, *active, *max_concurrent;
};

static const char *const result_names[K8S__RECONCILE_RESULTS] = {
	"success", "error", "requeue", "requeue_after",
};

/* controller-runtime's reconcile_time_seconds buckets */
static const double time_buckets[] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
	0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5,
	6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
};

static int series(asb_metric_series **out, asb_metrics_registry *reg, asb_metric_type type,
                  const char *name, const char *help, const char *controller)
{
	static const char *const labels[] = { "controller", NULL };
	asb_metric *m;
	int rc = k8s__metric_family(&m, reg, type, name, help, labels, time_buckets,
	                            sizeof(time_buckets) / sizeof(time_buckets[0]));
	return rc < 0 ? rc : asb_metric_series_get(out, m, &controller, 1);
}

int k8s__ctrl_metrics_new(k8s__ctrl_metrics **out, asb_metrics_registry *reg,
                          const char *controller, int workers)
{
	*out = NULL;
	if (!reg)
		return 0;
	k8s__ctrl_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "controller metrics: out of memory");
	static const char *const labels[] = { "controller", "result", NULL };
	asb_metric *total;
	int rc = k8s__metric_family(&total, reg, ASB_METRIC_COUNTER,
	                            "controller_runtime_reconcile_total",
	                            "Total number of reconciliations per controller",
	                            labels, NULL, 0);
	for (int i = 0; rc == 0 && i < K8S__RECONCILE_RESULTS; i++) {
		const char *v[] = { controller, result_names[i] };
		rc = asb_metric_series_get(&m->total[i], total, v, 2);
	}
	if (rc == 0)
		rc = series(&m->errors, reg, ASB_METRIC_COUNTER, "controller_runtime_reconcile_errors_total",
		            "Total number of reconciliation errors per controller", controller);
	/* Counted by controller-runtime and always 0 here (see the header): a
	 * reconcile cannot panic and be recovered in C, has no deadline, and
	 * every error is requeued. Exported at 0 so that queries and alerts
	 * written for upstream find them. */
	asb_metric_series *zero;
	if (rc == 0)
		rc = series(&zero, reg, ASB_METRIC_COUNTER, "controller_runtime_terminal_reconcile_errors_total",
		            "Total number of terminal reconciliation errors per controller", controller);
	if (rc == 0)
		rc = series(&zero, reg, ASB_METRIC_COUNTER, "controller_runtime_reconcile_panics_total",
		            "Total number of reconciliation panics per controller", controller);
	if (rc == 0)
		rc = series(&zero, reg, ASB_METRIC_COUNTER, "controller_runtime_reconcile_timeouts_total",
		            "Total number of reconciliation timeouts per controller", controller);
	if (rc == 0)
		rc = series(&m->time, reg, ASB_METRIC_HISTOGRAM, "controller_runtime_reconcile_time_seconds",
		            "Length of time per reconciliation per controller", controller);
	if (rc == 0)
		rc = series(&m->active, reg, ASB_METRIC_GAUGE, "controller_runtime_active_workers",
		            "Number of currently used workers per controller", controller);
	if (rc == 0)
		rc = series(&m->max_concurrent, reg, ASB_METRIC_GAUGE,
		            "controller_runtime_max_concurrent_reconciles",
		            "Maximum number of concurrent reconciles per controller", controller);
	if (rc < 0) {
		free(m);
		return rc;
	}
	asb_metric_series_set(m->max_concurrent, workers);
	asb_metric_series_set(m->active, 0);
	*out = m;
	return 0;
}

void k8s__ctrl_metrics_free(k8s__ctrl_metrics *m)
{
	free(m);
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double k8s__ctrl_metrics_begin(k8s__ctrl_metrics *m)
{
	if (!m)
		return 0;
	asb_metric_series_add(m->active, 1);
	return now_seconds();
}

void k8s__ctrl_metrics_end(k8s__ctrl_metrics *m, k8s__reconcile_result result, double start)
{
	if (!m)
		return;
	double seconds = now_seconds() - start;
	asb_metric_series_add(m->active, -1);
	asb_metric_series_add(m->total[result], 1);
	if (result == K8S__RECONCILE_ERROR)
		asb_metric_series_add(m->errors, 1);
	asb_metric_series_observe(m->time, seconds);
}
