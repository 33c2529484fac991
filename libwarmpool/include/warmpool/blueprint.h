/*
 * blueprint.h - what a SandboxTemplate stamps onto a Sandbox, shared by the
 * SandboxWarmPool and SandboxClaim controllers: the blueprint
 * {podTemplate, volumeClaimTemplates, service} (docs/api.md#sandboxtemplate-spec) plus
 * our {idleTimeoutSeconds, idlePolicy} (docs/api.md#idle-suspend-and-resume), the
 * secure defaults applied to its pod spec (docs/api.md#secure-defaults), its content hashes (docs/api.md#name-hash)
 * and the staleness test of a Sandbox against the current template (docs/api.md#staleness-and-update-strategies).
 *
 * All functions are pure (no I/O, no global state) and thread-safe; they
 * never modify their const arguments.
 */
#ifndef WARMPOOL_BLUEPRINT_H
#define WARMPOOL_BLUEPRINT_H

#include <stdbool.h>
#include <cjson/cJSON.h>
#include "sandbox/namehash.h"
#include "warmpool/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * True when the SandboxTemplate `tpl` (a whole object) is in "secure by
 * default" network mode (docs/api.md#secure-defaults): spec.networkPolicyManagement is Managed or
 * empty AND spec.networkPolicy is absent/null.
 */
WP_EXTERN bool wp_template_secure_by_default(const cJSON *tpl);

/**
 * Applies the secure defaults of docs/api.md#secure-defaults to `pod_spec` (a PodSpec object,
 * modified in place): automountServiceAccountToken false when unset; when
 * `secure_by_default` and dnsPolicy is empty, dnsPolicy "None" and dnsConfig
 * replaced by {nameservers: ["8.8.8.8", "1.1.1.1"]}.
 *
 * @return 0; ASB_EINVAL for a NULL or non-object `pod_spec`; ASB_ENOMEM.
 */
WP_EXTERN int wp_apply_secure_defaults(cJSON *pod_spec, bool secure_by_default);

/**
 * A new object {podTemplate, volumeClaimTemplates, service,
 * idleTimeoutSeconds, idlePolicy} deep-copied from `tpl`.spec (members
 * absent or null in the template are absent in the result, so a template
 * without the idle fields, ours, gives upstream's three members).
 * The caller frees it with cJSON_Delete(). NULL (ASB_EINVAL or ASB_ENOMEM
 * recorded) when `tpl` has no spec.podTemplate or on allocation failure.
 */
WP_EXTERN cJSON *wp_blueprint_new(const cJSON *tpl);

/**
 * Writes the blueprint hash of `tpl` (NameHash of the blueprint's JSON,
 * docs/api.md#name-hash) into `out`. The JSON is this implementation's canonical form
 * (members in the order served), so values differ from the Go controller's;
 * docs/api.md#staleness-and-update-strategies's semantic comparison makes that harmless.
 *
 * @return 0; ASB_EINVAL when `tpl` has no spec.podTemplate; ASB_ENOMEM.
 */
WP_EXTERN int wp_blueprint_hash(const cJSON *tpl, char out[SBX_NAME_HASH_SIZE]);

/**
 * Writes the pod-template hash of `tpl` (NameHash of the JSON of
 * spec.podTemplate, docs/api.md#name-hash) into `out`. Errors as wp_blueprint_hash().
 */
WP_EXTERN int wp_pod_template_hash(const cJSON *tpl, char out[SBX_NAME_HASH_SIZE]);

/**
 * The semantic blueprint comparison of docs/api.md#staleness-and-update-strategies: true when the Sandbox `sbx`
 * (whole object) differs from what `tpl` would build: the template's pod
 * spec with secure defaults applied vs sbx.spec.podTemplate.spec, the VCT
 * lists (same length; index by index same name and semantically equal
 * spec; metadata ignored), `service`, and the idle policy (ours: the
 * sbx_idle_policy_at() of both specs, so an absent idlePolicy equals
 * "Suspend"). Pod template metadata and the template's other policies
 * are ignored, so metadata-only edits never make a
 * Sandbox stale. Semantic equality: a missing member equals its zero value
 * and nil lists/maps equal empty ones; `service` is a pointer (absent,
 * false and true all differ). Resource quantities compare by value ("1Gi"
 * equals "1024Mi", "0.5" equals "500m" and the number 1 equals "1") where
 * PodSpec and PersistentVolumeClaimSpec hold them: container (init,
 * ephemeral) and pod resources limits/requests, overhead, VCT resources;
 * values equal to 15 significant digits are equal. Out of memory reads as
 * "differs".
 */
WP_EXTERN bool wp_blueprint_differs(const cJSON *tpl, const cJSON *sbx);

/**
 * The staleness verdict of docs/api.md#staleness-and-update-strategies for the pool member `sbx` against the
 * current template `tpl` (whole objects; `tpl_hash` its wp_blueprint_hash(),
 * NULL when it could not be computed):
 *  - its sandbox-template-ref-hash label differs from NameHash(tpl name):
 *    stale;
 *  - `owned` (controlled by the pool): stale when its
 *    sandbox-template-hash label differs from `tpl_hash` AND
 *    wp_blueprint_differs(); fresh when `tpl_hash` is NULL;
 *  - orphan (!owned): stale when wp_blueprint_differs().
 */
WP_EXTERN bool wp_sandbox_is_stale(const cJSON *tpl, const char *tpl_hash,
                                   const cJSON *sbx, bool owned);

#ifdef __cplusplus
}
#endif
#endif
