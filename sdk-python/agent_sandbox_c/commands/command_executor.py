"""Upstream's module path of ``CommandExecutor`` (``k8s_agent_sandbox.commands.command_executor``)."""
from ..sandbox import CommandExecutor

__all__ = ["CommandExecutor"]
