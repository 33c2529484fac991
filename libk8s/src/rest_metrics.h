/*
 * rest_metrics.h - the REST client's request metrics, as client-go records
 * them (k8s.io/client-go/tools/metrics, registered by controller-runtime
 * and Kubernetes components):
 *   rest_client_requests_total{code,method,host}   every try, watches too;
 *                                                  code "<error>" when no
 *                                                  HTTP answer came back
 *   rest_client_request_duration_seconds{verb,host} every try but watches
 *                                                  (a watch lasts minutes)
 * `host` is the host:port of the server URL.
 *
 * Internal to libk8s. A NULL handle means metrics are off: every function
 * then does nothing. Thread-safe (the registry's guarantees).
 */
#ifndef K8S_REST_METRICS_H
#define K8S_REST_METRICS_H

#include <stdbool.h>
#include "asb/metrics.h"

typedef struct k8s__rest_metrics k8s__rest_metrics;

/**
 * Registers (or finds) both families in `reg` for requests to `server_url`
 * (e.g. "https://10.0.0.1:6443/prefix"). `reg` NULL: *out = NULL and 0.
 * Returns 0, or the registry's error (recorded).
 */
int k8s__rest_metrics_new(k8s__rest_metrics **out, asb_metrics_registry *reg,
                          const char *server_url);

/** Frees; NULL accepted. */
void k8s__rest_metrics_free(k8s__rest_metrics *m);

/**
 * Records one try: `status` is the HTTP status (0: no answer), `seconds`
 * its duration, `watch` true for a watch stream (counted, not timed).
 */
void k8s__rest_metrics_observe(k8s__rest_metrics *m, const char *method,
                               long status, double seconds, bool watch);

#endif
