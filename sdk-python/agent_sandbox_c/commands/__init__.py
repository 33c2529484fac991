"""Upstream's ``commands`` package: ``commands.command_executor`` and
``commands.async_command_executor``."""
