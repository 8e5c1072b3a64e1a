"""The project's own pages at the root; django_mcp (discovery, OAuth) only under ``plugins/mcp/``."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("plugins/mcp/", include("django_mcp.urls")),
]
