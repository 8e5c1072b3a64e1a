"""The benchmark URLs plus the MCP endpoint as a Django view (WSGI mode), and the floor as a sync view."""

from django.urls import include, path

from benchmarks.urls import urlpatterns as base
from benchmarks.views import sync_jsonrpc_view

urlpatterns = [*base, path("sync-view/", sync_jsonrpc_view), path("", include("django_mcp.urls_wsgi"))]
