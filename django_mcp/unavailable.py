"""Moved to ``django_mcp.runtime.unavailable``; this import path stays for code and settings written against it."""

from .runtime.unavailable import *  # noqa: F403
