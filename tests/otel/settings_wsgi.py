"""``tests.otel.settings`` in WSGI mode: the endpoint is ``django_mcp.transports.wsgi.mcp_view``."""

from tests.otel.settings import *  # noqa: F403

ROOT_URLCONF = "tests.settings.urls_wsgi"
WSGI_APPLICATION = "tests.otel.wsgi.application"
