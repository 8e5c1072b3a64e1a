"""The project's REST API for gadgets (DRF), reached as MCP tools through register_drf."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions, serializers, viewsets

from . import middleware
from .models import Gadget


class GadgetSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    class Meta:
        model = Gadget
        fields = ["id", "name", "tenant"]
        read_only_fields = ["tenant"]


class GadgetViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
    """Gadgets of the caller's tenant."""

    serializer_class = GadgetSerializer
    permission_classes = [permissions.IsAuthenticated]
    queryset = Gadget.objects.all()

    def get_queryset(self) -> Any:
        return Gadget.objects.filter(tenant=middleware.tenant.get() or "")

    def perform_create(self, serializer: Any) -> None:
        serializer.save(tenant=middleware.tenant.get() or "")
