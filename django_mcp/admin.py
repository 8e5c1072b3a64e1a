"""Admin for MCP sessions: who is connected, with what, and a way to end a session."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from .models import MCPSession
from .sessions import end_sessions_sync


@admin.register(MCPSession)
class MCPSessionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("short_id", "client", "protocol_version", "user", "created", "last_seen", "ended")
    list_filter = ("protocol_version", ("ended", admin.EmptyFieldListFilter))
    search_fields = ("id", "client_info", "user__username")
    readonly_fields = [f.name for f in MCPSession._meta.fields]
    actions = ["end_sessions"]
    date_hierarchy = "created"

    @admin.display(description=_("session"))
    def short_id(self, obj: MCPSession) -> str:
        return obj.id[:12] + "…"

    @admin.display(description=_("client"))
    def client(self, obj: MCPSession) -> str:
        info = obj.client_info or {}
        return f"{info.get('name', '?')} {info.get('version', '')}".strip()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description=_("End the selected sessions"), permissions=["delete"])
    def end_sessions(self, request: HttpRequest, queryset: QuerySet[MCPSession]) -> None:
        n = end_sessions_sync(list(queryset.filter(ended__isnull=True).values_list("id", flat=True)))
        self.message_user(
            request,
            ngettext("Ended %d session.", "Ended %d sessions.", n) % n,
            messages.SUCCESS,
        )
