"""Moved to ``django_mcp.transports.wsgi``; this import path stays for code and settings written against it."""

from .transports.wsgi import *  # noqa: F403
