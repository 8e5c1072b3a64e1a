"""The deployment benchmark's URLs: the benchmark views and the OAuth endpoints (AUTH = "oauth")."""

from django.urls import include, path

from benchmarks.urls import urlpatterns as bench

urlpatterns = [*bench, path("", include("tests.oauth.urls"))]
