"""ASGI application serving only the conformance fixture server at ``/mcp/``."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.conformance.settings")

import django

django.setup()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from django_mcp.asgi import mcp_urlpatterns  # noqa: E402

from .fixtures import server  # noqa: E402

application = ProtocolTypeRouter({"http": URLRouter(mcp_urlpatterns(server, "/mcp/"))})
