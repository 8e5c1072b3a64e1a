"""URLs of the conformance fixture in WSGI mode: its server at ``/mcp/`` as a Django view."""

from django.contrib import admin
from django.urls import path, re_path

from django_mcp.transports.wsgi import mcp_view_for

from .fixtures import server

urlpatterns = [
    path("admin/", admin.site.urls),
    re_path(r"^mcp/?$", mcp_view_for(server, wsgi=True)),
]
