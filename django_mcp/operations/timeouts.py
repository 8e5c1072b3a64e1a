"""Moved to ``django_mcp.limits.timeouts``; this import path stays for code and settings written against it."""

from ..limits.timeouts import *  # noqa: F403
