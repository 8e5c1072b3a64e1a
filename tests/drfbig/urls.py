from django.urls import include, path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("gadgets", views.GadgetViewSet, basename="drfbig-gadget")
router.register("publishers", views.PublisherViewSet, basename="drfbig-publisher")
router.register("tags", views.TagViewSet, basename="drfbig-tag")

urlpatterns = [path("big/", include(router.urls))]
