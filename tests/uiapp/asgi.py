"""``tests.uiapp``'s server at /mcp/ (session authentication: tests call as two users), the rest as tests.settings.asgi.

With ``MCP_UI_HOST_DIR`` set, ``/host/<file>`` also serves the test host page (``tests/uihost``).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from channels.auth import AuthMiddlewareStack  # noqa: E402

from django_mcp.asgi import get_asgi_application, mcp_urlpatterns  # noqa: E402
from tests.uiapp.mcp import server  # noqa: E402
from tests.uihost.serve import with_host_page  # noqa: E402

application = with_host_page(AuthMiddlewareStack(get_asgi_application(extra_patterns=mcp_urlpatterns(server=server))))
