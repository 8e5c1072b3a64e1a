"""The benchmark URLs plus the MCP endpoint as a Django view (WSGI mode)."""

from django.urls import include, path

from benchmarks.urls import urlpatterns as base

urlpatterns = [*base, path("", include("django_mcp.urls_wsgi"))]
