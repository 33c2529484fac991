"""Upstream's module path of ``AsyncFilesystem`` (``k8s_agent_sandbox.files.async_filesystem``)."""
from ..async_client import AsyncFilesystem

__all__ = ["AsyncFilesystem"]
