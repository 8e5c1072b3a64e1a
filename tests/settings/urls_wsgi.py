"""The test project's URLs plus ``django_mcp.urls_wsgi`` (the endpoint at ``/mcp/`` as a Django view)."""

from django.urls import include, path

from tests.settings.urls import urlpatterns as base

urlpatterns = [*base, path("", include("django_mcp.urls_wsgi"))]
