"""The OIDC login project's URLs plus the MCP endpoint as a Django view (WSGI mode)."""

from django.urls import include, path

from tests.oidc.urls import urlpatterns as base

urlpatterns = [*base, path("", include("django_mcp.urls_wsgi"))]
