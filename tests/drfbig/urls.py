from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import views

# SimpleRouter: a second DefaultRouter registers its format-suffix converter again, which DRF 3.15 fails on.
router = SimpleRouter()
router.register("gadgets", views.GadgetViewSet, basename="drfbig-gadget")
router.register("publishers", views.PublisherViewSet, basename="drfbig-publisher")
router.register("tags", views.TagViewSet, basename="drfbig-tag")

urlpatterns = [path("big/", include(router.urls))]
