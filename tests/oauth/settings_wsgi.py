"""The OAuth test project in WSGI mode (``AUTH = "oauth"``, the endpoint as a Django view)."""

from tests.oauth.settings import *  # noqa: F403

ROOT_URLCONF = "tests.oauth.urls_wsgi"
WSGI_APPLICATION = "tests.oauth.wsgi.application"
