/*
 * metric_family.h - registers one of client-go's or controller-runtime's
 * metric families in a libasb registry: the options every libk8s metrics
 * file (rest_metrics.c, workqueue_metrics.c, controller_metrics.c) fills
 * the same way. Private to libk8s.
 */
#ifndef K8S_METRIC_FAMILY_H
#define K8S_METRIC_FAMILY_H

#include <stddef.h>
#include "asb/metrics.h"

/*
 * Registers (or finds) family `name` of `type` with `help` and the
 * NULL-terminated `labels`; `buckets` (`nbuckets` bounds) are used by a
 * histogram only. Returns 0 or the registry's error (recorded).
 */
static inline int k8s__metric_family(asb_metric **out, asb_metrics_registry *reg,
                                     asb_metric_type type, const char *name,
                                     const char *help, const char *const *labels,
                                     const double *buckets, size_t nbuckets)
{
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = type;
	o.name = name;
	o.help = help;
	o.label_names = labels;
	if (type == ASB_METRIC_HISTOGRAM) {
		o.buckets = buckets;
		o.nbuckets = nbuckets;
	}
	return asb_metrics_register(out, reg, &o);
}

#endif
