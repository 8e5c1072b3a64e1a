"""The token project in WSGI mode (the endpoint as a Django view under gunicorn)."""

from tests.tokenapp.settings import *  # noqa: F403

ROOT_URLCONF = "tests.tokenapp.urls_wsgi"
WSGI_APPLICATION = "tests.tokenapp.wsgi.application"
