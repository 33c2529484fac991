/*
 * claim.h - the pure decisions of the SandboxClaim controller
 * (docs/api.md#claim-controller): additionalPodMetadata validation and merge (docs/api.md#additionalpodmetadata), env
 * injection (docs/api.md#env-injection), volumeClaimTemplates merge (docs/api.md#claim-volumeclaimtemplates), the cold Sandbox
 * (docs/api.md#cold-start), the adoption patch (docs/api.md#claim-adoption step 2), candidate verification (docs/api.md#claim-adoption),
 * expiry (docs/api.md#claim-expiry) and the claim status (docs/api.md#claim-conditions). claimctl.c does the I/O.
 *
 * All functions are pure (no I/O, no global state; wp_label_domains_load()
 * reads one file) and thread-safe on read-only arguments; they never modify
 * their const arguments. Objects are whole Kubernetes objects as cJSON.
 *
 * Private to libwarmpool: hidden in the shared library; the unit tests
 * reach them through libwarmpool_internal (its objects, linked statically).
 */
#ifndef WP_CLAIM_H
#define WP_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "sandbox/idle.h"
#include "warmpool/api.h"

/* ---- errors of a pass: the kind decides the Ready reason (docs/api.md#claim-conditions) ---- */

typedef enum {
	WP_CLAIM_OK = 0,
	WP_CLAIM_E_TEMPLATE_NOT_FOUND,   /**< TemplateNotFound */
	WP_CLAIM_E_POOL_NOT_FOUND,       /**< WarmPoolNotFound */
	WP_CLAIM_E_ADOPTION_CONFLICT,    /**< AdoptionConflict */
	WP_CLAIM_E_CREATE_PENDING,       /**< SandboxCreatePending (cache lag) */
	WP_CLAIM_E_INVALID_METADATA,     /**< InvalidMetadata (suppressed) */
	WP_CLAIM_E_ENV_REJECTED,         /**< EnvVarsInjectionRejected (suppressed) */
	WP_CLAIM_E_NOT_OWNED,            /**< expired, sandbox not owned: ClaimExpired (suppressed) */
	WP_CLAIM_E_VCT,                  /**< VolumeClaimTemplatesError (suppressed) */
	WP_CLAIM_E_OTHER                 /**< ReconcilerError ("Error seen: ...") */
} wp_claim_err_kind;

/** The error of a pass. Zero-initialise; release with wp_claim_err_clear(). */
typedef struct {
	wp_claim_err_kind kind;
	char *msg;        /**< owned; the error text */
	size_t api_tail;  /**< AdoptionConflict: offset of the ": <api error>"
	                   *   tail in msg (0: the text has none) */
} wp_claim_err;

/** Sets `e` (replacing what it held) to `kind` and a printf message. Returns false. */
bool wp_claim_err_set(wp_claim_err *e, wp_claim_err_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/** Frees the message and resets `e` to WP_CLAIM_OK. */
void wp_claim_err_clear(wp_claim_err *e);
/** True for the "suppressed" user errors of docs/api.md#claim-reconcile step 11 (no backoff). */
bool wp_claim_err_suppressed(const wp_claim_err *e);

/* ---- docs/api.md#additionalpodmetadata: allowed label domains, Kubernetes name validation ---- */

/** Allowed label domains (lower case). */
typedef struct {
	char **items;
	size_t n;
} wp_domains;

/** Default allowed label domain. */
#define WP_DEFAULT_LABEL_DOMAIN "sandbox.users.io"
/** Default path of the allowed label domains file. */
#define WP_DEFAULT_LABEL_DOMAINS_FILE "/etc/sandbox-config/allowed-label-domains"

/**
 * Parses the domains file content `text` (NULL: none): comma or newline
 * separated, trimmed, lower-cased, empty items skipped; an empty result
 * means [WP_DEFAULT_LABEL_DOMAIN]. Returns 0 or ASB_ENOMEM.
 */
int wp_domains_parse(const char *text, wp_domains *out);
/**
 * Reads and parses the file `path` (NULL: the default path). A missing
 * file gives the default domain. Returns 0, ASB_ERROR (unreadable, message
 * recorded) or ASB_ENOMEM.
 */
int wp_domains_load(const char *path, wp_domains *out);
void wp_domains_free(wp_domains *d);

/**
 * Validates the claim's spec.additionalPodMetadata (docs/api.md#additionalpodmetadata; labels first,
 * then annotations, keys in sorted order, first failure reported). On
 * failure sets `err` to InvalidMetadata, message `invalid
 * additionalPodMetadata: failed to validate label "<k>": ...`, and returns
 * false.
 */
bool wp_claim_validate_metadata(const cJSON *claim, const wp_domains *domains,
                                          wp_claim_err *err);

/**
 * Merges the claim's additionalPodMetadata into `meta` ({labels,
 * annotations}, modified in place) with the no-override rule of docs/api.md#additionalpodmetadata: a
 * key already in `meta` with another value fails with ReconcilerError
 * `metadata override conflict: label "<k>" is defined in template with
 * value "<v1>", but claim requests "<v2>"` (labels first, sorted keys).
 */
bool wp_merge_pod_metadata(cJSON *meta, const cJSON *claim, wp_claim_err *err);

/* ---- docs/api.md#env-injection env, docs/api.md#claim-volumeclaimtemplates volumeClaimTemplates ---- */

/**
 * Injects the claim's spec.env into `pod_spec` (in place) under the
 * template policy `policy` (NULL: Disallowed), docs/api.md#env-injection. No env: true, nothing
 * done. Errors: EnvVarsInjectionRejected, or ReconcilerError for an
 * unknown container or a forbidden override.
 */
bool wp_inject_env(cJSON *pod_spec, const cJSON *claim, const char *policy,
                             wp_claim_err *err);

/**
 * Checks a VCT list (every name non-empty, unique). NULL when valid, else
 * a new string `invalid volume claim templates: name at index <i> is
 * empty` / `... duplicate name "<n>"`.
 */
char *wp_vct_errors(const cJSON *vcts);

/**
 * The merged VCT list (new array, caller frees) of the template's `tpl_vcts`
 * and the claim's `claim_vcts` under `policy` (docs/api.md#claim-volumeclaimtemplates); NULL with `err` set
 * (VolumeClaimTemplatesError, or ReconcilerError for an unknown policy;
 * every message prefixed `failed to merge volume claim templates: `).
 */
cJSON *wp_merge_vcts(const cJSON *tpl_vcts, const cJSON *claim_vcts,
                               const char *policy, wp_claim_err *err);

/* ---- docs/api.md#cold-start cold Sandbox, docs/api.md#claim-adoption adoption ---- */

/** A new controller ownerReference to the SandboxClaim `claim`. */
cJSON *wp_claim_owner_ref(const cJSON *claim);

/** True when `obj`'s controller reference is the claim `claim` (UID). */
bool wp_controlled_by_claim(const cJSON *obj, const cJSON *claim);
/** True when `obj`'s controller reference is any SandboxClaim of the extensions group. */
bool wp_controlled_by_any_claim(const cJSON *obj);

/** True when the claim sets spec.env or spec.volumeClaimTemplates (cold only). */
bool wp_claim_forces_cold(const cJSON *claim);

/**
 * Adds to meta.labels (created) claim-uid, sandbox-template-ref-hash =
 * `ref_hash` and created-by (the claim's; removed when it has none).
 * Returns false on allocation failure.
 */
bool wp_claim_add_labels(cJSON *meta, const cJSON *claim, const char *ref_hash);

/**
 * The podTemplate metadata ({labels, annotations}, new object) a
 * claim-owned Sandbox should carry (docs/api.md#claim-adoption step 2, docs/api.md#additionalpodmetadata fast path): the
 * template's podTemplate metadata (or, `tpl` NULL, the Sandbox `sbx`'s
 * own, without a safe-to-evict "true"), plus labels claim-uid,
 * sandbox-template-ref-hash = `tpl_ref_hash`, created-by (the claim's, else
 * removed), plus the claim's additionalPodMetadata. NULL with `err` set on
 * an override conflict.
 */
cJSON *wp_claim_pod_metadata(const cJSON *claim, const cJSON *tpl, const cJSON *sbx,
                                       const char *tpl_ref_hash, wp_claim_err *err);

/**
 * The idle fields of a claim's Sandbox (ours, docs/api.md#idle-suspend-and-resume),
 * resolved as a pair: the claim's spec.lifecycle idleTimeoutSeconds and
 * idlePolicy when it sets a timeout (sbx_idle_policy_at() not OFF); else
 * those of `base`'s spec (the template, or the warm Sandbox itself when the
 * template is unknown) when it sets one; else none. A new object with the
 * winning source's idleTimeoutSeconds and, when that source has one, its
 * idlePolicy (an absent one means Suspend); {} for none. `*action` (may be
 * NULL) gets the pair's action, SBX_IDLE_OFF for none. NULL on allocation
 * failure.
 */
cJSON *wp_claim_idle_fields(const cJSON *claim, const cJSON *base, sbx_idle_action *action);

/**
 * The cold Sandbox for `claim` built from template `tpl` (docs/api.md#cold-start, steps in
 * the spec's order: VCTs, labels, metadata merge, env, secure defaults;
 * then our idle fields, wp_claim_idle_fields() of the claim and `tpl`).
 * New object, or NULL with `err` set.
 */
cJSON *wp_claim_cold_sandbox(const cJSON *claim, const cJSON *tpl, wp_claim_err *err);

/**
 * The merge patch adopting the warm Sandbox `sbx` for `claim` (docs/api.md#claim-adoption step
 * 2), computed from `sbx` as read (its resourceVersion is the
 * precondition). `tpl` may be NULL (template unreadable); `tpl_name` is the
 * template name (NULL: from the Sandbox's sandbox-template-ref annotation).
 * Ours (docs/api.md#idle-suspend-and-resume): spec.idleTimeoutSeconds and
 * spec.idlePolicy become wp_claim_idle_fields() of the claim and `tpl`
 * (else `sbx`), set where they differ and null where the Sandbox has one
 * the pair lacks; when that pair is not OFF the annotation
 * agents.x-k8s.io/last-activity is set to `now_ms` (RFC 3339), so the idle
 * clock of a member that waited unclaimed starts at its adoption.
 * New object, or NULL with `err` set.
 */
cJSON *wp_claim_adoption_patch(const cJSON *claim, const cJSON *sbx, const cJSON *tpl,
                               const char *tpl_name, int64_t now_ms, wp_claim_err *err);

/**
 * Candidate verification of docs/api.md#claim-adoption: same namespace as the claim, not
 * deleting, warm-pool-sandbox and sandbox-template-ref-hash labels, and a
 * SandboxWarmPool controller reference named like spec.warmPoolRef.name.
 * On failure `*reason` (may be NULL) gets a static description.
 */
bool wp_claim_candidate_ok(const cJSON *claim, const cJSON *sbx, const char **reason);

/**
 * The merge patch turning `old_obj` into `new_obj` (RFC 7386: removed
 * members become null, arrays replaced whole); new object, empty ({})
 * when equal. NULL on allocation failure.
 */
cJSON *wp_merge_patch_diff(const cJSON *old_obj, const cJSON *new_obj);

/* ---- docs/api.md#claim-expiry expiry, docs/api.md#claim-conditions status ---- */

/**
 * The claim's expiry time in ms since the epoch into `*at_ms`: the earliest
 * of lifecycle.shutdownTime and, with ttlSecondsAfterFinished, the
 * `status` Finished=True lastTransitionTime + ttl. `status` is the claim
 * status to read Finished from (NULL: the claim's own). False when it never
 * expires.
 */
bool wp_claim_expiry(const cJSON *claim, const cJSON *status, int64_t *at_ms);

/** lifecycle.shutdownPolicy, "Retain" when unset. Borrowed or static. */
const char *wp_claim_shutdown_policy(const cJSON *claim);

/** The condition `type` of `status` (status.conditions), or NULL. */
const cJSON *wp_condition(const cJSON *status, const char *type);

/**
 * Set-condition semantics (meta.SetStatusCondition) on `status` (in
 * place): an existing condition of `type` keeps its lastTransitionTime
 * unless its status flips; then, and for a new one, lastTransitionTime is
 * `ltt` when given (a copied condition) else now (`now_ms`). Reason,
 * message and observedGeneration are always set. Returns false on
 * allocation failure.
 */
bool wp_set_condition(cJSON *status, const char *type, const char *cstatus,
                                const char *reason, const char *message,
                                int64_t observed_generation, const char *ltt, int64_t now_ms);

/** The Ready message of an AdoptionConflict error (docs/api.md#claim-conditions; new string). */
char *wp_adoption_conflict_message(const wp_claim_err *e);

/**
 * The new claim status (docs/api.md#claim-conditions) from the claim's current status, the bound
 * Sandbox `sbx` (NULL: none), this pass's error `err` (NULL or
 * WP_CLAIM_OK: none), whether the claim is `expired`, and now. A
 * cache-lag pass with an existing bound name returns the status unchanged.
 * New object (caller frees), NULL on allocation failure.
 */
cJSON *wp_claim_status(const cJSON *claim, const cJSON *sbx, const wp_claim_err *err,
                                 bool expired, int64_t now_ms);

/** A copy of status `st` (NULL: {}) with its conditions sorted by type; NULL on allocation failure. */
cJSON *wp_claim_status_sorted(const cJSON *st);

/** True when two claim statuses are semantically equal (conditions compared sorted by type). */
bool wp_claim_status_equal(const cJSON *a, const cJSON *b);

/**
 * The owned-Sandbox update filter of docs/api.md#claim-controller: true when deletionTimestamp
 * toggles, status.podIPs change, or the whole Ready or Finished condition
 * object changes (metadata/spec-only updates do not wake the claim).
 */
bool wp_claim_sandbox_update_matters(const cJSON *old_sbx, const cJSON *new_sbx);

/** created-by normalized for metrics: go-client, python-client, controller or unknown. */
const char *wp_normalize_created_by(const char *v);

/** Formats ns since the epoch as RFC 3339 with nanoseconds (Go's RFC3339Nano, UTC) into buf (>= 40 bytes). */
char *wp_format_rfc3339nano(int64_t ns, char *buf, size_t cap);

#endif
