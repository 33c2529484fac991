/*
 * templatectl_plan.h - the pure half of the SandboxTemplate controller
 * (docs/api.md#sandboxtemplate-controller): the label patch of the template and the decision about
 * its NetworkPolicy, computed from the observed template and policy only.
 * templatectl.c applies the result. Private to libwarmpool.
 *
 * All functions are pure and thread-safe; const arguments are not modified.
 * They are hidden in the shared library and this header is not installed,
 * so they are no part of the library's API; the unit tests reach them
 * through libwarmpool_internal.
 */
#ifndef WP_TEMPLATECTL_PLAN_H
#define WP_TEMPLATECTL_PLAN_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include "warmpool/api.h"

/** Namespace and pod labels of the router the secure default lets in (docs/api.md#sandboxtemplate-controller). */
#define WP_ROUTER_NAMESPACE "agent-sandbox-system"
#define WP_ROUTER_APP "sandbox-router"

/** What to do with the template's NetworkPolicy. */
typedef enum {
	WP_NP_NONE = 0,   /**< nothing (equal, or Unmanaged and absent/foreign) */
	WP_NP_CREATE,     /**< create `body` */
	WP_NP_UPDATE,     /**< full Update with `body` (existing object, new spec) */
	WP_NP_DELETE,     /**< delete the policy (Unmanaged and controlled) */
	WP_NP_REFUSE      /**< exists, not controlled by the template: `error` */
} wp_np_verb;

/** The NetworkPolicy decision. Free with wp_np_decision_clear(). */
typedef struct {
	wp_np_verb verb;
	cJSON *body;      /**< CREATE/UPDATE: the object to send; else NULL */
	char *error;      /**< REFUSE: the error text of docs/api.md#sandboxtemplate-controller (byte-exact); else NULL */
} wp_np_decision;

/** "<template>-network-policy", a new string (NULL when out of memory). */
char *wp_template_np_name(const char *template_name);

/**
 * The desired NetworkPolicy spec of the template `tpl` (whole object,
 * Managed mode): podSelector on the template-ref-hash label, policyTypes
 * [Ingress, Egress], and either the secure default rules or the template's
 * spec.networkPolicy ingress/egress verbatim (absent members stay absent,
 * which denies that direction). A new object, NULL when out of memory.
 */
cJSON *wp_template_np_spec(const cJSON *tpl);

/**
 * The merge patch that sets the template's sandbox-template-ref-hash label
 * (docs/api.md#sandboxtemplate-controller step 1), or NULL when the label is already right. `*oom` is set when
 * NULL is returned for lack of memory.
 */
cJSON *wp_template_label_patch(const cJSON *tpl, bool *oom);

/**
 * Decides about the NetworkPolicy (docs/api.md#sandboxtemplate-controller steps 3-4) from the template `tpl`
 * and the existing policy `np` (NULL when absent). Returns 0 or ASB_ENOMEM
 * (nothing allocated in `out` then).
 */
int wp_template_np_decide(const cJSON *tpl, const cJSON *np, wp_np_decision *out);

/** Frees what `d` holds and zeroes it. */
void wp_np_decision_clear(wp_np_decision *d);

#endif
