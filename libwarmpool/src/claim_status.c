/*
 * claim_status.c - the claim's expiry (docs/api.md#claim-expiry) and status
 * (docs/api.md#claim-conditions): Ready's first-match table, the mirrored Finished condition,
 * status.sandbox, set-condition semantics, the AdoptionConflict message
 * and the "unchanged" test of the status write (docs/api.md#claim-reconcile step 9).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "claim.h"
#include "jsonutil.h"
#include "k8s/common.h"
#include "k8s/object.h"

/* ---- docs/api.md#claim-expiry ---- */

const cJSON *wp_condition(const cJSON *status, const char *type)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(status, "conditions"))
		if (ju_str_eq(ju_str(c, "type"), type))
			return c;
	return NULL;
}

bool wp_claim_expiry(const cJSON *claim, const cJSON *status, int64_t *at_ms)
{
	const cJSON *lc = k8s_obj_at(claim, "spec.lifecycle");
	if (!cJSON_IsObject(lc))
		return false;
	if (!status)
		status = cJSON_GetObjectItem(claim, "status");
	bool has = false;
	int64_t at = 0, t;
	const char *st = ju_str(lc, "shutdownTime");
	if (!ju_empty(st) && k8s_time_parse(st, &t) == 0) {
		at = t;
		has = true;
	}
	const cJSON *ttl = cJSON_GetObjectItem(lc, "ttlSecondsAfterFinished");
	const cJSON *fin = wp_condition(status, SBX_CONDITION_FINISHED);
	if (cJSON_IsNumber(ttl) && fin && ju_str_eq(ju_str(fin, "status"), "True") &&
	    k8s_time_parse(ju_nz(ju_str(fin, "lastTransitionTime")), &t) == 0) {
		t += (int64_t)ttl->valuedouble * 1000;
		if (!has || t < at)
			at = t;
		has = true;
	}
	if (has)
		*at_ms = at;
	return has;
}

const char *wp_claim_shutdown_policy(const cJSON *claim)
{
	const char *p = k8s_obj_str(claim, "spec.lifecycle.shutdownPolicy");
	return ju_empty(p) ? SBX_SHUTDOWN_POLICY_RETAIN : p;
}

/* ---- conditions ---- */

bool wp_set_condition(cJSON *status, const char *type, const char *cstatus,
                      const char *reason, const char *message,
                      int64_t observed_generation, const char *ltt, int64_t now_ms)
{
	cJSON *conds = cJSON_GetObjectItem(status, "conditions");
	if (!cJSON_IsArray(conds)) {
		conds = cJSON_CreateArray();
		if (!conds || !ju_set(status, "conditions", conds))
			return false;
	}
	char nowbuf[32];
	const char *when = !ju_empty(ltt) ? ltt : k8s_time_format(now_ms, nowbuf, sizeof(nowbuf));
	cJSON *c = NULL, *it;
	cJSON_ArrayForEach(it, conds)
		if (ju_str_eq(ju_str(it, "type"), type))
			c = it;
	if (!c) {
		c = cJSON_CreateObject();
		if (!c || !cJSON_AddItemToArray(conds, c)) {
			cJSON_Delete(c);
			return false;
		}
		if (!ju_set_str(c, "type", type) || !ju_set_str(c, "lastTransitionTime", when))
			return false;
	} else if (!ju_str_eq(ju_str(c, "status"), cstatus)) {
		if (!ju_set_str(c, "lastTransitionTime", when))
			return false;
	}
	return ju_set_str(c, "status", cstatus) && ju_set_str(c, "reason", reason) &&
	       ju_set_str(c, "message", ju_nz(message)) &&
	       ju_set(c, "observedGeneration", cJSON_CreateNumber((double)observed_generation));
}

static void remove_condition(cJSON *status, const char *type)
{
	cJSON *conds = cJSON_GetObjectItem(status, "conditions");
	for (int i = cJSON_GetArraySize(conds) - 1; i >= 0; i--)
		if (ju_str_eq(ju_str(cJSON_GetArrayItem(conds, i), "type"), type))
			cJSON_DeleteItemFromArray(conds, i);
}

/* Copies the Sandbox condition `src` as is (its own observedGeneration and
 * lastTransitionTime on insert/flip). */
static bool copy_condition(cJSON *status, const cJSON *src)
{
	const cJSON *og = cJSON_GetObjectItem(src, "observedGeneration");
	return wp_set_condition(status, ju_str(src, "type"), ju_nz(ju_str(src, "status")),
	                        ju_nz(ju_str(src, "reason")), ju_str(src, "message"),
	                        cJSON_IsNumber(og) ? (int64_t)og->valuedouble : 0,
	                        ju_str(src, "lastTransitionTime"), 0);
}

char *wp_adoption_conflict_message(const wp_claim_err *e)
{
	const char *msg = ju_nz(e->msg);
	if (e->api_tail > 0 && e->api_tail <= strlen(msg))
		return ju_printf("%.*s (conflicting concurrent write); the next pass retries from a "
		                 "converged view", (int)e->api_tail, msg);
	return ju_printf("%s; the next pass retries from a converged view", msg);
}

/* Ready from an error of the pass (docs/api.md#claim-conditions rows 1-9). */
static bool ready_from_error(cJSON *st, const wp_claim_err *err, int64_t gen, int64_t now)
{
	const char *reason = SBX_REASON_RECONCILER_ERROR;
	char *owned = NULL;
	const char *msg = ju_nz(err->msg);
	switch (err->kind) {
	case WP_CLAIM_E_TEMPLATE_NOT_FOUND: reason = WP_REASON_TEMPLATE_NOT_FOUND; break;
	case WP_CLAIM_E_POOL_NOT_FOUND: reason = WP_REASON_WARM_POOL_NOT_FOUND; break;
	case WP_CLAIM_E_ADOPTION_CONFLICT:
		reason = WP_REASON_ADOPTION_CONFLICT;
		msg = owned = wp_adoption_conflict_message(err);
		break;
	case WP_CLAIM_E_CREATE_PENDING:
		reason = WP_REASON_SANDBOX_CREATE_PENDING;
		msg = "Sandbox already created; waiting for cache to converge";
		break;
	case WP_CLAIM_E_INVALID_METADATA: reason = WP_REASON_INVALID_METADATA; break;
	case WP_CLAIM_E_ENV_REJECTED: reason = WP_REASON_ENV_REJECTED; break;
	case WP_CLAIM_E_NOT_OWNED: reason = WP_REASON_CLAIM_EXPIRED; break;
	case WP_CLAIM_E_VCT: reason = WP_REASON_VCT_ERROR; break;
	default:
		msg = owned = ju_printf("Error seen: %s", msg);
		break;
	}
	bool ok = msg && wp_set_condition(st, SBX_CONDITION_READY, "False", reason, msg, gen, NULL, now);
	free(owned);
	return ok;
}

cJSON *wp_claim_status(const cJSON *claim, const cJSON *sbx, const wp_claim_err *err,
                       bool expired, int64_t now_ms)
{
	const cJSON *old = cJSON_GetObjectItem(claim, "status");
	bool has_err = err && err->kind != WP_CLAIM_OK;
	if (has_err && err->kind == WP_CLAIM_E_CREATE_PENDING &&
	    !ju_empty(k8s_obj_str(claim, "status.sandbox.name")))
		return cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
	cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
	if (!st)
		return NULL;
	int64_t gen = k8s_obj_generation(claim);
	bool ok;
	const cJSON *sready = sbx ? wp_condition(cJSON_GetObjectItem(sbx, "status"),
	                                         SBX_CONDITION_READY) : NULL;
	if (has_err)
		ok = ready_from_error(st, err, gen, now_ms);
	else if (expired)
		ok = wp_set_condition(st, SBX_CONDITION_READY, "False", WP_REASON_CLAIM_EXPIRED,
		                      "Claim expired. Sandbox cleanup initiated.", gen, NULL, now_ms);
	else if (!sbx)
		ok = wp_set_condition(st, SBX_CONDITION_READY, "False", WP_REASON_SANDBOX_MISSING,
		                      "Sandbox does not exist", gen, NULL, now_ms);
	else if (sready && ju_str_eq(ju_str(sready, "reason"), SBX_REASON_SANDBOX_EXPIRED))
		ok = wp_set_condition(st, SBX_CONDITION_READY, "False", SBX_REASON_SANDBOX_EXPIRED,
		                      "Underlying Sandbox resource has expired independently of the "
		                      "Claim.", gen, NULL, now_ms);
	else if (sready)
		ok = wp_set_condition(st, SBX_CONDITION_READY, ju_nz(ju_str(sready, "status")),
		                      ju_nz(ju_str(sready, "reason")), ju_str(sready, "message"), gen,
		                      ju_str(sready, "lastTransitionTime"), now_ms);
	else
		ok = wp_set_condition(st, SBX_CONDITION_READY, "False", WP_REASON_SANDBOX_NOT_READY,
		                      "Sandbox is not ready", gen, NULL, now_ms);
	if (!ok)
		goto fail;
	/* Finished: mirrored; kept when the Sandbox is gone on an expired claim
	 * (and on a transient error, which says nothing about it) */
	if (sbx) {
		const cJSON *fin = wp_condition(cJSON_GetObjectItem(sbx, "status"),
		                                SBX_CONDITION_FINISHED);
		if (fin) {
			if (!copy_condition(st, fin))
				goto fail;
		} else {
			remove_condition(st, SBX_CONDITION_FINISHED);
		}
	} else if (!expired && !has_err) {
		remove_condition(st, SBX_CONDITION_FINISHED);
	}
	/* status.sandbox */
	if (sbx) {
		cJSON *ref = cJSON_CreateObject();
		const cJSON *ips = k8s_obj_at(sbx, "status.podIPs");
		if (!ref || !ju_set(st, "sandbox", ref) ||
		    !ju_set_str(ref, "name", ju_nz(k8s_obj_name(sbx))) ||
		    (cJSON_GetArraySize(ips) > 0 &&
		     !ju_set(ref, "podIPs", cJSON_Duplicate(ips, true))))
			goto fail;
	} else if (!has_err || err->kind == WP_CLAIM_E_NOT_OWNED) {
		cJSON_DeleteItemFromObjectCaseSensitive(st, "sandbox");
	}
	return st;
fail:
	cJSON_Delete(st);
	return NULL;
}

static int cond_cmp(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	return strcmp(ju_nz(ju_str(x, "type")), ju_nz(ju_str(y, "type")));
}

cJSON *wp_claim_status_sorted(const cJSON *st)
{
	cJSON *c = cJSON_IsObject(st) ? cJSON_Duplicate(st, true) : cJSON_CreateObject();
	cJSON *conds = c ? cJSON_GetObjectItem(c, "conditions") : NULL;
	int n = cJSON_GetArraySize(conds);
	if (n > 1) {
		cJSON **items = malloc((size_t)n * sizeof(*items));
		if (!items) {
			cJSON_Delete(c);
			return NULL;
		}
		for (int i = n - 1; i >= 0; i--)
			items[i] = cJSON_DetachItemFromArray(conds, i);
		qsort(items, (size_t)n, sizeof(*items), cond_cmp);
		for (int i = 0; i < n; i++)
			cJSON_AddItemToArray(conds, items[i]);
		free(items);
	}
	return c;
}

bool wp_claim_status_equal(const cJSON *a, const cJSON *b)
{
	cJSON *x = wp_claim_status_sorted(a), *y = wp_claim_status_sorted(b);
	bool eq = x && y && k8s_obj_semantic_equal(x, y);
	cJSON_Delete(x);
	cJSON_Delete(y);
	return eq;
}

bool wp_claim_sandbox_update_matters(const cJSON *o, const cJSON *n)
{
	if (k8s_obj_is_deleting(o) != k8s_obj_is_deleting(n))
		return true;
	if (!cJSON_Compare(k8s_obj_at(o, "status.podIPs"), k8s_obj_at(n, "status.podIPs"), true))
		return true;
	const cJSON *os = cJSON_GetObjectItem(o, "status"), *ns = cJSON_GetObjectItem(n, "status");
	const char *types[] = { SBX_CONDITION_READY, SBX_CONDITION_FINISHED };
	for (int i = 0; i < 2; i++) {
		const cJSON *a = wp_condition(os, types[i]), *b = wp_condition(ns, types[i]);
		if ((a == NULL) != (b == NULL) || (a && !cJSON_Compare(a, b, true)))
			return true;
	}
	return false;
}

const char *wp_normalize_created_by(const char *v)
{
	if (ju_str_eq(v, "go-client") || ju_str_eq(v, "python-client") ||
	    ju_str_eq(v, WP_CREATED_BY_CONTROLLER))
		return v;
	return "unknown";
}

char *wp_format_rfc3339nano(int64_t ns, char *buf, size_t cap)
{
	time_t secs = (time_t)(ns / 1000000000);
	long frac = (long)(ns % 1000000000);
	if (frac < 0) {
		frac += 1000000000;
		secs--;
	}
	struct tm tm;
	gmtime_r(&secs, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac == 0) {
		snprintf(buf, cap, "%sZ", base);
		return buf;
	}
	char f[16];
	snprintf(f, sizeof(f), "%09ld", frac);
	for (int i = 8; i > 0 && f[i] == '0'; i--)
		f[i] = '\0';  /* Go trims trailing zeros of the fraction */
	snprintf(buf, cap, "%s.%sZ", base, f);
	return buf;
}
