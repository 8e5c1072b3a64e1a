"""Moved to ``django_mcp.telemetry.middleware``; this import path stays for code and settings written against it."""

from ..telemetry.middleware import *  # noqa: F403
