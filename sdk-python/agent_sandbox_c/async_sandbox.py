"""Upstream's module path of ``AsyncSandbox`` (``k8s_agent_sandbox.async_sandbox``)."""
from .async_client import AsyncSandbox

__all__ = ["AsyncSandbox"]
