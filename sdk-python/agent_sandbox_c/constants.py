"""The Kubernetes names the SDK works with, under upstream's constant names
(``k8s_agent_sandbox.constants``). The client's requests are libsandbox's;
these are for code that builds or reads the same objects itself."""

GATEWAY_API_GROUP = "gateway.networking.k8s.io"
GATEWAY_API_VERSION = "v1"
GATEWAY_PLURAL = "gateways"

CLAIM_API_GROUP = "extensions.agents.x-k8s.io"
CLAIM_API_VERSION = "v1beta1"
CLAIM_PLURAL_NAME = "sandboxclaims"

SANDBOX_API_GROUP = "agents.x-k8s.io"
SANDBOX_API_VERSION = "v1beta1"
SANDBOX_PLURAL_NAME = "sandboxes"

#: the claim annotation with the client's first request time (UTC ISO-8601)
CLIENT_REQUEST_TIME_ANNOTATION = "agents.x-k8s.io/client-first-requested-at"
#: the Sandbox annotation naming its pod when that is not the Sandbox's name
POD_NAME_ANNOTATION = "agents.x-k8s.io/pod-name"
#: the claim label saying who created it (``python-client``)
CREATED_BY_LABEL = "agents.x-k8s.io/created-by"
SANDBOX_NAME_HASH_LABEL = "agents.x-k8s.io/sandbox-name-hash"

# GKE pod snapshots (upstream's gke_extensions; not used by this package)
PODSNAPSHOT_POD_NAME_ANNOTATION = "podsnapshot.gke.io/origin-pod"
PODSNAPSHOT_NAME_ANNOTATION = "podsnapshot.gke.io/ps-name"
PODSNAPSHOT_API_GROUP = "podsnapshot.gke.io"
PODSNAPSHOT_API_VERSION = "v1"
PODSNAPSHOT_PLURAL = "podsnapshots"
PODSNAPSHOTMANUALTRIGGER_PLURAL = "podsnapshotmanualtriggers"
PODSNAPSHOTMANUALTRIGGER_API_KIND = "PodSnapshotManualTrigger"
PODSNAPSHOT_API_KIND = "PodSnapshot"

#: the claim Ready=False reasons on which create_sandbox() stops waiting at
#: once (SandboxClaimFailedError): those this project's controller sets for
#: good (sbx_error_is_claim_failure() in libsandbox)
TERMINAL_CLAIM_READY_REASONS = frozenset({
    "InvalidMetadata", "EnvVarsInjectionRejected", "VolumeClaimTemplatesError",
    "ClaimExpired", "SandboxExpired",
})
