/*
 * ctlbase.c - the controller wiring of ctlbase.h, shared by the template,
 * pool and claim controllers.
 */
#include <stdlib.h>
#include "ctlbase.h"
#include "k8s/object.h"
#include "jsonutil.h"

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

void wp_ctl_enqueue_key(k8s_controller *ctl, const cJSON *obj)
{
	char *key = k8s_obj_key(obj);
	if (key)
		k8s_controller_enqueue(ctl, key);
	free(key);
}

void wp_ctl_enqueue(k8s_controller *ctl, const char *ns, const char *name)
{
	char *key = ju_printf("%s/%s", ju_nz(ns), ju_nz(name));
	if (key)
		k8s_controller_enqueue(ctl, key);
	free(key);
}

static void key_add(const cJSON *obj, void *ctl) { wp_ctl_enqueue_key(ctl, obj); }
static void key_update(const cJSON *o, const cJSON *n, void *ctl) { (void)o; wp_ctl_enqueue_key(ctl, n); }
static void key_delete(const cJSON *obj, void *ctl) { wp_ctl_enqueue_key(ctl, obj); }

wp_ctl_handlers wp_ctl_own_key_handlers(k8s_informer *inf, k8s_controller *ctl)
{
	return (wp_ctl_handlers){ inf, key_add, key_update, key_delete, ctl };
}

int wp_ctl_add_handlers(const wp_ctl_handlers *sets, size_t n, void *ud)
{
	for (size_t i = 0; i < n; i++) {
		int rc = k8s_informer_add_handlers(sets[i].informer, sets[i].on_add,
		                                   sets[i].on_update, sets[i].on_delete,
		                                   sets[i].userdata ? sets[i].userdata : ud);
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
