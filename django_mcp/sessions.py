"""Moved to ``django_mcp.state.sessions``; this import path stays for code and settings written against it."""

from .state.sessions import *  # noqa: F403
