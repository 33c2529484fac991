/*
 * client_wait.c - waiting for a SandboxClaim on one watch
 * (docs/upstream.md#readiness-wait): restarted where it stopped when the server ends it, from "0"
 * after 410 Gone, with the remaining budget in whole seconds as its
 * server-side timeout. Each event is judged by sbx_claim_outcome(), so a
 * claim the controller fails (TemplateNotFound, ...) ends the wait on the
 * event that says so, never on a poll.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client_internal.h"
#include "jsonutil.h"
#include "k8s/object.h"
#include "sandbox/clientclaim.h"

typedef struct {
	bool need_ready;
	int result;            /* 0 still waiting, else the outcome (1 or < 0) */
	char *rv;              /* last resourceVersion seen */
	cJSON *claim;          /* the deciding object, kept */
} wait_state;

static void remember_rv(wait_state *w, const cJSON *obj)
{
	const char *rv = k8s_obj_resource_version(obj);
	if (!ju_empty(rv)) {
		char *d = strdup(rv);
		if (d) {
			free(w->rv);
			w->rv = d;
		}
	}
}

static int on_event(k8s_watch_event_type type, cJSON *obj, void *ud)
{
	wait_state *w = ud;
	remember_rv(w, obj);
	int r = SBX_CLAIM_PENDING;
	if (type == K8S_WATCH_DELETED)
		r = SBX_ECLAIMDELETED;
	else if (type == K8S_WATCH_ADDED || type == K8S_WATCH_MODIFIED)
		r = sbx_claim_outcome(obj, w->need_ready, NULL, NULL, NULL);
	if (r == SBX_CLAIM_PENDING) {
		cJSON_Delete(obj);
		return 0;
	}
	w->result = r;
	w->claim = obj;
	return 1;
}

/* Fills the caller's sbx_claim_info from a resolved claim. */
static int claim_info(const cJSON *claim, const char *ns, const char *name, sbx_claim_info **out)
{
	const char *sandbox = NULL;
	sbx_claim_outcome(claim, false, &sandbox, NULL, NULL);
	char ip[SBX_IP_SIZE];
	const char *pod_ip = sbx_pick_pod_ip(k8s_obj_at(claim, "status.sandbox.podIPs"), ip);
	sbx_claim_info *i = calloc(1, sizeof(*i));
	int rc = i ? 0 : ASB_ENOMEM;
	if (i) {
		i->ns = sbx__strdup(ns, &rc);
		i->claim_name = sbx__strdup(name, &rc);
		i->sandbox_name = sbx__strdup(ju_nz(sandbox), &rc);
		i->pod_ip = sbx__strdup(pod_ip, &rc);
		i->resource_version = sbx__strdup(ju_nz(k8s_obj_resource_version(claim)), &rc);
	}
	if (rc) {
		sbx_claim_info_free(i);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory reading claim %s/%s", ns, name);
	}
	*out = i;
	return 0;
}

/* Records the error of a fail-fast outcome, with upstream's wording. */
static int outcome_error(int code, const cJSON *claim, const char *ns, const char *name)
{
	const char *reason = NULL, *message = NULL;
	if (code == SBX_ECLAIMDELETED)
		return asb_error_set(code, 0, NULL, "SandboxClaim %s/%s was deleted while waiting "
		                     "for it", ns, name);
	sbx_claim_outcome(claim, false, NULL, &reason, &message);
	if (code == SBX_ETEMPLATENOTFOUND)
		return asb_error_set(code, 0, reason, "SandboxTemplate requested does not exist: %s",
		                     ju_nz(message));
	if (code == SBX_EWARMPOOLNOTFOUND)
		return asb_error_set(code, 0, reason, "SandboxWarmPool requested does not exist: %s",
		                     ju_nz(message));
	return asb_error_set(code, 0, reason, "SandboxClaim '%s' failed with terminal reason %s: %s",
	                     name, ju_nz(reason), ju_nz(message));
}

/* Upstream's timeout text, the budget printed as the caller gave it. */
static int timeout_error(const char *name, bool need_ready, long timeout_ms)
{
	return asb_error_set(ASB_ETIMEOUT, 0, NULL, "Could not resolve %s from claim '%s' within "
	                     "%g seconds.", need_ready ? "claim readiness" : "sandbox name", name,
	                     (double)timeout_ms / 1000.0);
}

int sbx__client_wait(sbx_client *c, const char *ns, const char *name, const char *rv,
                     bool need_ready, long timeout_ms, const atomic_int *cancel,
                     sbx_claim_info **out)
{
	*out = NULL;
	char selector[300];
	if (snprintf(selector, sizeof(selector), "metadata.name=%s", name) >= (int)sizeof(selector))
		return asb_error_set(ASB_EINVAL, 0, NULL, "claim name too long: %s", name);
	wait_state w = { need_ready, 0, strdup(ju_empty(rv) ? "0" : rv), NULL };
	if (!w.rv)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory waiting for claim %s", name);
	int64_t deadline = k8s_monotonic_ms() + timeout_ms;
	int rc = 0;
	for (;;) {
		if (cancel && atomic_load(cancel)) {
			rc = asb_error_set(ASB_ECANCELED, 0, NULL, "wait for claim %s/%s cancelled", ns, name);
			break;
		}
		long secs = (long)((deadline - k8s_monotonic_ms()) / 1000);
		if (secs < 1) {
			rc = timeout_error(name, need_ready, timeout_ms);
			break;
		}
		k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
		lo.field_selector = selector;
		lo.resource_version = w.rv;
		lo.timeout_seconds = secs;
		lo.allow_watch_bookmarks = true;
		rc = k8s_client_watch(c->k8s, &sbx__resource_claims, ns, &lo, on_event, &w, cancel);
		if (w.result)
			break;
		if (rc == ASB_EGONE) {
			/* The version was compacted: start again from the current state. */
			free(w.rv);
			if (!(w.rv = strdup("0"))) {
				rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
				break;
			}
			continue;
		}
		if (rc == ASB_ECANCELED) {
			rc = asb_error_set(ASB_ECANCELED, 0, NULL, "wait for claim %s/%s cancelled", ns, name);
			break;
		}
		if (rc != 0)
			break;
		/* the server ended the watch (its timeout): resume from w.rv */
	}
	if (w.result == SBX_CLAIM_RESOLVED)
		rc = claim_info(w.claim, ns, name, out);
	else if (w.result < 0)
		rc = outcome_error(w.result, w.claim, ns, name);
	cJSON_Delete(w.claim);
	free(w.rv);
	return rc;
}

int sbx_client_wait_claim(sbx_client *c, const char *ns, const char *name, bool need_ready,
                          long timeout_ms, const atomic_int *cancel, sbx_claim_info **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_client_wait_claim: no output");
	*out = NULL;
	if (!c || ju_empty(name))
		return asb_error_set(ASB_EINVAL, 0, NULL, "wait claim: no client or claim name");
	ns = sbx__ns_or_default(c, ns);
	/* Read it first: a missing claim is an answer, not a timeout. */
	cJSON *claim = NULL;
	int rc = k8s_client_get(c->k8s, &sbx__resource_claims, ns, name, &claim);
	if (rc != 0)
		return rc;
	int r = sbx_claim_outcome(claim, need_ready, NULL, NULL, NULL);
	if (r == SBX_CLAIM_RESOLVED)
		rc = claim_info(claim, ns, name, out);
	else if (r < 0)
		rc = outcome_error(r, claim, ns, name);
	else
		rc = sbx__client_wait(c, ns, name, k8s_obj_resource_version(claim), need_ready,
		                      timeout_ms, cancel, out);
	cJSON_Delete(claim);
	return rc;
}
