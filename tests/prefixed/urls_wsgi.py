"""The prefixed project's URLs plus the MCP endpoint as a Django view, under the same prefix (WSGI mode)."""

from django.urls import include, path

from tests.prefixed.urls import urlpatterns as base

urlpatterns = [*base, path("plugins/mcp/", include("django_mcp.urls_wsgi"))]
