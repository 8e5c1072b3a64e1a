"""The ``tests.drfbig`` API's MCP server at /mcp/ (anonymous callers; its views allow anyone)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from django_mcp.asgi import mcp_urlpatterns  # noqa: E402
from tests.drfbig.tools import server  # noqa: E402

application = ProtocolTypeRouter({"http": URLRouter(mcp_urlpatterns(server=server, prefix="/mcp/"))})
