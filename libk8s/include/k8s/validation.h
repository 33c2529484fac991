/*
 * validation.h - Kubernetes name, label-key and label-value rules, with
 * the messages of upstream apimachinery
 * (k8s.io/apimachinery/pkg/util/validation, IsQualifiedName,
 * IsValidLabelValue, IsDNS1123Label, IsDNS1123Subdomain; see
 * https://kubernetes.io/docs/concepts/overview/working-with-objects/names/
 * and https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).
 *
 * Clients use them to refuse a bad label before the API server does, with
 * the same words; the extension controllers use them on a claim's
 * additionalPodMetadata. Pure functions; thread-safe.
 */
#ifndef K8S_VALIDATION_H
#define K8S_VALIDATION_H

#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A buffer this size holds every message of the checks below. */
#define K8S_VALIDATION_MSG_SIZE 1024

/**
 * Checks `s` as a qualified name (a label or annotation key): an optional
 * DNS-1123 subdomain prefix of at most 253 characters and a `/`, then a
 * name of 1-63 characters `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
 * NULL `s` is checked as "".
 *
 * @param msg  receives, when invalid, every upstream message that applies
 *             joined by "; " (e.g. "name part must be no more than 63
 *             characters"), NUL-terminated and cut to `cap` bytes;
 *             K8S_VALIDATION_MSG_SIZE is always enough. May be NULL when
 *             `cap` is 0. Left untouched when valid.
 * @return 0 when valid, ASB_EINVAL when not (nothing is recorded in
 *         asb_error_last(): the caller words the error).
 */
K8S_EXTERN int k8s_validate_qualified_name(const char *s, char *msg, size_t cap);

/**
 * Checks `s` as a label value: empty, or at most 63 characters matching
 * `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`. Arguments and return as
 * k8s_validate_qualified_name().
 */
K8S_EXTERN int k8s_validate_label_value(const char *s, char *msg, size_t cap);

/**
 * True when `s` is a DNS-1123 label (RFC 1123): 1-63 characters of
 * `[a-z0-9-]`, starting and ending with an alphanumeric (namespaces,
 * Service names, the router's X-Sandbox-ID). NULL is not.
 */
K8S_EXTERN bool k8s_is_dns1123_label(const char *s);

/**
 * True when `s` is a DNS-1123 subdomain: at most 253 characters of
 * dot-separated DNS-1123 labels (most object names). NULL is not.
 */
K8S_EXTERN bool k8s_is_dns1123_subdomain(const char *s);

#ifdef __cplusplus
}
#endif
#endif
