"""WSGI mode: the same, with the endpoint served as a Django view."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("api/", include("tests.drfbig.urls")),
    path("plugins/mcp/", include("django_mcp.urls")),
    path("plugins/mcp/", include("django_mcp.urls_wsgi")),
]
