"""Moved to ``django_mcp.audit.middleware``; this import path stays for code and settings written against it."""

from ..audit.middleware import *  # noqa: F403
