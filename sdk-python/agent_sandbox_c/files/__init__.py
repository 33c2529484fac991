"""Upstream's ``files`` package: ``files.filesystem`` and ``files.async_filesystem``."""
