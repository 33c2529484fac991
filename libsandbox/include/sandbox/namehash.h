/*
 * namehash.h - the name hash used in every tracking label, and the test for
 * system-reserved metadata keys.
 *
 * Object names may be 253 characters long but label values only 63, so a
 * name is never put in a label: its 8-hex-digit FNV-1a hash is
 * (docs/api.md#name-hash). Keys under the agents.x-k8s.io prefixes belong to the
 * controllers and are never copied from a user's pod template (docs/api.md#system-metadata-keys).
 */
#ifndef SANDBOX_NAMEHASH_H
#define SANDBOX_NAMEHASH_H

#include <stdbool.h>
#include "sandbox/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Size of the buffer sbx_name_hash() writes: 8 hex digits and a NUL. */
#define SBX_NAME_HASH_SIZE 9

/**
 * Writes NameHash(name) into `out`: the 32-bit FNV-1a hash (offset basis
 * 0x811c9dc5, prime 0x01000193) of the bytes of `name`, as exactly 8
 * lowercase, zero-padded hex digits and a terminating NUL
 * (docs/api.md#name-hash). Example: "my-sandbox" => "374de8f5". A NULL `name` hashes as "".
 *
 * Returns `out`. Pure; thread-safe; never fails.
 */
SBX_EXTERN char *sbx_name_hash(const char *name, char out[SBX_NAME_HASH_SIZE]);

/**
 * True when `key` (a label or annotation key) starts with one of the
 * system-reserved prefixes `agents.x-k8s.io/` or
 * `extensions.agents.x-k8s.io/` (docs/api.md#system-metadata-keys). NULL is not a system key.
 * Pure; thread-safe.
 */
SBX_EXTERN bool sbx_is_system_key(const char *key);

/**
 * True when annotation `key` is system-reserved: sbx_is_system_key(), or
 * exactly `opentelemetry.io/trace-context` (docs/api.md#system-metadata-keys). Pure;
 * thread-safe.
 */
SBX_EXTERN bool sbx_is_system_annotation(const char *key);

#ifdef __cplusplus
}
#endif
#endif
