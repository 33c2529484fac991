/*
 * clientclaim.h - the pure half of the client (sandbox/client.h): the
 * SandboxClaim an SDK writes (docs/upstream.md#claim-manifest), and what a claim read
 * from a watch says about the wait (docs/upstream.md#readiness-wait, docs/api.md#claim-conditions). No I/O: these
 * are unit-tested on JSON, and any client that watches claims in its own
 * way can decide with them.
 *
 * Pure functions; thread-safe on distinct or read-only arguments.
 */
#ifndef SANDBOX_CLIENTCLAIM_H
#define SANDBOX_CLIENTCLAIM_H

#include <cjson/cJSON.h>
#include "sandbox/client.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Annotation the SDKs stamp on a claim: when the client asked (docs/api.md#quick-reference). */
#define SBX_ANNOTATION_CLIENT_FIRST_REQUESTED "agents.x-k8s.io/client-first-requested-at"
/** Prefix of generated claim names. */
#define SBX_CLAIM_NAME_PREFIX "sandbox-claim-"
/** Buffer size of a generated claim name: prefix, 8 hex digits, NUL. */
#define SBX_CLAIM_NAME_SIZE 23

/**
 * Writes a new claim name, "sandbox-claim-" and 8 lowercase hex digits of
 * the kernel's random source (getrandom(2); upstream takes a uuid4's
 * first 8). Returns 0, or ASB_ERROR when no random bytes could be read.
 * Thread-safe.
 */
SBX_EXTERN int sbx_claim_name_generate(char out[SBX_CLAIM_NAME_SIZE]);

/**
 * Builds the SandboxClaim of docs/upstream.md#claim-manifest:
 * `apiVersion: extensions.agents.x-k8s.io/v1beta1`, `kind: SandboxClaim`;
 * metadata name `name` and namespace `ns`; labels = `opts->labels` +
 * `agents.x-k8s.io/created-by`; annotations = `opts->annotations` +
 * `agents.x-k8s.io/client-first-requested-at` = `now_us` as UTC ISO-8601
 * with microseconds ("2026-01-02T03:04:05.123456+00:00", what Python's
 * isoformat() writes) unless the caller supplied that key; spec
 * `warmPoolRef.name`, `lifecycle` {shutdownTime: now + N s as
 * "YYYY-MM-DDTHH:MM:SSZ", shutdownPolicy} when shutdown_after_seconds > 0,
 * `volumeClaimTemplates` when given, `env` [{name, value}] when given,
 * `additionalPodMetadata` {labels, annotations} with empty sections left
 * out.
 *
 * Checked here, as upstream does client-side: warm_pool non-empty; label
 * keys and pod label keys are qualified names and their values label
 * values; annotation keys (claim and pod) qualified names;
 * shutdown_after_seconds >= 0; the templates JSON an array of objects;
 * env names non-empty.
 *
 * @param now_us  wall-clock time, microseconds since the Unix epoch.
 * @param out     receives the new object; the caller frees it with
 *                cJSON_Delete().
 * @return 0; ASB_EINVAL with a message naming the field and the rule
 *         (e.g. `invalid label key "-x": name part must consist of ...`);
 *         ASB_ENOMEM.
 */
SBX_EXTERN int sbx_claim_build(const sbx_claim_options *opts, const char *ns,
                               const char *name, int64_t now_us, cJSON **out);

/** sbx_claim_outcome(): the claim is not there yet; keep waiting. */
#define SBX_CLAIM_PENDING 0
/** sbx_claim_outcome(): resolved (sandbox name set, Ready if asked). */
#define SBX_CLAIM_RESOLVED 1

/**
 * Decides what a claim seen on the watch means (docs/upstream.md#readiness-wait):
 * conditions are scanned in order and the first fail-fast match wins: any
 * condition (whatever its type and status) with reason WarmPoolNotFound is
 * SBX_EWARMPOOLNOTFOUND; a `Ready`=`False` condition with reason
 * TemplateNotFound, InvalidMetadata, EnvVarsInjectionRejected,
 * VolumeClaimTemplatesError, ClaimExpired or SandboxExpired is its own
 * SBX_E* code. Otherwise the claim is resolved when `status.sandbox.name`
 * (or the legacy `status.sandbox.Name`) is set and, when `need_ready`,
 * its Ready condition is `True`.
 *
 * @param sandbox_name  (may be NULL) receives the bound Sandbox's name
 *                      when set, else NULL; borrowed from `claim`.
 * @param reason, message (may be NULL) receive, for a fail-fast code, the
 *                      condition's reason and message (borrowed), else NULL.
 * @return SBX_CLAIM_PENDING, SBX_CLAIM_RESOLVED, or a negative SBX_E*
 *         code. Nothing is recorded in asb_error_last().
 */
SBX_EXTERN int sbx_claim_outcome(const cJSON *claim, bool need_ready,
                                 const char **sandbox_name, const char **reason,
                                 const char **message);

/** Buffer size for sbx_pick_pod_ip() (INET6_ADDRSTRLEN). */
#define SBX_IP_SIZE 46

/**
 * Picks the address to reach a pod at from a `podIPs` array (strings or
 * {"ip": ...} objects, as Sandbox and claim status hold them; upstream's
 * get_pod_ip()): the first IPv4 address, an IPv4-mapped IPv6 address
 * counting as its IPv4 form; else the first valid IPv6 address; entries
 * that are not IP addresses are skipped. Writes it to `buf` and returns
 * `buf`, or returns NULL (buf untouched) when there is none.
 */
SBX_EXTERN const char *sbx_pick_pod_ip(const cJSON *pod_ips, char buf[SBX_IP_SIZE]);

/**
 * Formats `us` (microseconds since the epoch) as UTC ISO-8601 with
 * microseconds and a "+00:00" offset into `buf` (at least 33 bytes).
 * Returns `buf`.
 */
SBX_EXTERN char *sbx_time_format_iso_us(int64_t us, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
