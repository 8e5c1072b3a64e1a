"""The JWT resource-server project in WSGI mode (the endpoint as a Django view under gunicorn)."""

from tests.jwt_rs.settings import *  # noqa: F403

ROOT_URLCONF = "tests.oauth.urls_wsgi"
WSGI_APPLICATION = "tests.oauth.wsgi.application"
