"""The DRF side: ``RetrieveAPIView`` and ``ListAPIView`` over the same rows, fields and join.

No authentication classes, ``AllowAny``, JSON renderer only, ``PageNumberPagination``
with ``page_size = 100``. The list serializer returns what ``resources/list`` returns per
object (``uri``, ``name`` = ``str(item)``, ``mimeType``), so both sides send the same data.
"""

from __future__ import annotations

from typing import Any

from rest_framework import generics, pagination, permissions, renderers, serializers

from .mcp import FIELDS
from .models import Item


class ItemSerializer(serializers.ModelSerializer[Item]):
    class Meta:
        model = Item
        fields = FIELDS


class ItemEntrySerializer(serializers.Serializer[Item]):
    uri = serializers.SerializerMethodField()
    name = serializers.CharField(source="__str__")
    mimeType = serializers.SerializerMethodField()

    def get_uri(self, obj: Item) -> str:
        return f"django://modelbench/item/{obj.pk}"

    def get_mimeType(self, obj: Item) -> str:
        return "application/json"


class Page(pagination.PageNumberPagination):
    page_size = 100


class _Plain:
    authentication_classes: list[Any] = []
    permission_classes = [permissions.AllowAny]
    renderer_classes = [renderers.JSONRenderer]
    queryset = Item.objects.select_related("publisher")


class ItemRetrieve(_Plain, generics.RetrieveAPIView[Item]):
    serializer_class = ItemSerializer


class ItemList(_Plain, generics.ListAPIView[Item]):
    serializer_class = ItemEntrySerializer
    pagination_class = Page

    def get_queryset(self) -> Any:
        return super().get_queryset().order_by("pk")
