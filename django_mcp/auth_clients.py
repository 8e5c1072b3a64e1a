"""Moved to ``django_mcp.auth.clients``; this import path stays for code and settings written against it."""

from .auth.clients import *  # noqa: F403
