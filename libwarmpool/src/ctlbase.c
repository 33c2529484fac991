/*
 * ctlbase.c - the controller wiring of ctlbase.h, shared by the template,
 * pool and claim controllers.
 */
#include "ctlbase.h"

int wp_ctl_new(k8s_controller **out, const char *name, int workers, k8s_reconcile_fn reconcile,
               void *ud, asb_logger *logger, asb_metrics_registry *metrics)
{
	k8s_controller_options co = K8S_CONTROLLER_OPTIONS_INIT;
	co.name = name;
	co.workers = workers;
	co.reconcile = reconcile;
	co.userdata = ud;
	co.logger = logger;
	co.metrics = metrics;
	return k8s_controller_new(out, &co);
}

int wp_ctl_add_handlers(const wp_ctl_handlers *sets, size_t n, void *ud)
{
	for (size_t i = 0; i < n; i++) {
		int rc = k8s_informer_add_handlers(sets[i].informer, sets[i].on_add,
		                                   sets[i].on_update, sets[i].on_delete, ud);
		if (rc)
			return rc;
	}
	return 0;
}

int wp_ctl_start(k8s_controller *ctl, const char *what)
{
	/* k8s_controller_start() refuses a second start itself */
	return ctl ? k8s_controller_start(ctl)
	              : asb_error_set(ASB_EINVAL, 0, NULL, "%s: NULL", what);
}

int wp_ctl_register_metrics(asb_metrics_registry *reg, const wp_ctl_metric *defs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		asb_metric_options mo = ASB_METRIC_OPTIONS_INIT;
		mo.type = defs[i].type;
		mo.name = defs[i].name;
		mo.help = defs[i].help;
		mo.label_names = defs[i].labels;
		mo.buckets = defs[i].buckets;
		mo.nbuckets = defs[i].nbuckets;
		int rc = asb_metrics_register(defs[i].out, reg, &mo);
		if (rc)
			return rc;
	}
	return 0;
}
