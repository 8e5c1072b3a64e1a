from django.urls import include, path
from rest_framework.routers import DefaultRouter

from tests.oauth.urls import urlpatterns as base

from . import views

router = DefaultRouter()
router.register("notes", views.NoteViewSet, basename="note")

urlpatterns = [*base, path("api/", include(router.urls))]
