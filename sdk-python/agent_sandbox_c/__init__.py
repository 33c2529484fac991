"""agent_sandbox_c: the Python SDK of agent-sandbox, over libsandbox's C core.

A drop-in for upstream's ``k8s_agent_sandbox``: same classes, methods,
arguments and exceptions (docs/upstream.md#sdk-package to #sdk-exceptions). Switching is one
import line::

    from k8s_agent_sandbox import SandboxClient      # upstream
    from agent_sandbox_c import SandboxClient        # this package

Upstream's module paths are here too (``agent_sandbox_c.sandbox_client``,
``.async_sandbox_client``, ``.files.filesystem``, ``.commands.command_executor``,
``.models``, ``.exceptions``, ``.metrics_utils``, ``.trace_manager``, ...), so
replacing the package name in imports is enough. See docs/sdk-python.md.
"""
from .async_client import AsyncCommandExecutor, AsyncFilesystem, AsyncSandbox, AsyncSandboxClient
from .client import SandboxClient
from .exceptions import (SandboxApiError, SandboxClaimFailedError, SandboxError,
                         SandboxMetadataError, SandboxNoServiceError, SandboxNotFoundError,
                         SandboxNotReadyError, SandboxPortForwardError, SandboxRequestError,
                         SandboxServiceUnavailableError, SandboxTemplateNotFoundError,
                         SandboxWarmPoolNotFoundError, SnapshotNotFoundError)
from .metrics_utils import get_metrics, print_metrics
from .models import (ExecutionResult, FileEntry, SandboxConnectionConfig,
                     SandboxDirectConnectionConfig, SandboxdInClusterConnectionConfig,
                     SandboxdPodTunnelConnectionConfig, SandboxGatewayConnectionConfig,
                     SandboxInClusterConnectionConfig, SandboxLocalTunnelConnectionConfig,
                     SandboxTracerConfig)
from .sandbox import CommandExecutor, Filesystem, Sandbox

__version__ = "0.1.0"

__all__ = [
    "SandboxClient", "AsyncSandboxClient", "Sandbox", "AsyncSandbox", "CommandExecutor",
    "Filesystem", "AsyncCommandExecutor", "AsyncFilesystem", "ExecutionResult", "FileEntry",
    "SandboxConnectionConfig", "SandboxDirectConnectionConfig",
    "SandboxGatewayConnectionConfig", "SandboxLocalTunnelConnectionConfig",
    "SandboxInClusterConnectionConfig", "SandboxdPodTunnelConnectionConfig",
    "SandboxdInClusterConnectionConfig", "get_metrics", "print_metrics",
    "SandboxTracerConfig", "SandboxError", "SandboxNotFoundError",
    "SandboxTemplateNotFoundError", "SandboxWarmPoolNotFoundError", "SandboxNotReadyError",
    "SandboxClaimFailedError", "SandboxPortForwardError", "SandboxRequestError",
    "SandboxMetadataError", "SnapshotNotFoundError", "SandboxApiError",
    "SandboxNoServiceError", "SandboxServiceUnavailableError",
]
