"""Upstream's module path of ``SandboxClient`` (``k8s_agent_sandbox.sandbox_client``)."""
from .client import SandboxClient, T

__all__ = ["SandboxClient"]
