/*
 * cache.c - the packer of this API's objects (see sandbox/cache.h).
 */
#include "sandbox/cache.h"
#include "sandbox/conversion.h"

/* What Sandboxes, claims, templates and pools repeat, beyond the
 * Kubernetes words k8s_packer knows already. */
static const char *const words[] = {
	SBX_API_VERSION, SBX_GROUP "/v1alpha1", SBX_EXTENSIONS_GROUP "/" SBX_VERSION,
	SBX_EXTENSIONS_GROUP "/v1alpha1",
	SBX_KIND, SBX_KIND_WARM_POOL, SBX_KIND_CLAIM, SBX_KIND_TEMPLATE,
	"podTemplate", "volumeClaimTemplates", "service", "serviceFQDN", "operatingMode",
	"shutdownTime", "shutdownPolicy", "lifecycle", "sandboxTemplateRef", "warmpool",
	"sandbox", "readyReplicas", "updateStrategy", "networkPolicy", "networkPolicyManagement",
	SBX_LABEL_NAME_HASH, SBX_LABEL_WARM_POOL_SANDBOX, SBX_LABEL_TEMPLATE_REF_HASH,
	SBX_LABEL_CREATED_BY, SBX_LABEL_LAUNCH_TYPE, SBX_ANNOTATION_POD_NAME,
	SBX_ANNOTATION_SANDBOX_TEMPLATE_REF, SBX_ANNOTATION_V1BETA1_VCT_POLICY,
	SBX_REASON_DEPENDENCIES_READY, SBX_REASON_DEPENDENCIES_NOT_READY,
	"Pod is Ready; Service Exists", "Pod is Ready", "Pod does not exist",
	"Pod exists with phase: Pending", "Pod is Running but not Ready",
	"Pod is Ready but has no podIPs yet",
};

int sbx_packer_new(k8s_packer **out)
{
	return k8s_packer_new(out, words, sizeof(words) / sizeof(words[0]));
}
