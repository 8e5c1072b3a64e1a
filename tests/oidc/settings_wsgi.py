"""The OIDC login project in WSGI mode (gunicorn; the MCP endpoint as a Django view)."""

from tests.oidc.settings import *  # noqa: F403

ROOT_URLCONF = "tests.oidc.urls_wsgi"
WSGI_APPLICATION = "tests.oidc.wsgi.application"
