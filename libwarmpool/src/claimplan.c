/*
 * claimplan.c - the decisions of one SandboxClaim pass (claimplan.h):
 * warm candidate choice, expiry, the status to write, the requeue. Pure;
 * claimctl.c does the reads and writes around them.
 */
#include <stdlib.h>
#include <string.h>
#include "claimplan.h"
#include "warmpool/blueprint.h"
#include "jsonutil.h"
#include "asb/common.h"
#include "k8s/object.h"
#include "sandbox/namehash.h"

/* ---- warm candidate choice ---- */

wp_cand_verdict wp_claim_cand_precheck(const cJSON *claim, const cJSON *sbx)
{
	if (!ju_str_eq(k8s_obj_namespace(sbx), k8s_obj_namespace(claim)))
		return WP_CAND_OTHER_NAMESPACE;
	if (!wp_claim_candidate_ok(claim, sbx, NULL))
		return WP_CAND_INVALID;
	return WP_CAND_ELIGIBLE;
}

static bool sbx_ready(const cJSON *sbx)
{
	return ju_str_eq(ju_str(wp_condition(cJSON_GetObjectItem(sbx, "status"), SBX_CONDITION_READY),
	                        "status"), "True");
}

wp_cand_verdict wp_claim_cand_verdict(const wp_claim_pool_view *pool, const cJSON *sbx,
                                      bool *pending)
{
	bool has_ips = cJSON_GetArraySize(k8s_obj_at(sbx, "status.podIPs")) > 0;
	wp_cand_verdict v;
	if (pool && pool->recreate && !pool->tpl_known)
		v = WP_CAND_POOL_UNKNOWN;
	else if (pool && pool->recreate &&
	         !ju_str_eq(k8s_obj_label(sbx, WP_LABEL_TEMPLATE_HASH), pool->tpl_hash) &&
	         wp_blueprint_differs(pool->tpl, sbx))
		v = WP_CAND_STALE;
	else if (!has_ips)
		v = WP_CAND_NO_NETWORK;
	else
		v = sbx_ready(sbx) ? WP_CAND_READY : WP_CAND_NOT_READY;
	if (pending)
		*pending = !has_ips && (v == WP_CAND_POOL_UNKNOWN || v == WP_CAND_NO_NETWORK);
	return v;
}

wp_cand_action wp_claim_choice_offer(wp_claim_choice *ch, wp_cand_verdict verdict, bool pending)
{
	size_t idx = ch->offered++;
	if (pending)
		ch->pending++;
	switch (verdict) {
	case WP_CAND_INVALID:
	case WP_CAND_STALE:
		return WP_CAND_DROP;
	case WP_CAND_READY:
		ch->done = true;
		ch->outcome = WP_CHOICE_CHOSEN;
		ch->chosen = idx;
		return WP_CAND_TAKE;
	case WP_CAND_NOT_READY:
		if (ch->held)
			return WP_CAND_KEEP;  /* only the first one is held */
		ch->held = true;
		ch->held_index = idx;
		return WP_CAND_HOLD;
	default:
		return WP_CAND_KEEP;
	}
}

void wp_claim_choice_finish(wp_claim_choice *ch)
{
	ch->keep_held = false;
	if (ch->done)
		ch->keep_held = ch->held;  /* a Ready one won: the fallback goes back */
	else if (ch->held) {
		ch->outcome = WP_CHOICE_CHOSEN;
		ch->chosen = ch->held_index;
	} else {
		ch->outcome = ch->pending > 0 ? WP_CHOICE_PENDING_NETWORK : WP_CHOICE_NONE;
	}
}

int wp_claim_choose(const cJSON *claim, const wp_claim_pool_view *pool,
                    const cJSON *const *cands, size_t n, wp_claim_candidates *out)
{
	memset(out, 0, sizeof(*out));
	out->verdict = calloc(n ? n : 1, sizeof(*out->verdict));
	out->action = calloc(n ? n : 1, sizeof(*out->action));
	if (!out->verdict || !out->action) {
		wp_claim_candidates_clear(out);
		return ASB_ENOMEM;
	}
	for (size_t i = 0; i < n && !out->choice.done; i++) {
		bool pending = false;
		wp_cand_verdict v = wp_claim_cand_precheck(claim, cands[i]);
		if (v == WP_CAND_ELIGIBLE)
			v = wp_claim_cand_verdict(pool, cands[i], &pending);
		out->verdict[i] = v;
		out->action[i] = wp_claim_choice_offer(&out->choice, v, pending);
		out->examined = i + 1;
	}
	wp_claim_choice_finish(&out->choice);
	if (out->choice.held)
		out->action[out->choice.held_index] = out->choice.keep_held ? WP_CAND_KEEP
		                                                            : WP_CAND_TAKE;
	return 0;
}

void wp_claim_candidates_clear(wp_claim_candidates *c)
{
	free(c->verdict);
	free(c->action);
	memset(c, 0, sizeof(*c));
}

long wp_claim_network_wait_ms(int64_t age_ms)
{
	if (age_ms >= WP_CLAIM_NETWORK_GRACE_MS)
		return 0;
	int64_t left = WP_CLAIM_NETWORK_GRACE_MS - age_ms;
	long wait = left < WP_CLAIM_NETWORK_POLL_MS ? (long)left : WP_CLAIM_NETWORK_POLL_MS;
	return wait < 1 ? 1 : wait;
}

/* ---- expiry ---- */

static const char *ready_reason(const cJSON *claim)
{
	return ju_str(wp_condition(cJSON_GetObjectItem(claim, "status"), SBX_CONDITION_READY), "reason");
}

void wp_claim_plan_expiry(const cJSON *claim, int64_t now_ms, wp_claim_expiry_plan *out)
{
	memset(out, 0, sizeof(*out));
	out->has_expiry = wp_claim_expiry(claim, NULL, &out->at_ms);
	out->expired = out->has_expiry && now_ms >= out->at_ms;
	if (!out->expired) {
		out->action = WP_EXPIRY_ACTIVE;
		return;
	}
	const char *policy = wp_claim_shutdown_policy(claim);
	if (!ju_str_eq(ready_reason(claim), WP_REASON_CLAIM_EXPIRED))
		out->action = WP_EXPIRY_MARK;
	else if (ju_str_eq(policy, SBX_SHUTDOWN_POLICY_DELETE) ||
	         ju_str_eq(policy, WP_SHUTDOWN_POLICY_DELETE_FOREGROUND)) {
		out->action = WP_EXPIRY_DELETE_CLAIM;
		out->foreground = ju_str_eq(policy, WP_SHUTDOWN_POLICY_DELETE_FOREGROUND);
	} else {
		out->action = WP_EXPIRY_RETAIN;
	}
}

cJSON *wp_claim_expired_status(const cJSON *claim, int64_t now_ms)
{
	const cJSON *old = cJSON_GetObjectItem(claim, "status");
	cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
	if (!st || !wp_set_condition(st, SBX_CONDITION_READY, "False", WP_REASON_CLAIM_EXPIRED,
	                             "Claim expired. Sandbox cleanup initiated.",
	                             k8s_obj_generation(claim), NULL, now_ms)) {
		cJSON_Delete(st);
		return NULL;
	}
	return st;
}

/* ---- the status of a pass ---- */

int wp_claim_plan_status(const cJSON *claim, const cJSON *sbx, const wp_claim_err *err,
                         bool expired, int64_t now_ms, cJSON **out, bool *mark_expired)
{
	*out = NULL;
	*mark_expired = false;
	cJSON *st = wp_claim_status(claim, sbx, err, expired, now_ms);
	if (!st)
		return ASB_ENOMEM;
	int64_t at;
	if (expired || !wp_claim_expiry(claim, st, &at) || now_ms < at ||
	    ju_str_eq(ju_str(wp_condition(st, SBX_CONDITION_READY), "reason"),
	              WP_REASON_CLAIM_EXPIRED)) {
		*out = st;
		return 0;
	}
	/* the freshly mirrored Finished started a TTL that is already over:
	 * the status as it would be on the claim carrying `st`, expired */
	cJSON *tmp = cJSON_Duplicate(claim, true);
	cJSON *st2 = NULL;
	if (tmp && ju_set(tmp, "status", st)) {
		st = NULL;
		st2 = wp_claim_status(tmp, sbx, err, true, now_ms);
	}
	cJSON_Delete(st);
	cJSON_Delete(tmp);
	if (!st2)
		return ASB_ENOMEM;
	*out = st2;
	*mark_expired = true;
	return 0;
}

/* ---- the end of a pass ---- */

void wp_claim_plan_end(const wp_claim_err *err, const wp_claim_expiry_plan *expiry,
                       int64_t now_ms, wp_claim_pass_end *out)
{
	memset(out, 0, sizeof(*out));
	wp_claim_err_kind kind = err ? err->kind : WP_CLAIM_OK;
	long expiry_wait = 0;
	if (expiry->has_expiry && !expiry->expired)
		expiry_wait = (long)(expiry->at_ms - now_ms) > 0 ? (long)(expiry->at_ms - now_ms) : 1;
	if (kind == WP_CLAIM_E_POOL_NOT_FOUND || kind == WP_CLAIM_E_TEMPLATE_NOT_FOUND) {
		out->requeue_after_ms = expiry_wait > 0 && expiry_wait < WP_CLAIM_NOT_FOUND_REQUEUE_MS
		                        ? expiry_wait : WP_CLAIM_NOT_FOUND_REQUEUE_MS;
		return;
	}
	if (kind == WP_CLAIM_E_CREATE_PENDING) {
		out->requeue_after_ms = WP_CLAIM_CREATE_PENDING_REQUEUE_MS;
		return;
	}
	if (kind != WP_CLAIM_OK && !wp_claim_err_suppressed(err)) {
		out->fail = kind == WP_CLAIM_E_ADOPTION_CONFLICT ? ASB_ECONFLICT : ASB_ERROR;
		return;
	}
	if (expiry_wait > 0)
		out->requeue_after_ms = expiry_wait;
}
