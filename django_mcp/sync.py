"""Moved to ``django_mcp.runtime.sync_pool``; this import path stays for code and settings written against it."""

from .runtime.sync_pool import *  # noqa: F403
