/*
 * plan_service.c - the Service step (docs/api.md#service-management) and the Service part
 * of expiry teardown (docs/api.md#sandbox-expiry).
 *
 * The Service is headless, named like the Sandbox, selects the Pod by the
 * name-hash label, and exposes the ports of the pod template's containers
 * and native sidecars. `spec.service` true: ensure it (create, adopt,
 * repair drift); false: delete it when owned; unset: keep an owned one
 * (label and selector repaired, ports left alone), never create.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "asb/array.h"
#include "plan.h"
#include "k8s/object.h"

/* One distinct (port, protocol) of the desired Service. */
typedef struct {
	int port;
	const char *protocol;   /* borrowed from the template, or "TCP" */
	const char *name;       /* borrowed, or NULL until named */
	char *generated;        /* owned when the name was generated */
} port_key;

typedef struct {
	port_key *items;
	size_t len, cap;
} port_keys;

static port_key *find_key(port_keys *ks, int port, const char *protocol)
{
	for (size_t i = 0; i < ks->len; i++)
		if (ks->items[i].port == port &&
		    strcmp(ks->items[i].protocol, protocol) == 0)
			return &ks->items[i];
	return NULL;
}

static bool name_taken(const port_keys *ks, const char *name)
{
	for (size_t i = 0; i < ks->len; i++)
		if (ks->items[i].name && strcmp(ks->items[i].name, name) == 0)
			return true;
	return false;
}

/* Collects the keys of one container's ports (first pass: explicit names). */
static bool scan_ports(port_keys *ks, const cJSON *container)
{
	const cJSON *cp;
	cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(container, "ports")) {
		const cJSON *num = cJSON_GetObjectItemCaseSensitive(cp, "containerPort");
		int port = cJSON_IsNumber(num) ? num->valueint : 0;
		if (port == 0)
			continue;
		const char *proto = ju_str(cp, "protocol");
		if (ju_empty(proto))
			proto = "TCP";
		port_key *k = find_key(ks, port, proto);
		if (!k) {
			if (ASB_ARRAY_GROW(ks->items, ks->cap, ks->len + 1, 8))
				return false;
			k = &ks->items[ks->len++];
			*k = (port_key){ .port = port, .protocol = proto };
		}
		/* The first explicit name of a key not claimed by another key. */
		const char *name = ju_str(cp, "name");
		if (!k->name && !ju_empty(name) && !name_taken(ks, name))
			k->name = name;
	}
	return true;
}

static int cmp_keys(const void *a, const void *b)
{
	const port_key *x = a, *y = b;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return strcmp(x->protocol, y->protocol);
}

/* Names the unnamed keys `p-<port>-<proto>`, then `-2`, `-3`... if taken. */
static bool name_generated(port_keys *ks)
{
	for (size_t i = 0; i < ks->len; i++) {
		port_key *k = &ks->items[i];
		if (k->name)
			continue;
		char proto[16];
		size_t j = 0;
		for (; k->protocol[j] && j < sizeof(proto) - 1; j++)
			proto[j] = (char)tolower((unsigned char)k->protocol[j]);
		proto[j] = '\0';
		char *name = ju_printf("p-%d-%s", k->port, proto);
		for (int n = 2; name && name_taken(ks, name); n++) {
			free(name);
			name = ju_printf("p-%d-%s-%d", k->port, proto, n);
		}
		if (!name)
			return false;
		k->generated = name;
		k->name = name;
	}
	return true;
}

/*
 * The desired ServicePorts of the pod template (docs/api.md#service-management), or NULL when there
 * are none. Sets *ok to false on allocation failure.
 */
static cJSON *desired_ports(const sbx_plan *p, bool *ok)
{
	const cJSON *spec = plan_pod_spec(p);
	port_keys ks = { 0 };
	cJSON *out = NULL;
	const cJSON *c;
	*ok = true;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers"))
		*ok = *ok && scan_ports(&ks, c);
	/* Native sidecars: init containers with restartPolicy Always. */
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "initContainers"))
		if (ju_str_eq(ju_str(c, "restartPolicy"), "Always"))
			*ok = *ok && scan_ports(&ks, c);
	if (*ok && ks.len) {
		qsort(ks.items, ks.len, sizeof(*ks.items), cmp_keys);
		*ok = name_generated(&ks);
		out = *ok ? cJSON_CreateArray() : NULL;
		*ok = *ok && out;
		for (size_t i = 0; *ok && i < ks.len; i++) {
			cJSON *sp = cJSON_CreateObject();
			*ok = sp && ju_set_str(sp, "name", ks.items[i].name) &&
			      ju_set_str(sp, "protocol", ks.items[i].protocol) &&
			      ju_set(sp, "port", cJSON_CreateNumber(ks.items[i].port)) &&
			      ju_set(sp, "targetPort", cJSON_CreateNumber(ks.items[i].port)) &&
			      cJSON_AddItemToArray(out, sp);
			if (!*ok)
				cJSON_Delete(sp);
		}
	}
	for (size_t i = 0; i < ks.len; i++)
		free(ks.items[i].generated);
	free(ks.items);
	if (!*ok) {
		cJSON_Delete(out);
		out = NULL;
	}
	return out;
}

/* The selector every Service of this Sandbox has: exactly the name hash. */
static cJSON *selector(const sbx_plan *p)
{
	cJSON *sel = cJSON_CreateObject();
	if (sel && !ju_set_str(sel, SBX_LABEL_NAME_HASH, p->hash)) {
		cJSON_Delete(sel);
		return NULL;
	}
	return sel;
}

static cJSON *service_body(sbx_plan *p)
{
	bool ok;
	cJSON *ports = desired_ports(p, &ok);
	cJSON *svc = cJSON_CreateObject();
	cJSON *md = ju_obj(svc, "metadata");
	cJSON *spec = ju_obj(svc, "spec");
	ok = ok && md && spec && ju_set_str(svc, "apiVersion", "v1") &&
	     ju_set_str(svc, "kind", "Service") &&
	     ju_set_str(md, "name", p->name) &&
	     ju_set_str(md, "namespace", p->ns) &&
	     ju_set_str(ju_obj(md, "labels"), SBX_LABEL_NAME_HASH, p->hash) &&
	     ju_set(md, "ownerReferences", ju_controller_refs(p->name, p->uid)) &&
	     ju_set_str(spec, "clusterIP", "None") &&
	     ju_set(spec, "selector", selector(p));
	if (ok && ports) {
		ok = ju_set(spec, "ports", ports);
		ports = NULL;
	}
	cJSON_Delete(ports);
	if (!plan_ok(p, ok)) {
		cJSON_Delete(svc);
		return NULL;
	}
	return svc;
}

/* Port drift: only name, protocol, port and targetPort per index count. */
static bool ports_differ(const cJSON *have, const cJSON *want)
{
	if (cJSON_GetArraySize(have) != cJSON_GetArraySize(want))
		return true;
	const cJSON *h = cJSON_IsArray(have) ? have->child : NULL;
	const cJSON *w = cJSON_IsArray(want) ? want->child : NULL;
	for (; h && w; h = h->next, w = w->next) {
		const cJSON *hp = cJSON_GetObjectItemCaseSensitive(h, "port");
		const cJSON *ht = cJSON_GetObjectItemCaseSensitive(h, "targetPort");
		int port = cJSON_GetObjectItemCaseSensitive(w, "port")->valueint;
		if (!ju_str_eq(ju_str(h, "name"), ju_str(w, "name")) ||
		    !ju_str_eq(ju_str(h, "protocol"), ju_str(w, "protocol")) ||
		    !cJSON_IsNumber(hp) || hp->valueint != port ||
		    !cJSON_IsNumber(ht) || ht->valueint != port)
			return true;
	}
	return false;
}

/* The selector is right only when it is exactly {name-hash: <hash>}. */
static bool selector_ok(const sbx_plan *p, const cJSON *sel)
{
	return cJSON_GetArraySize(sel) == 1 &&
	       ju_str_eq(ju_str(sel, SBX_LABEL_NAME_HASH), p->hash) &&
	       ju_str(sel, SBX_LABEL_NAME_HASH) != NULL;
}

/* Adoption of an unowned Service: a full Update of the edited object. */
static void plan_adopt_service(sbx_plan *p, const cJSON *svc)
{
	const char *ip = k8s_obj_str(svc, "spec.clusterIP");
	if (!plan_adoptable(p, svc)) {
		plan_fail_not_adoptable(p, SBX_STEP_SERVICE, "service", p->name);
		return;
	}
	if (!ju_empty(ip) && strcmp(ip, "None") != 0) {
		plan_fail(p, SBX_STEP_SERVICE, "cannot adopt service \"%s\": "
		          "ClusterIP is \"%s\" (expected \"None\", field is immutable)",
		          p->name, ip);
		return;
	}
	bool ok;
	cJSON *ports = desired_ports(p, &ok);
	cJSON *body = cJSON_Duplicate(svc, true);
	cJSON *md = ju_obj(body, "metadata");
	cJSON *spec = ju_obj(body, "spec");
	ok = ok && md && spec &&
	     ju_set_str(ju_obj(md, "labels"), SBX_LABEL_NAME_HASH, p->hash) &&
	     ju_set(md, "ownerReferences",
	            ju_adopted_owner_refs(svc, p->name, p->uid)) &&
	     ju_set(spec, "selector", selector(p));
	if (ok && ports) {
		ok = ju_set(spec, "ports", ports);
		ports = NULL;
	} else if (ok) {
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "ports");
	}
	cJSON_Delete(ports);
	if (!plan_ok(p, ok)) {
		cJSON_Delete(body);
		return;
	}
	if (plan_add(p, SBX_STEP_SERVICE, SBX_VERB_UPDATE, SBX_OBJ_SERVICE,
	             p->name, body, "failed to update service"))
		p->svc_after = SVC_STATUS_SET;
}

/* Drift repair of an owned Service: one merge patch, or nothing. */
static void plan_repair_service(sbx_plan *p, const cJSON *svc)
{
	cJSON *patch = cJSON_CreateObject();
	bool ok = patch != NULL;
	if (ok && !ju_str_eq(k8s_obj_label(svc, SBX_LABEL_NAME_HASH), p->hash))
		ok = ju_set_str(ju_obj(ju_obj(patch, "metadata"), "labels"),
		                SBX_LABEL_NAME_HASH, p->hash);
	const cJSON *sel = k8s_obj_at(svc, "spec.selector");
	if (ok && !selector_ok(p, sel)) {
		/* A merge patch merges maps: null out the extra keys. */
		cJSON *ps = selector(p);
		const cJSON *kv;
		cJSON_ArrayForEach(kv, sel)
			if (ps && strcmp(kv->string, SBX_LABEL_NAME_HASH) != 0)
				ok = ok && ju_set_null(ps, kv->string);
		if (ok)
			ok = ju_set(ju_obj(patch, "spec"), "selector", ps);
		else
			cJSON_Delete(ps);
	}
	if (ok && p->service_mode == SVC_TRUE) {
		cJSON *want = desired_ports(p, &ok);
		if (ok && ports_differ(k8s_obj_at(svc, "spec.ports"), want)) {
			ok = ju_set(ju_obj(patch, "spec"), "ports",
			            want ? want : cJSON_CreateNull());
			want = NULL;
		}
		cJSON_Delete(want);
	}
	if (!plan_ok(p, ok)) {
		cJSON_Delete(patch);
		return;
	}
	p->svc_after = SVC_STATUS_SET;
	if (!patch->child) {
		cJSON_Delete(patch);
		return;
	}
	plan_add(p, SBX_STEP_SERVICE, SBX_VERB_PATCH, SBX_OBJ_SERVICE, p->name,
	         patch, "failed to patch service");
}

void plan_service(sbx_plan *p)
{
	p->svc_after = SVC_STATUS_KEEP;
	p->svc_clear_on_failure = false;
	/* Skipped when the pod mapping is ambiguous (docs/api.md#sandbox-reconcile step 5). */
	if (p->multiple_pods)
		return;
	if (p->service_error) {
		plan_fail(p, SBX_STEP_SERVICE, "service get failed: %s",
		          p->service_error);
		return;
	}
	const cJSON *svc = p->service;
	if (!svc) {
		if (p->service_mode != SVC_TRUE) {
			p->svc_after = SVC_STATUS_CLEAR;
			return;
		}
		cJSON *body = service_body(p);
		if (body && plan_add(p, SBX_STEP_SERVICE, SBX_VERB_CREATE,
		                     SBX_OBJ_SERVICE, p->name, body,
		                     "failed to create service"))
			p->svc_after = SVC_STATUS_SET;
		return;
	}
	k8s_owner_class owner = k8s_obj_owner_class(svc, p->uid);
	if (p->service_mode == SVC_FALSE) {
		if (owner == K8S_OWNER_THIS) {
			plan_action *a = plan_add(p, SBX_STEP_SERVICE, SBX_VERB_DELETE,
			                          SBX_OBJ_SERVICE, p->name, NULL,
			                          "failed to delete service");
			if (a)
				a->pub.not_found_ok = true;
		}
		p->svc_after = SVC_STATUS_CLEAR;
		p->svc_clear_on_failure = true;
		return;
	}
	switch (owner) {
	case K8S_OWNER_OTHER:
		plan_fail_owned_by_other(p, SBX_STEP_SERVICE, "service", svc);
		break;
	case K8S_OWNER_NONE:
		if (p->service_mode == SVC_UNSET)
			p->svc_after = SVC_STATUS_CLEAR;   /* ignored, not counted */
		else
			plan_adopt_service(p, svc);
		break;
	case K8S_OWNER_THIS:
		plan_repair_service(p, svc);
		break;
	}
}

void plan_service_teardown(sbx_plan *p)
{
	if (p->service_error) {
		plan_fail(p, SBX_STEP_SERVICE, "failed to get service: %s",
		          p->service_error);
		return;
	}
	if (p->service && k8s_obj_owner_class(p->service, p->uid) == K8S_OWNER_THIS) {
		plan_action *a = plan_add(p, SBX_STEP_SERVICE, SBX_VERB_DELETE,
		                          SBX_OBJ_SERVICE, p->name, NULL,
		                          "failed to delete service");
		if (a)
			a->pub.not_found_ok = true;
	}
}
