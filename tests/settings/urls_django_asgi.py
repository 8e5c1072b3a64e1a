"""The test project's URLs plus the async ``mcp_view`` at ``/mcp/`` (Django's ASGI handler)."""

from django_mcp.transports.wsgi import mcp_view
from django_mcp.urls_wsgi import endpoint_patterns
from tests.settings.urls import urlpatterns as base

urlpatterns = [*base, *endpoint_patterns(view=mcp_view)]
