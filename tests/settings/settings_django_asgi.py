"""The test project under Django's own ASGI handler, no Channels: the async ``mcp_view`` in the URLconf."""

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "tests.settings.urls_django_asgi"
