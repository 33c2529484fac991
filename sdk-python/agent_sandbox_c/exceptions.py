"""The exceptions of the SDK: upstream's names and hierarchy
(docs/upstream.md#sdk-exceptions), so ``except`` clauses written for
``k8s_agent_sandbox`` keep working.

Besides these, a wait that runs out raises the builtin ``TimeoutError``, a
bad argument ``ValueError``, and an answer the runtime should not have
given ``RuntimeError``.
"""
from __future__ import annotations

from typing import Any


class SandboxError(RuntimeError):
    """Base class of every SDK error."""


class SandboxNotReadyError(SandboxError):
    """The sandbox (or the handle on it) can not serve requests."""


class SandboxNotFoundError(SandboxError):
    """The claim or the Sandbox does not exist (any more)."""


class SnapshotNotFoundError(SandboxError):
    """A pod snapshot was not found (GKE extension; not raised by this SDK)."""


class SandboxTemplateNotFoundError(SandboxError):
    """The warm pool's SandboxTemplate does not exist (claim reason TemplateNotFound)."""


class SandboxWarmPoolNotFoundError(SandboxError):
    """The SandboxWarmPool named by the claim does not exist (reason WarmPoolNotFound)."""


class SandboxPortForwardError(SandboxError):
    """The local kubectl port-forward tunnel failed to start or died."""


class SandboxMetadataError(SandboxError):
    """The claim was deleted while the client waited for it."""


class SandboxClaimFailedError(SandboxError):
    """The controller failed the claim for good (InvalidMetadata,
    EnvVarsInjectionRejected, VolumeClaimTemplatesError, ClaimExpired,
    SandboxExpired); ``reason`` holds the condition's reason."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class SandboxRequestError(SandboxError):
    """A request to the sandbox (through the router) failed: an error status
    (``status_code``), or no answer at all (``status_code`` None)."""

    def __init__(self, message: str, status_code: int | None = None,
                 response: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.response = response


class SandboxNoServiceError(SandboxError):
    """Connecting by Service (``SandboxdInClusterConnectionConfig(mode=
    "in-cluster-service")``) to a Sandbox whose status has no
    ``serviceFQDN`` (its template does not ask for a Service)."""


#: upstream 1.0.8's deprecated name of SandboxNoServiceError: the same class
SandboxServiceUnavailableError = SandboxNoServiceError


class SandboxApiError(SandboxError):
    """A Kubernetes API call failed (upstream lets the kubernetes client's
    ``ApiException`` through); ``status`` is the HTTP status, ``reason`` the
    API Status reason (e.g. ``Forbidden``), ``code`` libsandbox's code."""

    def __init__(self, message: str, code: int = -1, status: int | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.code, self.status, self.reason = code, status, reason
