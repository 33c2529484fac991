/*
 * api.h - constants of the agents.x-k8s.io Sandbox API: group, version,
 * kind, the REST resource, the label and annotation keys, the condition
 * types and reasons, and the field manager of the controller.
 *
 * Every string here is an interface fact of upstream agent-sandbox
 * (docs/api.md#quick-reference, #labels, #annotations, #sandbox-condition-types-and-reasons) and is reproduced byte for byte:
 * objects written by this library are read by upstream tools and the other
 * way round. The string constants are macros so they can be used in static
 * initialisers and concatenated at compile time.
 */
#ifndef SANDBOX_API_H
#define SANDBOX_API_H

#include "k8s/resource.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a symbol as part of the public ABI of libsandbox. */
#define SBX_EXTERN __attribute__((visibility("default")))

/* ---- Group, version, kind (docs/api.md#quick-reference) ---- */

/** API group of the core kind. */
#define SBX_GROUP "agents.x-k8s.io"
/** Group of the extension kinds (claims, templates, warm pools). */
#define SBX_EXTENSIONS_GROUP "extensions.agents.x-k8s.io"
/** Storage (and hub) version. */
#define SBX_VERSION "v1beta1"
/** `apiVersion` written in objects and owner references. */
#define SBX_API_VERSION SBX_GROUP "/" SBX_VERSION
/** Kind of the core object. */
#define SBX_KIND "Sandbox"
/** Kind of a warm pool (extensions group), used by docs/api.md#extension-labels. */
#define SBX_KIND_WARM_POOL "SandboxWarmPool"
/** Kind of a claim (extensions group), used by the metrics of docs/api.md#metrics. */
#define SBX_KIND_CLAIM "SandboxClaim"
/** Kind of a template (extensions group), converted per docs/api.md#converting-sandboxtemplate. */
#define SBX_KIND_TEMPLATE "SandboxTemplate"

/**
 * The REST resource of Sandboxes: group agents.x-k8s.io, version v1beta1,
 * plural `sandboxes`, kind Sandbox, namespaced. Read-only; thread-safe.
 */
SBX_EXTERN extern const k8s_resource sbx_resource_sandboxes;

/**
 * Field manager (`fieldManager`) used on every create, update and patch
 * written by the Sandbox controller (docs/api.md#quick-reference).
 */
#define SBX_FIELD_MANAGER "sandbox-controller"

/** Default `--cluster-domain` (docs/api.md#sandbox-status, #controller-flags). */
#define SBX_DEFAULT_CLUSTER_DOMAIN "cluster.local"

/* ---- Label keys (docs/api.md#labels) ---- */

/** Tracking label: NameHash(sandbox name), on Pod, Service and PVC. */
#define SBX_LABEL_NAME_HASH "agents.x-k8s.io/sandbox-name-hash"
/** Warm pool membership: NameHash(pool name). */
#define SBX_LABEL_WARM_POOL_SANDBOX "agents.x-k8s.io/warm-pool-sandbox"
/** Template identity: NameHash(template name). */
#define SBX_LABEL_TEMPLATE_REF_HASH "agents.x-k8s.io/sandbox-template-ref-hash"
/** Provenance; normalised on the Pod (docs/api.md#labels). */
#define SBX_LABEL_CREATED_BY "agents.x-k8s.io/created-by"
/** On a Sandbox: how it originated, `cold` or `warm`. */
#define SBX_LABEL_LAUNCH_TYPE "agents.x-k8s.io/launch-type"
/** `"true"` on an unowned object authorises the controller to adopt it. */
#define SBX_LABEL_ADOPTABLE "agents.x-k8s.io/adoptable"

/* ---- Annotation keys (docs/api.md#annotations) ---- */

/** On the Sandbox: name of the backing Pod. */
#define SBX_ANNOTATION_POD_NAME "agents.x-k8s.io/pod-name"
/** On the Sandbox: the SandboxTemplate it was built from (metrics label). */
#define SBX_ANNOTATION_SANDBOX_TEMPLATE_REF "agents.x-k8s.io/sandbox-template-ref"
/** On the Pod: sorted, comma-joined label keys copied from podTemplate. */
#define SBX_ANNOTATION_PROPAGATED_LABELS "agents.x-k8s.io/propagated-labels"
/** On the Pod: same, for annotation keys. */
#define SBX_ANNOTATION_PROPAGATED_ANNOTATIONS "agents.x-k8s.io/propagated-annotations"
/** W3C trace headers (system annotation, docs/api.md#system-metadata-keys). */
#define SBX_ANNOTATION_TRACE_CONTEXT "opentelemetry.io/trace-context"

/* ---- Condition types (docs/api.md#sandbox-condition-types-and-reasons) ---- */

#define SBX_CONDITION_READY "Ready"
#define SBX_CONDITION_SUSPENDED "Suspended"
#define SBX_CONDITION_FINISHED "Finished"
#define SBX_CONDITION_POD_SCHEDULED "PodScheduled"

/* ---- Condition reasons (docs/api.md#sandbox-condition-types-and-reasons) ---- */

#define SBX_REASON_DEPENDENCIES_READY "DependenciesReady"
#define SBX_REASON_DEPENDENCIES_NOT_READY "DependenciesNotReady"
#define SBX_REASON_MULTIPLE_PODS "MultiplePods"
#define SBX_REASON_SANDBOX_SUSPENDED "SandboxSuspended"
#define SBX_REASON_POD_SUCCEEDED "PodSucceeded"
#define SBX_REASON_POD_FAILED "PodFailed"
#define SBX_REASON_SANDBOX_EXPIRED "SandboxExpired"
#define SBX_REASON_POD_TERMINATED "PodTerminated"
#define SBX_REASON_POD_TERMINATING "PodTerminating"
/** Deprecated upstream and never emitted; kept for completeness. */
#define SBX_REASON_POD_NOT_TERMINATED "PodNotTerminated"
#define SBX_REASON_POD_NOT_OWNED "PodNotOwned"
#define SBX_REASON_NOT_SUSPENDED "NotSuspended"
#define SBX_REASON_POD_STATE_UNKNOWN "PodStateUnknown"
#define SBX_REASON_POD_SCHEDULED "PodScheduled"
#define SBX_REASON_POD_SCHEDULING_UNKNOWN "PodSchedulingUnknown"
#define SBX_REASON_RECONCILER_ERROR "ReconcilerError"

/* ---- Spec enum values (docs/api.md#sandbox-spec) ---- */

#define SBX_OPERATING_MODE_RUNNING "Running"
#define SBX_OPERATING_MODE_SUSPENDED "Suspended"
#define SBX_SHUTDOWN_POLICY_DELETE "Delete"
#define SBX_SHUTDOWN_POLICY_RETAIN "Retain"

/* ---- Events (docs/api.md#sandbox-events, #events) ---- */

/** Reporting controller name of the Sandbox controller's events. */
#define SBX_EVENT_CONTROLLER "sandbox-controller"
/** Action of the MultiplePods Warning event. */
#define SBX_EVENT_ACTION_RECONCILING "Reconciling"

#ifdef __cplusplus
}
#endif
#endif
