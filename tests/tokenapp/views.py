"""The project's REST API: each user's notes; a read-only API token may not write."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions, serializers, viewsets

from .models import ApiToken, Note


class NoteSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    class Meta:
        model = Note
        fields = ["id", "text"]


class TokenMayWrite(permissions.BasePermission):  # type: ignore[misc]
    """Writes need a token (never a bare session) and, for the project's API tokens, their write flag."""

    message = "This API token is read-only."

    def has_permission(self, request: Any, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        if isinstance(request.auth, ApiToken):
            return bool(request.auth.write_enabled)
        return request.auth is not None


class NoteViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
    """The caller's own notes."""

    serializer_class = NoteSerializer
    permission_classes = [permissions.IsAuthenticated, TokenMayWrite]

    def get_queryset(self) -> Any:
        return Note.objects.filter(owner=self.request.user)

    def perform_create(self, serializer: Any) -> None:
        serializer.save(owner=self.request.user)
