/*
 * claimplan.h - the decisions of one SandboxClaim pass, apart from its
 * I/O: which warm candidate to adopt (with the Recreate staleness rule),
 * what expiry asks for, the status to write, and when to requeue.
 * claimctl.c reads the caches, asks these functions, and applies the
 * answer.
 *
 * All functions are pure: no I/O, no clock reads, no global state; the
 * time is always an argument. Thread-safe on read-only arguments; const
 * arguments are never modified. Objects are whole Kubernetes objects as
 * cJSON.
 *
 * Private to libwarmpool: not exported from the shared library; the unit
 * tests link the static library that holds these functions.
 */
#ifndef WP_CLAIMPLAN_H
#define WP_CLAIMPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "claim.h"

/** How long a new claim waits for a warm candidate's network before going cold (ms). */
#define WP_CLAIM_NETWORK_GRACE_MS 2000
/** The longest single wait inside the network grace (ms). */
#define WP_CLAIM_NETWORK_POLL_MS 500
/** Requeue after a create that met AlreadyExists (cache lag), ms. */
#define WP_CLAIM_CREATE_PENDING_REQUEUE_MS 200
/** Requeue of a claim whose pool or template is missing, ms. */
#define WP_CLAIM_NOT_FOUND_REQUEUE_MS 60000

/* ---- warm candidate choice ---- */

/**
 * What the pass knows of the claim's SandboxWarmPool for the Recreate
 * rule. Borrowed pointers; zero-initialised means "not a Recreate pool".
 */
typedef struct {
	bool recreate;         /**< spec.updateStrategy.type is Recreate */
	bool tpl_known;        /**< recreate: the template was read and hashed */
	const cJSON *tpl;      /**< tpl_known: the pool's SandboxTemplate */
	const char *tpl_hash;  /**< tpl_known: wp_blueprint_hash() of tpl */
} wp_claim_pool_view;

/** The verdict on one warm candidate, in the order the checks run. */
typedef enum {
	WP_CAND_OTHER_NAMESPACE = 0, /**< not in the claim's namespace: back to the queue */
	WP_CAND_INVALID,      /**< fails wp_claim_candidate_ok() (deleting, owned by a
	                       *   claim, another pool, labels missing): dropped */
	WP_CAND_ELIGIBLE,     /**< passed the claim checks; only from
	                       *   wp_claim_cand_precheck(), the pool decides the rest */
	WP_CAND_POOL_UNKNOWN, /**< Recreate pool whose template cannot be read:
	                       *   staleness undecidable, back to the queue */
	WP_CAND_STALE,        /**< Recreate pool, outdated blueprint: the pool is
	                       *   deleting it; dropped, never handed out */
	WP_CAND_NO_NETWORK,   /**< no status.podIPs yet: back to the queue */
	WP_CAND_READY,        /**< Ready=True with IPs: adopted at once */
	WP_CAND_NOT_READY     /**< IPs but not Ready: adopted when nothing Ready is found */
} wp_cand_verdict;

/**
 * The claim-side checks of a candidate `sbx` for `claim`: OTHER_NAMESPACE,
 * INVALID, or ELIGIBLE. Needs no pool, so a caller can read the pool only
 * once a candidate is eligible.
 */
wp_cand_verdict wp_claim_cand_precheck(const cJSON *claim, const cJSON *sbx);

/**
 * The pool-side verdict of an ELIGIBLE candidate `sbx` under `pool` (NULL:
 * not Recreate): POOL_UNKNOWN, STALE, NO_NETWORK, READY or NOT_READY. Under
 * Recreate a candidate is stale when its template-hash label differs from
 * the pool's and its blueprint differs from the template's. `*pending`
 * (may be NULL) is set true when the candidate counts as waiting for its
 * network (no podIPs, and not dropped), else false.
 */
wp_cand_verdict wp_claim_cand_verdict(const wp_claim_pool_view *pool, const cJSON *sbx,
                                      bool *pending);

/** What the caller does with a candidate it offered to a wp_claim_choice. */
typedef enum {
	WP_CAND_KEEP = 0, /**< push it back to the queue */
	WP_CAND_DROP,     /**< discard its queue entry */
	WP_CAND_HOLD,     /**< hold it: the fallback, adopted unless a Ready one follows */
	WP_CAND_TAKE      /**< adopt it and offer no more */
} wp_cand_action;

/** Why no candidate was chosen. */
typedef enum {
	WP_CHOICE_CHOSEN = 0,     /**< one was chosen */
	WP_CHOICE_NONE,           /**< none adoptable and none waiting: go cold */
	WP_CHOICE_PENDING_NETWORK /**< none adoptable, some wait for their network */
} wp_choice_outcome;

/**
 * The running choice over candidates offered in queue order: the first
 * READY is taken at once; else the first NOT_READY is held and taken at
 * the end. Zero-initialise. Plain data, one user at a time.
 */
typedef struct {
	bool done;          /**< a READY one was taken: offer no more */
	bool held;          /**< a fallback is held */
	size_t held_index;  /**< its offer index */
	size_t offered;     /**< offers so far */
	int pending;        /**< candidates waiting for their network */
	/* Set by wp_claim_choice_finish(): */
	wp_choice_outcome outcome;
	size_t chosen;      /**< outcome CHOSEN: offer index of the adopted one */
	bool keep_held;     /**< the held fallback goes back to the queue */
} wp_claim_choice;

/**
 * Offers the next candidate with its `verdict` (from precheck/verdict) and
 * `pending` (from wp_claim_cand_verdict()); returns what to do with it.
 * Not to be called once `ch->done`.
 */
wp_cand_action wp_claim_choice_offer(wp_claim_choice *ch, wp_cand_verdict verdict, bool pending);

/** Ends the offers: fills outcome, chosen and keep_held. */
void wp_claim_choice_finish(wp_claim_choice *ch);

/** The whole choice over an array of observed candidates (what the tests drive). */
typedef struct {
	wp_claim_choice choice;   /**< outcome, chosen index, pending count */
	size_t examined;          /**< candidates looked at; the rest stay queued untouched */
	wp_cand_verdict *verdict; /**< n entries, [0, examined) meaningful; owned */
	wp_cand_action *action;   /**< n entries, the action per candidate after finish
	                           *   (the held one: TAKE or KEEP); owned */
} wp_claim_candidates;

/**
 * Runs precheck, verdict and the choice over `cands[0..n)` in order, as
 * the controller does when it pops them from the warm queue. Returns 0 or
 * ASB_ENOMEM. Release `out` with wp_claim_candidates_clear().
 */
int wp_claim_choose(const cJSON *claim, const wp_claim_pool_view *pool,
                    const cJSON *const *cands, size_t n, wp_claim_candidates *out);
/** Frees the arrays of `c` and zeroes it. */
void wp_claim_candidates_clear(wp_claim_candidates *c);

/**
 * The wait before the next look at warm candidates that have no network
 * yet, for a claim first seen `age_ms` ago: min(grace left, poll), at
 * least 1; 0 once the grace is over (then the claim goes cold).
 */
long wp_claim_network_wait_ms(int64_t age_ms);

/* ---- expiry ---- */

/** What expiry asks of this pass. */
typedef enum {
	WP_EXPIRY_ACTIVE = 0,  /**< not expired: the normal pass */
	WP_EXPIRY_MARK,        /**< expired, Ready not yet ClaimExpired: write that, event, requeue 1 ms */
	WP_EXPIRY_DELETE_CLAIM,/**< expired under Delete / DeleteForeground: delete the claim */
	WP_EXPIRY_RETAIN       /**< expired under Retain: delete the bound Sandbox if ours */
} wp_expiry_action;

/** The expiry decision of a pass. */
typedef struct {
	bool has_expiry;     /**< the claim has an expiry time */
	int64_t at_ms;       /**< has_expiry: that time, ms since the epoch */
	bool expired;        /**< has_expiry and now >= at_ms */
	wp_expiry_action action;
	bool foreground;     /**< DELETE_CLAIM: propagation Foreground */
} wp_claim_expiry_plan;

/** The expiry decision for `claim` (its own status) at `now_ms`. */
void wp_claim_plan_expiry(const cJSON *claim, int64_t now_ms, wp_claim_expiry_plan *out);

/**
 * The status to write for WP_EXPIRY_MARK: the claim's status (or {}) with
 * Ready=False ClaimExpired "Claim expired. Sandbox cleanup initiated.".
 * New object, NULL on allocation failure.
 */
cJSON *wp_claim_expired_status(const cJSON *claim, int64_t now_ms);

/* ---- the status of a pass ---- */

/**
 * The desired claim status of a normal or Retain pass (wp_claim_status()
 * with the bound Sandbox `sbx` and `err`), into `*out` (new object). When
 * the pass was not `expired` but the status it computes starts a TTL that
 * is already over (a freshly mirrored Finished), the status is computed
 * again as expired and `*mark_expired` is set: the caller then applies it
 * as WP_EXPIRY_MARK. Returns 0 or ASB_ENOMEM.
 */
int wp_claim_plan_status(const cJSON *claim, const cJSON *sbx, const wp_claim_err *err,
                         bool expired, int64_t now_ms, cJSON **out, bool *mark_expired);

/* ---- the end of a pass ---- */

/** How a pass ends once its status is written. */
typedef struct {
	long requeue_after_ms; /**< 0: none */
	int fail;              /**< non-zero: return this error (ASB_ECONFLICT or ASB_ERROR) */
} wp_claim_pass_end;

/**
 * The end of a pass from its error `err` (NULL: none) and `expiry`: a
 * missing pool or template requeues slowly (sooner if the expiry comes
 * first), a create pending on cache lag quickly, an unsuppressed error
 * fails (AdoptionConflict as ASB_ECONFLICT), else the claim is requeued
 * at its expiry (at least 1 ms) when it has one ahead.
 */
void wp_claim_plan_end(const wp_claim_err *err, const wp_claim_expiry_plan *expiry,
                       int64_t now_ms, wp_claim_pass_end *out);

#endif
