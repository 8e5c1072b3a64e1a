"""URLs of the conformance fixture server: nothing but the admin (the MCP endpoint is ASGI-routed)."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
