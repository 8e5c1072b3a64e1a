"""The benchmark settings in WSGI mode: the endpoint is ``django_mcp.views.mcp_view`` in the URLconf."""

from benchmarks.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.urls_wsgi"
WSGI_APPLICATION = "benchmarks.wsgi.application"
