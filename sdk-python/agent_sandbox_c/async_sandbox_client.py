"""Upstream's module path of ``AsyncSandboxClient`` (``k8s_agent_sandbox.async_sandbox_client``)."""
from .async_client import AsyncSandboxClient

__all__ = ["AsyncSandboxClient"]
