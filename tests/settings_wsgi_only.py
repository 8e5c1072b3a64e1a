"""A WSGI-only project: no daphne, no channels, no ASGI_APPLICATION; the endpoint is a Django view."""

from tests.settings_wsgi import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in ("daphne", "channels")]  # noqa: F405
del ASGI_APPLICATION  # noqa: F821
del CHANNEL_LAYERS  # noqa: F821
