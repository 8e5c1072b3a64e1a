"""``tests.otel.settings`` under Django's own ASGI handler: the endpoint is ``django_mcp.transports.wsgi.mcp_view``."""

from tests.otel.settings import *  # noqa: F403

ROOT_URLCONF = "tests.settings.urls_django_asgi"
