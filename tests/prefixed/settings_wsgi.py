"""The prefixed project in WSGI mode: the endpoint is ``django_mcp.urls_wsgi``, included under the prefix too."""

from tests.prefixed.settings import *  # noqa: F403

ROOT_URLCONF = "tests.prefixed.urls_wsgi"
WSGI_APPLICATION = "tests.oauth.wsgi.application"
