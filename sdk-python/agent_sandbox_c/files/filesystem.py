"""Upstream's module path of ``Filesystem`` (``k8s_agent_sandbox.files.filesystem``)."""
from ..sandbox import Filesystem

__all__ = ["Filesystem"]
