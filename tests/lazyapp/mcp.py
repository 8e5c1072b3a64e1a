"""``register_drf`` of a viewset that queries while its schema is built (``tests/test_drf_lazy.py``)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers, viewsets

from django_mcp import site
from tests.drfapp.models import Item


class ItemOut(serializers.ModelSerializer):  # type: ignore[misc]
    class Meta:
        model = Item
        fields = ["id", "name"]


class FlaggedItemViewSet(viewsets.ReadOnlyModelViewSet):  # type: ignore[misc]
    """Items, with the serializer a database row chooses."""

    queryset = Item.objects.all()

    def get_serializer_class(self) -> Any:
        Item.objects.exists()  # a query, as a feature-flag lookup would make
        return ItemOut


site.register_drf(FlaggedItemViewSet, basename="flagged_item", annotations={"openWorldHint": False})


class BodylessView(viewsets.ViewSet):  # type: ignore[misc]
    """A write with no serializer: an error only building its schema finds."""

    def create(self, request: Any) -> Any:  # pragma: no cover - never called
        raise AssertionError


if __import__("os").environ.get("MCP_LAZY_BROKEN") == "1":
    site.register_drf(BodylessView, action="create", basename="bodyless")
