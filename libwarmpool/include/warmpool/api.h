/*
 * api.h - the extensions.agents.x-k8s.io API: SandboxTemplate, SandboxClaim
 * and SandboxWarmPool (docs/api.md#sandboxtemplate, #sandboxclaim-and-sandboxwarmpool), their resources, and the label,
 * annotation, condition and reason strings the extension controllers
 * write (byte-exact interface facts of the upstream API).
 *
 * libwarmpool builds on libsandbox (sandbox/api.h holds the Sandbox API and
 * the labels shared with it) and libk8s.
 */
#ifndef WARMPOOL_API_H
#define WARMPOOL_API_H

#include "k8s/resource.h"
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WP_EXTERN __attribute__((visibility("default")))
#else
#define WP_EXTERN
#endif

/** Storage (hub) version of the extension kinds. */
#define WP_VERSION "v1beta1"
/** apiVersion of the extension kinds: "extensions.agents.x-k8s.io/v1beta1". */
#define WP_API_VERSION SBX_EXTENSIONS_GROUP "/" WP_VERSION

/** extensions.agents.x-k8s.io/v1beta1 sandboxtemplates (namespaced). */
WP_EXTERN extern const k8s_resource wp_resource_templates;
/** extensions.agents.x-k8s.io/v1beta1 sandboxclaims (namespaced; status). */
WP_EXTERN extern const k8s_resource wp_resource_claims;
/** extensions.agents.x-k8s.io/v1beta1 sandboxwarmpools (namespaced; status, scale). */
WP_EXTERN extern const k8s_resource wp_resource_pools;
/** networking.k8s.io/v1 networkpolicies (namespaced). */
WP_EXTERN extern const k8s_resource wp_resource_networkpolicies;

/* ---- labels and annotations (docs/api.md#labels, #annotations) ---- */

/** Pool Sandbox: blueprint content hash (docs/api.md#staleness-and-update-strategies); removed on adoption. */
#define WP_LABEL_TEMPLATE_HASH "agents.x-k8s.io/sandbox-template-hash"
/** Pool Sandbox: pod-template content hash (deprecated, still written). */
#define WP_LABEL_POD_TEMPLATE_HASH "agents.x-k8s.io/sandbox-pod-template-hash"
/** Claim-owned Sandbox (top level and podTemplate): the claim UID. */
#define WP_LABEL_CLAIM_UID "agents.x-k8s.io/claim-uid"
/** Legacy label form of WP_ANNOTATION_SANDBOX_NAME on a SandboxClaim. */
#define WP_LABEL_SANDBOX_NAME "agents.x-k8s.io/sandbox-name"
/** SandboxClaim: name of the assigned (adopted) Sandbox. */
#define WP_ANNOTATION_SANDBOX_NAME "agents.x-k8s.io/sandbox-name"
/** SandboxClaim: RFC 3339 (nanoseconds) time the controller first saw it. */
#define WP_ANNOTATION_CONTROLLER_FIRST_OBSERVED "agents.x-k8s.io/controller-first-observed-at"
/** SandboxClaim: RFC 3339 (nanoseconds) time of its first Ready, or "unknown". */
#define WP_ANNOTATION_CLAIM_FIRST_READY "agents.x-k8s.io/claim-first-ready-at"
/** SandboxClaim: set by an external webhook; read only. */
#define WP_ANNOTATION_WEBHOOK_FIRST_OBSERVED "agents.x-k8s.io/webhook-first-observed-at"
/** SandboxClaim: set by SDK clients; read only. */
#define WP_ANNOTATION_CLIENT_FIRST_REQUESTED "agents.x-k8s.io/client-first-requested-at"
/** Pool Sandbox podTemplate: lets the cluster autoscaler evict warm pods. */
#define WP_ANNOTATION_SAFE_TO_EVICT "cluster-autoscaler.kubernetes.io/safe-to-evict"

/** Values of SBX_LABEL_LAUNCH_TYPE. */
#define WP_LAUNCH_TYPE_WARM "warm"
#define WP_LAUNCH_TYPE_COLD "cold"
/** Value of SBX_LABEL_CREATED_BY on pool members. */
#define WP_CREATED_BY_CONTROLLER "controller"

/* ---- enums of the specs (docs/api.md#sandboxtemplate-spec, #sandboxclaim-and-sandboxwarmpool) ---- */

#define WP_NETWORK_POLICY_MANAGED "Managed"
#define WP_NETWORK_POLICY_UNMANAGED "Unmanaged"
#define WP_POLICY_ALLOWED "Allowed"
#define WP_POLICY_OVERRIDES "Overrides"
#define WP_POLICY_DISALLOWED "Disallowed"
#define WP_UPDATE_STRATEGY_RECREATE "Recreate"
#define WP_UPDATE_STRATEGY_ON_REPLENISH "OnReplenish"
/** Ours (docs/api.md#rolling-update): new members first, old ones go as new ones are Ready. */
#define WP_UPDATE_STRATEGY_ROLLING "RollingUpdate"
/** The pool condition of a rolling update (docs/api.md#rolling-update). */
#define WP_CONDITION_PROGRESSING "Progressing"
#define WP_SHUTDOWN_POLICY_DELETE_FOREGROUND "DeleteForeground"

/* ---- SandboxClaim condition reasons (docs/api.md#claim-conditions) ---- */

#define WP_REASON_TEMPLATE_NOT_FOUND "TemplateNotFound"
#define WP_REASON_WARM_POOL_NOT_FOUND "WarmPoolNotFound"
#define WP_REASON_ADOPTION_CONFLICT "AdoptionConflict"
#define WP_REASON_SANDBOX_CREATE_PENDING "SandboxCreatePending"
#define WP_REASON_INVALID_METADATA "InvalidMetadata"
#define WP_REASON_ENV_REJECTED "EnvVarsInjectionRejected"
#define WP_REASON_VCT_ERROR "VolumeClaimTemplatesError"
#define WP_REASON_CLAIM_EXPIRED "ClaimExpired"
#define WP_REASON_SANDBOX_MISSING "SandboxMissing"
#define WP_REASON_SANDBOX_NOT_READY "SandboxNotReady"

/* ---- events (docs/api.md#events) and their reporting controllers (docs/api.md#quick-reference) ---- */

#define WP_EVENT_CONTROLLER_CLAIM "sandboxclaim-controller"
#define WP_EVENT_CONTROLLER_TEMPLATE "sandboxtemplate-controller"
#define WP_EVENT_CONTROLLER_POOL "sandboxwarmpool-controller"

#ifdef __cplusplus
}
#endif
#endif
