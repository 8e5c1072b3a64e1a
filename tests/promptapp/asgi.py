"""The test project behind Django's session authentication, so that tests can call as two different users."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from channels.auth import AuthMiddlewareStack  # noqa: E402

from django_mcp.asgi import get_asgi_application  # noqa: E402

application = AuthMiddlewareStack(get_asgi_application())
