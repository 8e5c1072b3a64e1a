from django.urls import include, path
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("items", views.ItemViewSet)

urlpatterns = [
    path("api/", include(router.urls)),
    path("api/stats/", views.StatsView.as_view()),
    path("api/bulk/", views.bulk_create),
    path("api/ping/", views.ping),
    path("items/<int:pk>/label/", views.item_label),
    path("items/mine/", views.my_items),
    path("items/<int:pk>/rename/", views.rename_item),
]
