"""The OAuth URLs without a login page (for check django_mcp.E035)."""

from django.urls import include, path

urlpatterns = [path("", include("django_mcp.urls"))]
