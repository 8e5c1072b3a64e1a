"""Moved to ``django_mcp.limits.middleware``; this import path stays for code and settings written against it."""

from ..limits.middleware import *  # noqa: F403
