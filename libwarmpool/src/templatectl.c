/*
 * templatectl.c - the SandboxTemplate controller (docs/api.md#sandboxtemplate-controller): labels
 * each template with its sandbox-template-ref-hash and keeps the
 * per-template NetworkPolicy "<template>-network-policy".
 *
 * The decision (templatectl_plan.h) is pure; wp_template_controller_*
 * reads the template and the policy from the informer caches, decides, and
 * applies it with one write at most per object.
 */
#include <stdlib.h>
#include <string.h>
#include "warmpool/templatectl.h"
#include "sandbox/namehash.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "jsonutil.h"
#include "ctlbase.h"
#include "templatectl_plan.h"

/* ---- the pure part ---- */

char *wp_template_np_name(const char *template_name)
{
	return ju_printf("%s-network-policy", ju_nz(template_name));
}

static cJSON *match_labels(const char *key, const char *value)
{
	cJSON *sel = cJSON_CreateObject();
	cJSON *ml = sel ? cJSON_AddObjectToObject(sel, "matchLabels") : NULL;
	if (!ml || !cJSON_AddStringToObject(ml, key, value)) {
		cJSON_Delete(sel);
		return NULL;
	}
	return sel;
}

static cJSON *ip_block(const char *cidr, const char *const *except, int n)
{
	cJSON *peer = cJSON_CreateObject();
	cJSON *b = peer ? cJSON_AddObjectToObject(peer, "ipBlock") : NULL;
	if (!b || !cJSON_AddStringToObject(b, "cidr", cidr) ||
	    !ju_set(b, "except", cJSON_CreateStringArray(except, n))) {
		cJSON_Delete(peer);
		return NULL;
	}
	return peer;
}

/* Ingress from the sandbox router only; egress to the public internet,
 * private, link-local and ULA ranges excepted (docs/api.md#sandboxtemplate-controller step 4). */
static bool add_secure_default_rules(cJSON *spec)
{
	cJSON *ing = cJSON_AddArrayToObject(spec, "ingress");
	cJSON *rule = cJSON_CreateObject();
	if (!ing || !rule || !cJSON_AddItemToArray(ing, rule)) {
		cJSON_Delete(rule);
		return false;
	}
	cJSON *from = cJSON_AddArrayToObject(rule, "from");
	cJSON *peer = cJSON_CreateObject();
	if (!from || !peer || !cJSON_AddItemToArray(from, peer)) {
		cJSON_Delete(peer);
		return false;
	}
	if (!ju_set(peer, "podSelector", match_labels("app", WP_ROUTER_APP)) ||
	    !ju_set(peer, "namespaceSelector",
	            match_labels("kubernetes.io/metadata.name", WP_ROUTER_NAMESPACE)))
		return false;

	static const char *const v4[] = { "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16" };
	static const char *const v6[] = { "fc00::/7", "fe80::/10" };
	cJSON *eg = cJSON_AddArrayToObject(spec, "egress");
	rule = cJSON_CreateObject();
	if (!eg || !rule || !cJSON_AddItemToArray(eg, rule)) {
		cJSON_Delete(rule);
		return false;
	}
	cJSON *to = cJSON_AddArrayToObject(rule, "to");
	if (!to)
		return false;
	cJSON *p4 = ip_block("0.0.0.0/0", v4, 4);
	if (!p4 || !cJSON_AddItemToArray(to, p4)) {
		cJSON_Delete(p4);
		return false;
	}
	cJSON *p6 = ip_block("::/0", v6, 2);
	if (!p6 || !cJSON_AddItemToArray(to, p6)) {
		cJSON_Delete(p6);
		return false;
	}
	return true;
}

cJSON *wp_template_np_spec(const cJSON *tpl)
{
	char hash[SBX_NAME_HASH_SIZE];
	sbx_name_hash(k8s_obj_name(tpl), hash);
	const cJSON *custom = k8s_obj_at(tpl, "spec.networkPolicy");
	static const char *const types[] = { "Ingress", "Egress" };

	/* NetworkPolicySpec member order: podSelector, ingress, egress, policyTypes. */
	cJSON *spec = cJSON_CreateObject();
	if (!spec || !ju_set(spec, "podSelector", match_labels(SBX_LABEL_TEMPLATE_REF_HASH, hash)))
		goto oom;
	if (cJSON_IsObject(custom)) {
		static const char *const dirs[] = { "ingress", "egress" };
		for (int i = 0; i < 2; i++) {
			const cJSON *rules = cJSON_GetObjectItemCaseSensitive(custom, dirs[i]);
			if (rules && !cJSON_IsNull(rules) &&
			    !ju_set(spec, dirs[i], cJSON_Duplicate(rules, true)))
				goto oom;
		}
	} else if (!add_secure_default_rules(spec)) {
		goto oom;
	}
	if (!ju_set(spec, "policyTypes", cJSON_CreateStringArray(types, 2)))
		goto oom;
	return spec;
oom:
	cJSON_Delete(spec);
	return NULL;
}

cJSON *wp_template_label_patch(const cJSON *tpl, bool *oom)
{
	char hash[SBX_NAME_HASH_SIZE];
	*oom = false;
	sbx_name_hash(k8s_obj_name(tpl), hash);
	if (ju_str_eq(k8s_obj_label(tpl, SBX_LABEL_TEMPLATE_REF_HASH), hash))
		return NULL;
	cJSON *patch = cJSON_CreateObject();
	cJSON *md = patch ? cJSON_AddObjectToObject(patch, "metadata") : NULL;
	cJSON *labels = md ? cJSON_AddObjectToObject(md, "labels") : NULL;
	if (!labels || !cJSON_AddStringToObject(labels, SBX_LABEL_TEMPLATE_REF_HASH, hash)) {
		cJSON_Delete(patch);
		*oom = true;
		return NULL;
	}
	return patch;
}

/* A controller ownerReference to the template (docs/api.md#sandboxtemplate-controller: GC removes the policy
 * with its template). */
static cJSON *template_owner_refs(const cJSON *tpl)
{
	cJSON *refs = cJSON_CreateArray();
	cJSON *ref = cJSON_CreateObject();
	if (!refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
		cJSON_Delete(ref);
		cJSON_Delete(refs);
		return NULL;
	}
	if (!ju_set_str(ref, "apiVersion", WP_API_VERSION) ||
	    !ju_set_str(ref, "kind", SBX_KIND_TEMPLATE) ||
	    !ju_set_str(ref, "name", ju_nz(k8s_obj_name(tpl))) ||
	    !ju_set_str(ref, "uid", ju_nz(k8s_obj_uid(tpl))) ||
	    !ju_set(ref, "controller", cJSON_CreateTrue()) ||
	    !ju_set(ref, "blockOwnerDeletion", cJSON_CreateTrue())) {
		cJSON_Delete(refs);
		return NULL;
	}
	return refs;
}

/* A new NetworkPolicy `name` for `tpl` holding `spec` (taken in all cases). */
static cJSON *new_np(const cJSON *tpl, const char *name, cJSON *spec)
{
	cJSON *np = cJSON_CreateObject();
	if (!np) {
		cJSON_Delete(spec);
		return NULL;
	}
	cJSON *md = NULL;
	bool ok = ju_set_str(np, "apiVersion", "networking.k8s.io/v1") &&
	          ju_set_str(np, "kind", "NetworkPolicy") &&
	          (md = cJSON_AddObjectToObject(np, "metadata")) != NULL &&
	          ju_set_str(md, "name", name) &&
	          ju_set_str(md, "namespace", ju_nz(k8s_obj_namespace(tpl))) &&
	          ju_set(md, "ownerReferences", template_owner_refs(tpl));
	/* ju_set() takes `spec` even when it fails. */
	ok = ok ? ju_set(np, "spec", spec) : (cJSON_Delete(spec), false);
	if (!ok) {
		cJSON_Delete(np);
		return NULL;
	}
	return np;
}

/* The API server defaults ports[].protocol to TCP; compare against the
 * defaulted form so a custom rule without protocol is not rewritten on
 * every pass. Returns false when out of memory. */
static bool np_spec_equal(const cJSON *have, const cJSON *want)
{
	cJSON *w = cJSON_Duplicate(want, true);
	if (!w)
		return false;
	static const char *const dirs[] = { "ingress", "egress" };
	for (int i = 0; i < 2; i++) {
		cJSON *rule;
		cJSON_ArrayForEach(rule, cJSON_GetObjectItemCaseSensitive(w, dirs[i])) {
			cJSON *port;
			cJSON_ArrayForEach(port, cJSON_GetObjectItemCaseSensitive(rule, "ports"))
				if (cJSON_IsObject(port) && ju_empty(ju_str(port, "protocol")))
					ju_set_str(port, "protocol", "TCP");
		}
	}
	bool eq = k8s_obj_semantic_equal(have, w);
	cJSON_Delete(w);
	return eq;
}

static bool controlled_by(const cJSON *np, const cJSON *tpl)
{
	return k8s_obj_owner_class(np, k8s_obj_uid(tpl)) == K8S_OWNER_THIS;
}

int wp_template_np_decide(const cJSON *tpl, const cJSON *np, wp_np_decision *out)
{
	memset(out, 0, sizeof(*out));
	const char *mgmt = k8s_obj_str(tpl, "spec.networkPolicyManagement");
	if (!ju_empty(mgmt) && strcmp(mgmt, WP_NETWORK_POLICY_UNMANAGED) == 0) {
		if (np && controlled_by(np, tpl))
			out->verb = WP_NP_DELETE;
		return 0;
	}
	char *name = wp_template_np_name(k8s_obj_name(tpl));
	cJSON *spec = name ? wp_template_np_spec(tpl) : NULL;
	if (!spec)
		goto oom;
	if (!np) {
		out->body = new_np(tpl, name, spec);
		if (!out->body)
			goto oom_spec_taken;
		out->verb = WP_NP_CREATE;
	} else if (!controlled_by(np, tpl)) {
		cJSON_Delete(spec);
		out->error = ju_printf("refusing to update NetworkPolicy \"%s\" as it is not controlled by SandboxTemplate \"%s\"",
		                       name, ju_nz(k8s_obj_name(tpl)));
		if (!out->error)
			goto oom_spec_taken;
		out->verb = WP_NP_REFUSE;
	} else if (np_spec_equal(cJSON_GetObjectItemCaseSensitive(np, "spec"), spec)) {
		cJSON_Delete(spec);
	} else {
		out->body = cJSON_Duplicate(np, true);
		if (!out->body || !ju_set(out->body, "spec", spec)) {
			if (!out->body)
				cJSON_Delete(spec);
			goto oom_spec_taken;
		}
		out->verb = WP_NP_UPDATE;
	}
	free(name);
	return 0;
oom:
	cJSON_Delete(spec);
oom_spec_taken:
	free(name);
	wp_np_decision_clear(out);
	return asb_error_set(ASB_ENOMEM, 0, NULL, "SandboxTemplate \"%s\": out of memory",
	                     ju_nz(k8s_obj_name(tpl)));
}

void wp_np_decision_clear(wp_np_decision *d)
{
	if (!d)
		return;
	cJSON_Delete(d->body);
	free(d->error);
	memset(d, 0, sizeof(*d));
}

/* ---- the controller ---- */

struct wp_template_controller {
	k8s_client *client;
	k8s_informer *templates;
	k8s_informer *nps;
	asb_logger *logger;
	k8s_controller *ctl;
};

static int reconcile_fn(const char *key, k8s_reconcile_result *res, void *userdata)
{
	return wp_template_controller_reconcile(userdata, key, res);
}

/* A NetworkPolicy event wakes its controlling SandboxTemplate (any version
 * of the group: old refs may still say v1alpha1, docs/api.md#ownership). */
static void enqueue_np_owner(wp_template_controller *c, const cJSON *np)
{
	const cJSON *ref = k8s_obj_controller_ref(np);
	char group[128];
	if (!ref || !ju_str_eq(ju_str(ref, "kind"), SBX_KIND_TEMPLATE) ||
	    !ju_str_eq(ju_api_group(ju_str(ref, "apiVersion"), group, sizeof(group)),
	               SBX_EXTENSIONS_GROUP))
		return;
	wp_ctl_enqueue(c->ctl, k8s_obj_namespace(np), ju_str(ref, "name"));
}

static void on_np_add(const cJSON *obj, void *ud) { enqueue_np_owner(ud, obj); }
static void on_np_update(const cJSON *o, const cJSON *n, void *ud)
{
	enqueue_np_owner(ud, o);
	enqueue_np_owner(ud, n);
}
static void on_np_delete(const cJSON *obj, void *ud) { enqueue_np_owner(ud, obj); }

int wp_template_controller_new(wp_template_controller **out,
                               const wp_template_controller_options *opts)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "template controller: NULL out");
	*out = NULL;
	if (!opts || opts->version != WP_TEMPLATE_CONTROLLER_OPTIONS_VERSION || !opts->client ||
	    !opts->templates || !opts->networkpolicies)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "template controller: bad options (version, client, templates, networkpolicies)");
	wp_template_controller *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "template controller: out of memory");
	c->client = opts->client;
	c->templates = opts->templates;
	c->nps = opts->networkpolicies;
	c->logger = opts->logger;
	int rc = wp_ctl_new(&c->ctl, "sandboxtemplate", opts->workers > 0 ? opts->workers : 1,
	                    reconcile_fn, c, opts->logger, opts->metrics);
	if (rc) {
		free(c);
		return rc;
	}
	const wp_ctl_handlers sets[] = {
		wp_ctl_own_key_handlers(c->templates, c->ctl),
		{ c->nps, on_np_add, on_np_update, on_np_delete, NULL },
	};
	if ((rc = wp_ctl_add_handlers(sets, sizeof(sets) / sizeof(sets[0]), c))) {
		/* The templates handlers may be in; the caller must not start
		 * the informers after a failed _new() (documented contract). */
		k8s_controller_free(c->ctl);
		free(c);
		return asb_error_set(rc, 0, NULL, "template controller: informer already started");
	}
	*out = c;
	return 0;
}

int wp_template_controller_start(wp_template_controller *c)
{
	return wp_ctl_start(c ? c->ctl : NULL, "template controller");
}

void wp_template_controller_stop(wp_template_controller *c)
{
	if (c)
		k8s_controller_stop(c->ctl);
}

void wp_template_controller_free(wp_template_controller *c)
{
	if (!c)
		return;
	k8s_controller_free(c->ctl);
	free(c);
}

static int apply_np(wp_template_controller *c, const char *ns, const char *key,
                    const char *np_name, const wp_np_decision *d)
{
	int rc = 0;
	switch (d->verb) {
	case WP_NP_NONE:
		return 0;
	case WP_NP_CREATE:
		rc = k8s_client_create(c->client, &wp_resource_networkpolicies, ns, d->body, NULL, NULL);
		break;
	case WP_NP_UPDATE:
		rc = k8s_client_update(c->client, &wp_resource_networkpolicies, ns, d->body, NULL, NULL);
		break;
	case WP_NP_DELETE:
		rc = k8s_client_delete(c->client, &wp_resource_networkpolicies, ns, np_name, NULL, NULL);
		if (rc == ASB_ENOTFOUND)
			rc = 0;
		break;
	case WP_NP_REFUSE:
		return asb_error_set(ASB_ERROR, 0, NULL, "%s", d->error);
	}
	static const char *const verbs[] = { "", "create", "update", "delete", "" };
	if (rc)
		return asb_error_set(rc, asb_error_last()->http_status, asb_error_last()->reason,
		                     "SandboxTemplate \"%s\": failed to %s NetworkPolicy \"%s\": %s",
		                     key, verbs[d->verb], np_name, asb_error_last()->message);
	asb_log(c->logger, ASB_LOG_INFO, "network policy written", "template", key,
	        "networkpolicy", np_name, "verb", verbs[d->verb], NULL);
	return 0;
}

int wp_template_controller_reconcile(wp_template_controller *c, const char *key,
                                     k8s_reconcile_result *res)
{
	if (res)
		memset(res, 0, sizeof(*res));
	if (!c || !key)
		return asb_error_set(ASB_EINVAL, 0, NULL, "template reconcile: NULL argument");
	char *ns = NULL, *name = NULL, *np_name = NULL;
	cJSON *tpl = NULL, *np = NULL, *patch = NULL;
	wp_np_decision d = { 0 };
	int rc = k8s_key_split(key, &ns, &name);
	if (rc)
		return rc;
	rc = k8s_informer_get(c->templates, ns, name, &tpl);
	if (rc == ASB_ENOTFOUND) {   /* deleted: the policy goes by GC (docs/api.md#sandboxtemplate-controller step 5) */
		rc = 0;
		goto done;
	}
	if (rc || k8s_obj_is_deleting(tpl))
		goto done;

	bool oom;
	patch = wp_template_label_patch(tpl, &oom);
	if (oom) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "SandboxTemplate \"%s\": out of memory", key);
		goto done;
	}
	if (patch) {
		rc = k8s_client_patch(c->client, &wp_resource_templates, ns, name, NULL,
		                      K8S_PATCH_MERGE, patch, NULL, NULL);
		if (rc == ASB_ENOTFOUND) {
			rc = 0;
			goto done;
		}
		if (rc) {
			rc = asb_error_set(rc, 0, NULL, "SandboxTemplate \"%s\": failed to label: %s",
			                   key, asb_error_last()->message);
			goto done;
		}
	}

	np_name = wp_template_np_name(name);
	if (!np_name) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "SandboxTemplate \"%s\": out of memory", key);
		goto done;
	}
	rc = k8s_informer_get(c->nps, ns, np_name, &np);
	if (rc && rc != ASB_ENOTFOUND)
		goto done;
	if ((rc = wp_template_np_decide(tpl, np, &d)) == 0)
		rc = apply_np(c, ns, key, np_name, &d);
	if (rc == ASB_EALREADYEXISTS && d.verb == WP_NP_CREATE) {
		/* The cache has not seen a policy that exists (ours, from a pass
		 * whose watch event is still on its way, or a foreign one):
		 * decide again on the API server's copy rather than fail the pass
		 * and retry the create with backoff. */
		cJSON_Delete(np);
		np = NULL;
		wp_np_decision_clear(&d);
		rc = k8s_client_get(c->client, &wp_resource_networkpolicies, ns, np_name, &np);
		if (rc)
			rc = asb_error_set(rc, 0, NULL, "SandboxTemplate \"%s\": NetworkPolicy \"%s\" exists "
			                   "but cannot be read: %s", key, np_name, asb_error_last()->message);
		else if ((rc = wp_template_np_decide(tpl, np, &d)) == 0)
			rc = apply_np(c, ns, key, np_name, &d);
	}
done:
	wp_np_decision_clear(&d);
	cJSON_Delete(patch);
	cJSON_Delete(np);
	cJSON_Delete(tpl);
	free(np_name);
	free(ns);
	free(name);
	return rc;
}
