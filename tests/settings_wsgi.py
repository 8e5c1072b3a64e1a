"""The test project in WSGI mode: the same settings, the MCP endpoint routed by Django's URLconf."""

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "tests.urls_wsgi"
WSGI_APPLICATION = "tests.wsgi.application"
