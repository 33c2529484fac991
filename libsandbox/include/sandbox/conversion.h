/*
 * conversion.h - version conversion of the agents.x-k8s.io kinds
 * (v1alpha1 <-> v1beta1, hub v1beta1) and the apiextensions.k8s.io
 * ConversionReview a CRD conversion webhook answers.
 *
 * Behaviour: docs/api.md#conversion (general pattern and docs/api.md#converting-sandbox Sandbox). Protocol:
 * https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#webhook-request-and-response
 *
 * Every kind follows one pattern: metadata is copied, spec and status are
 * mapped field by field; going to the hub (v1alpha1 -> v1beta1) a JSON
 * snapshot of the v1alpha1 object (without its own snapshot annotation and
 * without metadata.managedFields, which only the API server reads) is
 * stored in the annotation `api.agents.x-k8s.io/v1alpha1-<kind>-state`;
 * coming back from the hub that annotation is always removed from the
 * output and may restore fields v1beta1 cannot express. Kinds are rows of
 * a table in conversion.c: Sandbox (docs/api.md#converting-sandbox) in agents.x-k8s.io, and
 * SandboxClaim (docs/api.md#converting-sandboxclaim), SandboxTemplate (docs/api.md#converting-sandboxtemplate) and SandboxWarmPool (docs/api.md#converting-sandboxwarmpool)
 * in extensions.agents.x-k8s.io.
 *
 * Everything here is pure (no I/O, no clock, no global state) and
 * thread-safe. Errors: a negative ASB_E* code, with the message in
 * asb_error_last() of the calling thread.
 */
#ifndef SANDBOX_CONVERSION_H
#define SANDBOX_CONVERSION_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The deprecated, still served version of every agents.x-k8s.io kind. */
#define SBX_VERSION_V1ALPHA1 "v1alpha1"
/** `apiVersion` of a v1alpha1 Sandbox. */
#define SBX_API_VERSION_V1ALPHA1 SBX_GROUP "/" SBX_VERSION_V1ALPHA1

/**
 * Annotation on a stored (v1beta1) Sandbox holding the JSON of the
 * v1alpha1 object it was written as (docs/api.md#annotations, #converting-sandbox).
 */
#define SBX_ANNOTATION_V1ALPHA1_SANDBOX_STATE "api.agents.x-k8s.io/v1alpha1-sandbox-state"

/** `apiVersion` of a v1alpha1 extension kind (claim, template, warm pool). */
#define SBX_EXT_API_VERSION_V1ALPHA1 SBX_EXTENSIONS_GROUP "/" SBX_VERSION_V1ALPHA1
/** `apiVersion` of a v1beta1 (hub) extension kind. */
#define SBX_EXT_API_VERSION SBX_EXTENSIONS_GROUP "/" SBX_VERSION

/**
 * Annotation on a stored (v1beta1) SandboxClaim holding the JSON of the
 * v1alpha1 object it was written as; restores `sandboxTemplateRef` and
 * `warmpool` on the way back (docs/api.md#converting-sandboxclaim).
 */
#define SBX_ANNOTATION_V1ALPHA1_SANDBOXCLAIM_STATE "api.agents.x-k8s.io/v1alpha1-sandboxclaim-state"
/**
 * Annotation on a stored (v1beta1) SandboxTemplate holding the JSON of the
 * v1alpha1 object; written, never used to restore (docs/api.md#converting-sandboxtemplate).
 */
#define SBX_ANNOTATION_V1ALPHA1_SANDBOXTEMPLATE_STATE "api.agents.x-k8s.io/v1alpha1-sandboxtemplate-state"
/**
 * Annotation on a stored (v1beta1) SandboxWarmPool holding the JSON of the
 * v1alpha1 object; written, stripped on read-back, never used (docs/api.md#converting-sandboxwarmpool).
 */
#define SBX_ANNOTATION_V1ALPHA1_SANDBOXWARMPOOL_STATE "api.agents.x-k8s.io/v1alpha1-sandboxwarmpool-state"
/**
 * Annotation on a v1alpha1 SandboxTemplate carrying the v1beta1-only
 * `spec.volumeClaimTemplatesPolicy` (docs/api.md#sandboxtemplate-v1alpha1, #converting-sandboxtemplate).
 */
#define SBX_ANNOTATION_V1BETA1_VCT_POLICY "api.agents.x-k8s.io/v1beta1-volume-claim-templates-policy"
/**
 * Prefix of the pool a v1alpha1 claim without a specific pool converts to:
 * `shadow-pool-<sandboxTemplateRef.name>` (docs/api.md#converting-sandboxclaim, #migrating-from-v1alpha1).
 */
#define SBX_SHADOW_POOL_PREFIX "shadow-pool-"

/**
 * Converts one object to `desired_api_version` ("agents.x-k8s.io/v1beta1"
 * or "agents.x-k8s.io/v1alpha1" for a Sandbox;
 * "extensions.agents.x-k8s.io/v1beta1" or ".../v1alpha1" for a
 * SandboxClaim, SandboxTemplate or SandboxWarmPool). The object's own
 * `apiVersion` and `kind` select the conversion; an object already at the
 * desired version is copied unchanged.
 *
 * @param out   receives a new object (caller frees with cJSON_Delete());
 *              NULL on error
 * @param obj   the object (borrowed, not modified)
 * @param desired_api_version  "group/version"
 * @return 0; ASB_EINVAL (NULL argument, object without apiVersion/kind, a
 *         kind or version this library does not convert, a group other
 *         than the object's); ASB_EDECODE (a field of the wrong type, or a
 *         snapshot annotation that is not a JSON object: the message is
 *         "failed to unmarshal v1alpha1 <Kind> state: <cause>"; a v1alpha1
 *         SandboxTemplate whose volume-claim-templates-policy annotation
 *         is not Disallowed, Allowed or Overrides: the message is
 *         "invalid VolumeClaimTemplatesPolicy annotation value: \"<v>\"",
 *         docs/api.md#converting-sandboxtemplate);
 *         ASB_ENOMEM.
 */
SBX_EXTERN int sbx_conversion_convert(cJSON **out, const cJSON *obj,
                                      const char *desired_api_version);

/**
 * Answers one ConversionReview (apiextensions.k8s.io/v1 or /v1beta1): the
 * HTTP body a CRD conversion webhook receives, and the body to send back.
 *
 * The response has the request's apiVersion, kind ConversionReview and
 * `response.uid` = `request.uid`. When every object converts,
 * `response.convertedObjects` holds them in order and `response.result`
 * is `{"status":"Success"}`; otherwise `convertedObjects` is empty and
 * `result` is `{"status":"Failure","message":...}` naming the object
 * (index, kind, namespace/name) and the cause. A request that is a
 * ConversionReview but lacks `uid`, `desiredAPIVersion` or `objects` also
 * gets a Failure result.
 *
 * @param body, len   the request body (need not be NUL-terminated)
 * @param response    receives the JSON response body (malloc'd; caller
 *                    frees), only when 0 is returned
 * @param failure     optional; receives a copy of the Failure message
 *                    (malloc'd; caller frees) or NULL on Success
 * @return 0 (a response was produced, Success or Failure); ASB_EDECODE
 *         when the body is not a ConversionReview at all (not JSON, not
 *         an object, another kind or apiVersion, no `request` object):
 *         answer HTTP 400 with asb_error_last()->message; ASB_EINVAL for
 *         NULL arguments; ASB_ENOMEM.
 */
SBX_EXTERN int sbx_conversion_review(const char *body, size_t len,
                                     char **response, char **failure);

#ifdef __cplusplus
}
#endif
#endif
