/*
 * resources.c - the API resources of the extension kinds (docs/api.md#quick-reference)
 * and of the NetworkPolicies the SandboxTemplate controller manages (docs/api.md#sandboxtemplate-controller).
 */
#include "warmpool/api.h"

const k8s_resource wp_resource_templates = {
	.group = SBX_EXTENSIONS_GROUP, .version = WP_VERSION,
	.resource = "sandboxtemplates", .kind = SBX_KIND_TEMPLATE, .namespaced = true,
};

const k8s_resource wp_resource_claims = {
	.group = SBX_EXTENSIONS_GROUP, .version = WP_VERSION,
	.resource = "sandboxclaims", .kind = SBX_KIND_CLAIM, .namespaced = true,
};

const k8s_resource wp_resource_pools = {
	.group = SBX_EXTENSIONS_GROUP, .version = WP_VERSION,
	.resource = "sandboxwarmpools", .kind = SBX_KIND_WARM_POOL, .namespaced = true,
};

const k8s_resource wp_resource_networkpolicies = {
	.group = "networking.k8s.io", .version = "v1",
	.resource = "networkpolicies", .kind = "NetworkPolicy", .namespaced = true,
};
