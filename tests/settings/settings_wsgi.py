"""The test project in WSGI mode: the same settings, the MCP endpoint routed by Django's URLconf."""

import os

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "tests.settings.urls_wsgi"
WSGI_APPLICATION = "tests.settings.wsgi.application"

# MCP_CONN_MAX_AGE on SQLite too (tests/settings/__init__.py reads it for PostgreSQL): with kept connections a session's
# read runs on the worker's own thread (django_mcp.state.sessions.prefetch), as docs/deployment.md sets WSGI mode up.
if "MCP_CONN_MAX_AGE" in os.environ:
    DATABASES["default"]["CONN_MAX_AGE"] = float(os.environ["MCP_CONN_MAX_AGE"])  # noqa: F405
