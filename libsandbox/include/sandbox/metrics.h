/*
 * metrics.h - the `agent_sandboxes` gauge of docs/api.md#metrics: how many
 * Sandboxes exist per namespace, readiness, expiry, launch type, template,
 * owner kind and creator, computed at scrape time from the Sandbox cache.
 *
 * Split as the rest of libsandbox: the label values of one Sandbox and the
 * counting of a list are pure functions (unit-tested on JSON), and
 * sbx_sandboxes_collect() is the small piece of glue that reads an
 * informer and feeds an asb_metrics registry collector.
 *
 * Wiring (the controller executable does this):
 *   asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
 *   o.type = ASB_METRIC_GAUGE;
 *   o.name = SBX_METRIC_SANDBOXES;
 *   o.help = SBX_METRIC_SANDBOXES_HELP;
 *   o.label_names = sbx_sandboxes_metric_labels;
 *   asb_metrics_register(&m, registry, &o);
 *   asb_metric_add_collector(m, sbx_sandboxes_collect, sandbox_informer);
 */
#ifndef SANDBOX_METRICS_H
#define SANDBOX_METRICS_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "asb/metrics.h"
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Name of the gauge (docs/api.md#metrics). */
#define SBX_METRIC_SANDBOXES "agent_sandboxes"

/** Its `# HELP` text. */
#define SBX_METRIC_SANDBOXES_HELP "Number of Sandboxes by namespace, Ready condition, " \
	"expiry, launch type, template, owner kind and creator."

/** Number of labels of the gauge. */
#define SBX_SANDBOXES_METRIC_NLABELS 7

/**
 * The label names of the gauge, in the order of the values computed by
 * sbx_sandboxes_metric_values(), NULL-terminated (usable as
 * asb_metric_options.label_names): `namespace`, `ready_condition`,
 * `expired`, `launch_type`, `sandbox_template`, `owned_by`, `created_by`.
 */
SBX_EXTERN extern const char *const sbx_sandboxes_metric_labels[SBX_SANDBOXES_METRIC_NLABELS + 1];

/**
 * Normalises a value of the label agents.x-k8s.io/created-by
 * (docs/api.md#labels, #metrics): `go-client`, `python-client` and `controller` are kept, any
 * other value, empty or NULL gives `unknown`. Returns a static string.
 * Pure; thread-safe.
 */
SBX_EXTERN const char *sbx_created_by_normalize(const char *value);

/**
 * Writes the seven label values of `sandbox` into `values` (in the order
 * of sbx_sandboxes_metric_labels), docs/api.md#metrics:
 *  - namespace: metadata.namespace ("" when absent);
 *  - ready_condition: `true` when the Ready condition's status is True,
 *    else `false` (no Ready condition: `false`);
 *  - expired: `true` iff the Ready condition's reason is SandboxExpired;
 *  - launch_type: `warm` iff the label agents.x-k8s.io/launch-type is
 *    `warm`, else `cold`;
 *  - sandbox_template: the annotation agents.x-k8s.io/sandbox-template-ref
 *    when non-empty, else `unknown`;
 *  - owned_by: `SandboxClaim` or `SandboxWarmPool` when the controller
 *    ownerReference has that kind and an apiVersion in the group
 *    extensions.agents.x-k8s.io (any version), else `None`;
 *  - created_by: sbx_created_by_normalize() of the label
 *    agents.x-k8s.io/created-by.
 * The strings are borrowed from `sandbox` or static: they live as long as
 * `sandbox`. Pure; thread-safe.
 */
SBX_EXTERN void sbx_sandboxes_metric_values(const cJSON *sandbox,
                                            const char *values[SBX_SANDBOXES_METRIC_NLABELS]);

/**
 * Receives one tuple of label values (SBX_SANDBOXES_METRIC_NLABELS
 * strings, borrowed for the call) and the number of Sandboxes that have
 * it. A non-zero return stops the counting and is returned by
 * sbx_sandboxes_count().
 */
typedef int (*sbx_sandboxes_count_fn)(const char *const *values, size_t n,
                                      double count, void *userdata);

/**
 * Counts the Sandboxes of the JSON array `sandboxes` per tuple of label
 * values (sbx_sandboxes_metric_values()) and calls `fn` once per distinct
 * tuple, in ascending order of the values (compared label by label).
 * Nothing is called for an empty or NULL array.
 *
 * @return 0, the first non-zero return of `fn`, or ASB_ENOMEM. Pure
 *         (apart from `fn`); thread-safe.
 */
SBX_EXTERN int sbx_sandboxes_count(const cJSON *sandboxes, sbx_sandboxes_count_fn fn,
                                   void *userdata);

/**
 * A asb_metric_collect_fn for the `agent_sandboxes` gauge: lists the
 * Sandboxes of the informer `userdata` (a k8s_informer *, borrowed; it
 * must outlive the collector) and emits one sample per tuple with
 * sbx_sandboxes_count(). Emits nothing if the list fails. Runs on the
 * scraping thread; thread-safe.
 */
SBX_EXTERN void sbx_sandboxes_collect(asb_metrics_emitter *e, void *userdata);

#ifdef __cplusplus
}
#endif
#endif
