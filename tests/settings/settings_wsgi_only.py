"""A WSGI-only project without OAuth: no daphne, no channels, no ASGI_APPLICATION, no django-oauth-toolkit.

The endpoint is a Django view (``django_mcp.urls_wsgi``) beside ``django_mcp.urls`` (discovery; its OAuth
endpoints only mount with ``oauth2_provider`` installed), as docs/transports.md's WSGI snippet has it.
"""

from tests.settings import *  # noqa: F403

ROOT_URLCONF = "tests.settings.urls_wsgi"
WSGI_APPLICATION = "tests.settings.wsgi.application"
INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in ("daphne", "channels", "oauth2_provider")]  # noqa: F405
del ASGI_APPLICATION  # noqa: F821
del CHANNEL_LAYERS  # noqa: F821
