/*
 * namehash.c - NameHash (32-bit FNV-1a rendered as 8 hex digits) and the
 * system-key test of docs/api.md#name-hash and #system-metadata-keys, plus the Sandbox resource
 * constant. Everything here is pure and lock-free.
 */
#include <string.h>
#include "sandbox/api.h"
#include "sandbox/namehash.h"

const k8s_resource sbx_resource_sandboxes = {
	.group = SBX_GROUP,
	.version = SBX_VERSION,
	.resource = "sandboxes",
	.kind = SBX_KIND,
	.namespaced = true,
};

char *sbx_name_hash(const char *name, char out[SBX_NAME_HASH_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	uint32_t h = 0x811c9dc5u;

	for (const unsigned char *p = (const unsigned char *)(name ? name : "");
	     *p; p++) {
		h ^= *p;
		h *= 0x01000193u;
	}
	for (int i = 7; i >= 0; i--) {
		out[i] = hex[h & 0xf];
		h >>= 4;
	}
	out[8] = '\0';
	return out;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool sbx_is_system_key(const char *key)
{
	if (!key)
		return false;
	return has_prefix(key, SBX_GROUP "/") ||
	       has_prefix(key, SBX_EXTENSIONS_GROUP "/");
}

bool sbx_is_system_annotation(const char *key)
{
	return sbx_is_system_key(key) ||
	       (key && strcmp(key, SBX_ANNOTATION_TRACE_CONTEXT) == 0);
}
