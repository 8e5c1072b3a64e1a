"""The OAuth test project with nothing of django_mcp at the site root: all of it under ``/plugins/mcp/`` (ASGI)."""

from tests.oauth.settings import *  # noqa: F403

ROOT_URLCONF = "tests.prefixed.urls"
ASGI_APPLICATION = "django_mcp.asgi.application"
DJANGO_MCP = {**DJANGO_MCP, "ENDPOINT": "/plugins/mcp/", "URL_PREFIX": "/plugins/mcp/"}  # noqa: F405
