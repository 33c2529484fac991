"""Upstream's module path of ``AsyncCommandExecutor``
(``k8s_agent_sandbox.commands.async_command_executor``)."""
from ..async_client import AsyncCommandExecutor

__all__ = ["AsyncCommandExecutor"]
