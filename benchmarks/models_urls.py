"""DRF views of ``models_vs_drf.py``; the MCP endpoint is mounted in front by ``django_mcp.asgi``."""

from django.urls import path

from .modelbench.drf import ItemList, ItemRetrieve

urlpatterns = [path("drf/items/", ItemList.as_view()), path("drf/items/<int:pk>/", ItemRetrieve.as_view())]
