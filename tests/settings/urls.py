from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("django_mcp.urls")),  # discovery (and the OAuth endpoints, which AUTH "none" leaves unused)
    path("", include("tests.drfapp.urls")),
    path("", include("tests.drfbig.urls")),
]
