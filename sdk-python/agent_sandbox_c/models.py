"""Connection configurations and result models, with upstream's names,
fields and defaults (docs/upstream.md#connection-configs, #commands-and-files). Plain dataclasses: the
package has no third-party dependency.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Literal, Optional, Union

from . import _native

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _port(name: str, v: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 65535:
        raise ValueError(f"{name} must be an integer between 1 and 65535, got {v!r}")


@dataclass
class SandboxLocalTunnelConnectionConfig:
    """Reach the router through ``kubectl port-forward svc/sandbox-router-svc``
    in ``router_namespace`` on a free local port (the default)."""
    port_forward_ready_timeout: int = 30
    server_port: int = 8888
    router_namespace: str = "agent-sandbox-system"
    #: tries after the first on 5xx or no connection, and the backoff
    #: factor (waits 0, 2f, 4f, ... seconds): upstream's Retry(total=5,
    #: backoff_factor=0.5)
    max_retries: int = 5
    retry_backoff: float = 0.5

    def __post_init__(self) -> None:
        if not _DNS_LABEL.match(self.router_namespace or ""):
            raise ValueError("Invalid Kubernetes namespace name format")
        _port("server_port", self.server_port)


@dataclass
class SandboxGatewayConnectionConfig:
    """Reach the router at the first address of a Gateway
    (gateway.networking.k8s.io/v1) ``gateway_name``."""
    gateway_name: str
    gateway_namespace: str = "default"
    gateway_ready_timeout: int = 180
    server_port: int = 8888
    max_retries: int = 5
    retry_backoff: float = 0.5

    def __post_init__(self) -> None:
        if not self.gateway_name:
            raise ValueError("gateway_name is required")
        _port("server_port", self.server_port)


@dataclass
class SandboxDirectConnectionConfig:
    """Reach the router at ``api_url`` (http:// or https://)."""
    api_url: str
    server_port: int = 8888
    max_retries: int = 5
    retry_backoff: float = 0.5

    def __post_init__(self) -> None:
        if not str(self.api_url).lower().startswith(("http://", "https://")):
            raise ValueError(f"api_url must be an http:// or https:// URL, got {self.api_url!r}")
        _port("server_port", self.server_port)


@dataclass
class SandboxInClusterConnectionConfig:
    """From inside the cluster: straight to the pod IP from the Sandbox's
    status, else to ``<sandbox>.<namespace>.svc.cluster.local``; no router."""
    server_port: int = 8888
    max_retries: int = 5
    retry_backoff: float = 0.5

    def __post_init__(self) -> None:
        _port("server_port", self.server_port)


@dataclass
class SandboxdPodTunnelConnectionConfig:
    """upstream's sandboxd pod tunnel (REST + gRPC). Accepted for
    compatibility; this SDK reaches sandboxd through the router instead, and
    using this config raises NotImplementedError."""
    rest_port: int = 8080
    grpc_port: int = 9090
    port_forward_ready_timeout: int = 30

    def __post_init__(self) -> None:
        _port("rest_port", self.rest_port)
        _port("grpc_port", self.grpc_port)


SandboxConnectionConfig = Union[SandboxDirectConnectionConfig, SandboxGatewayConnectionConfig,
                                SandboxLocalTunnelConnectionConfig,
                                SandboxInClusterConnectionConfig,
                                SandboxdPodTunnelConnectionConfig]


@dataclass
class SandboxTracerConfig:
    """Tracing settings (accepted for compatibility; this SDK emits no spans)."""
    enable_tracing: bool = False
    trace_service_name: str = "sandbox-client"


@dataclass
class ExecutionResult:
    """The result of ``commands.run()``: a command that fails inside the
    sandbox is a result with its exit code, not an exception."""
    stdout: str = ""
    stderr: str = ""
    exit_code: int = -1


@dataclass
class FileEntry:
    """One entry of ``files.list()``."""
    name: str
    size: int
    type: Literal["file", "directory"]
    modified: _dt.datetime = field(
        default_factory=lambda: _dt.datetime.fromtimestamp(0, _dt.timezone.utc))
    mode: Optional[str] = None

    @classmethod
    def from_legacy(cls, entry: dict) -> "FileEntry":
        """From a python-runtime listing item ({name, size, type, mod_time})."""
        mt = entry.get("mod_time")
        return cls(name=entry["name"], size=int(entry["size"]), type=entry["type"],
                   modified=_dt.datetime.fromtimestamp(float(mt or 0), _dt.timezone.utc))


def _retries(cfg: object) -> dict:
    n, b = getattr(cfg, "max_retries", 5), getattr(cfg, "retry_backoff", 0.5)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0 or b < 0:
        raise ValueError("max_retries and retry_backoff must not be negative")
    return {"max_retries": n, "retry_backoff_ms": int(round(b * 1000))}


def native_connection(cfg: object) -> "_native.ConnectionOptions":
    """The C connection options of a config (sbx_connection_options)."""
    if isinstance(cfg, SandboxDirectConnectionConfig):
        return _native.connection_options(_native.MODE_DIRECT, api_url=cfg.api_url,
                                          server_port=cfg.server_port, **_retries(cfg))
    if isinstance(cfg, SandboxGatewayConnectionConfig):
        return _native.connection_options(
            _native.MODE_GATEWAY, gateway_name=cfg.gateway_name,
            gateway_namespace=cfg.gateway_namespace,
            gateway_ready_timeout_ms=_native.ms(cfg.gateway_ready_timeout),
            server_port=cfg.server_port, **_retries(cfg))
    if isinstance(cfg, SandboxLocalTunnelConnectionConfig):
        return _native.connection_options(
            _native.MODE_LOCAL_TUNNEL, router_namespace=cfg.router_namespace,
            port_forward_ready_timeout_ms=_native.ms(cfg.port_forward_ready_timeout),
            server_port=cfg.server_port, **_retries(cfg))
    if isinstance(cfg, SandboxInClusterConnectionConfig):
        return _native.connection_options(_native.MODE_IN_CLUSTER, server_port=cfg.server_port,
                                          **_retries(cfg))
    if isinstance(cfg, SandboxdPodTunnelConnectionConfig):
        raise NotImplementedError(
            "SandboxdPodTunnelConnectionConfig (gRPC to a sandboxd pod) is not supported by "
            "agent_sandbox_c: reach sandboxd through the router (SandboxDirectConnectionConfig, "
            "SandboxGatewayConnectionConfig or SandboxLocalTunnelConnectionConfig)")
    raise TypeError(f"unknown connection config {type(cfg).__name__}")
