"""Connection configurations and result models, with upstream's names,
fields and defaults (docs/upstream.md#connection-configs, #commands-and-files). Plain dataclasses: the
package has no third-party dependency.
"""
from __future__ import annotations

import datetime as _dt
import re
import warnings
from dataclasses import dataclass
from typing import Literal, Optional, Union

from . import _native, metrics as _metrics

#: every handle reports its discoveries to the latency histogram (kept
#: here for the life of the process: the C side holds the pointer)
_ON_CONNECT = _native.CONNECT_FN(_metrics.observe_discovery)

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


#: upstream's older names of the in-cluster address modes
_OLD_IN_CLUSTER_MODES = {"service-dns": "in-cluster-service", "pod-ip": "in-cluster-pod-ip"}


@dataclass
class SandboxdInClusterConnectionConfig:
    """From inside the cluster straight to the sandbox's sandboxd, no router,
    at one address only: ``mode="in-cluster-pod-ip"``, the pod IP of the
    Sandbox's status (none yet: SandboxNotReadyError), or
    ``mode="in-cluster-service"``, the Sandbox's ``status.serviceFQDN``
    (none, i.e. no Service on its template: SandboxNoServiceError).

    Upstream speaks sandboxd's REST API on ``rest_port`` and its gRPC process
    API on ``grpc_port``; this SDK speaks the python-runtime API, which
    sandboxd serves on ``runtime_port`` (its ``--runtime-port``, 8888). The
    two upstream ports are checked as upstream checks them and kept, not
    used."""
    mode: Literal["in-cluster-service", "in-cluster-pod-ip"]
    rest_port: int = 8080
    grpc_port: int = 9090
    runtime_port: int = 8888
    max_retries: int = 5
    retry_backoff: float = 0.5

    def __post_init__(self) -> None:
        if self.mode in _OLD_IN_CLUSTER_MODES:
            new = _OLD_IN_CLUSTER_MODES[self.mode]
            warnings.warn(f"SandboxdInClusterConnectionConfig mode {self.mode!r} is deprecated; "
                          f"use {new!r}", DeprecationWarning, stacklevel=3)
            self.mode = new  # type: ignore[assignment]
        if self.mode not in ("in-cluster-service", "in-cluster-pod-ip"):
            raise ValueError("mode must be 'in-cluster-service' or 'in-cluster-pod-ip', "
                             f"got {self.mode!r}")
        _port("rest_port", self.rest_port)
        _port("grpc_port", self.grpc_port)
        _port("runtime_port", self.runtime_port)
        if self.rest_port == self.grpc_port:
            raise ValueError("REST and gRPC ports must be different")


SandboxConnectionConfig = Union[SandboxDirectConnectionConfig, SandboxGatewayConnectionConfig,
                                SandboxLocalTunnelConnectionConfig,
                                SandboxInClusterConnectionConfig,
                                SandboxdPodTunnelConnectionConfig,
                                SandboxdInClusterConnectionConfig]


@dataclass
class SandboxTracerConfig:
    """Tracing: with ``enable_tracing`` and the ``opentelemetry-api`` package
    installed, the client and its sandboxes emit OpenTelemetry spans named
    ``<trace_service_name>.<operation>`` (trace_manager.py)."""
    enable_tracing: bool = False
    trace_service_name: str = "sandbox-client"


@dataclass
class ExecutionResult:
    """The result of ``commands.run()``: a command that fails inside the
    sandbox is a result with its exit code, not an exception."""
    stdout: str = ""
    stderr: str = ""
    exit_code: int = -1


_EPOCH = _dt.datetime.fromtimestamp(0, _dt.timezone.utc)


@dataclass
class FileEntry:
    """One entry of ``files.list()``, in the shapes of both upstream
    releases: ``modified`` (a timezone-aware datetime) and ``mode`` as
    1.0.8 has them, ``mod_time`` (POSIX seconds, a float) as 0.5.6 has it.
    Give either time (or both) when constructing one; the other follows."""
    name: str
    size: int
    type: Literal["file", "directory"]
    modified: Optional[_dt.datetime] = None
    mode: Optional[str] = None
    mod_time: Optional[float] = None

    def __post_init__(self) -> None:
        if self.modified is None:
            self.modified = (_EPOCH if self.mod_time is None else
                             _dt.datetime.fromtimestamp(float(self.mod_time), _dt.timezone.utc))
        if self.mod_time is None:
            self.mod_time = self.modified.timestamp()
        else:
            self.mod_time = float(self.mod_time)

    @classmethod
    def from_legacy(cls, entry: dict) -> "FileEntry":
        """From a python-runtime listing item ({name, size, type, mod_time})."""
        return cls(name=entry["name"], size=int(entry["size"]), type=entry["type"],
                   mod_time=float(entry.get("mod_time") or 0))


def _retries(cfg: object) -> dict:
    n, b = getattr(cfg, "max_retries", 5), getattr(cfg, "retry_backoff", 0.5)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0 or b < 0:
        raise ValueError("max_retries and retry_backoff must not be negative")
    return {"max_retries": n, "retry_backoff_ms": int(round(b * 1000))}


def native_connection(cfg: object) -> "_native.ConnectionOptions":
    """The C connection options of a config (sbx_connection_options), with
    the discovery latency hook."""
    o = _connection(cfg)
    o.on_connect = _ON_CONNECT
    return o


def _connection(cfg: object) -> "_native.ConnectionOptions":
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
    if isinstance(cfg, SandboxdInClusterConnectionConfig):
        addr = (_native.IN_CLUSTER_SERVICE if cfg.mode == "in-cluster-service"
                else _native.IN_CLUSTER_POD_IP)
        return _native.connection_options(_native.MODE_IN_CLUSTER, server_port=cfg.runtime_port,
                                          in_cluster_address=addr, **_retries(cfg))
    if isinstance(cfg, SandboxdPodTunnelConnectionConfig):
        raise NotImplementedError(
            "SandboxdPodTunnelConnectionConfig (gRPC to a sandboxd pod) is not supported by "
            "agent_sandbox_c: reach sandboxd through the router (SandboxDirectConnectionConfig, "
            "SandboxGatewayConnectionConfig or SandboxLocalTunnelConnectionConfig), or "
            "straight to it from inside the cluster (SandboxdInClusterConnectionConfig)")
    raise TypeError(f"unknown connection config {type(cfg).__name__}")
