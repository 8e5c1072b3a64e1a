"""Moved to ``django_mcp.switches``; this import path stays for code and settings written against it."""

from ..switches import *  # noqa: F403
