"""Moved to ``django_mcp.audit.writer``; this import path stays for code and settings written against it."""

from ..audit.writer import *  # noqa: F403
