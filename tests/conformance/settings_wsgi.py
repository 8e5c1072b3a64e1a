"""The conformance fixture in WSGI mode: the same settings, the endpoint routed by Django's URLconf."""

from tests.conformance.settings import *  # noqa: F403

ROOT_URLCONF = "tests.conformance.urls_wsgi"
WSGI_APPLICATION = "tests.conformance.wsgi.application"
