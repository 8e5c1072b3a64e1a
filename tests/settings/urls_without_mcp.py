"""A URLconf that forgets ``django_mcp.urls`` (the admin and the test app only): what E034 reports."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [path("admin/", admin.site.urls), path("", include("tests.drfapp.urls"))]
