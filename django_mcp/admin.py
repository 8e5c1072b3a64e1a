"""Admin for MCP sessions and OAuth clients: who is connected, with what, and ways to cut them off."""

from __future__ import annotations

from typing import Any

from django.apps import apps as django_apps
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from .models import InitialAccessToken, MCPClient, MCPSession
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


class MCPClientAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """OAuth clients of the MCP endpoint: how they registered, what they hold, a switch to cut them off.

    Facts about registration come from DOT's Application (joined by ``client_id``);
    the list never runs a query per row.
    """

    list_display = (
        "app_name",
        "client_id",
        "method",
        "registered",
        "last_use",
        "active_tokens",
        "disabled",
    )
    list_filter = ("disabled",)
    search_fields = ("client_id",)
    actions = ["disable_selected", "enable_selected", "revoke_selected_tokens"]
    fields = (
        "client_id",
        "app_name",
        "method",
        "registered",
        "redirect_uris",
        "grant_type",
        "last_use",
        "allowed_scopes",
        "service_user",
        "disabled",
        "disabled_at",
        "tokens",
        "sessions",
    )
    readonly_fields = tuple(f for f in fields if f not in ("allowed_scopes", "service_user"))
    raw_id_fields = ("service_user",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[MCPClient]:
        from django.db.models import Count, Max, OuterRef, Subquery
        from django.utils import timezone
        from oauth2_provider.models import get_access_token_model, get_application_model

        app = get_application_model().objects.filter(client_id=OuterRef("client_id"))
        tokens = get_access_token_model().objects.filter(application__client_id=OuterRef("client_id")).order_by()
        live = tokens.filter(expires__gt=timezone.now()).values("application").annotate(n=Count("pk")).values("n")
        latest = tokens.values("application").annotate(at=Max("created")).values("at")
        seen = (
            MCPSession.objects.filter(oauth_client=OuterRef("client_id"))
            .order_by()
            .values("oauth_client")
            .annotate(at=Max("last_seen"))
            .values("at")
        )
        queryset: QuerySet[MCPClient] = (
            super()
            .get_queryset(request)
            .annotate(
                _name=Subquery(app.values("name")[:1]),
                _source=Subquery(app.values("registration_source")[:1]),
                _registered=Subquery(app.values("created")[:1]),
                _tokens=Subquery(live[:1]),
                _last_token=Subquery(latest[:1]),
                _last_session=Subquery(seen[:1]),
            )
        )
        return queryset

    def application(self, obj: MCPClient) -> Any:
        from oauth2_provider.models import get_application_model

        return get_application_model().objects.filter(client_id=obj.client_id).first()

    @admin.display(description=_("name"), ordering="_name")
    def app_name(self, obj: Any) -> str:
        return str(getattr(obj, "_name", None) or "—")

    @admin.display(description=_("registration"), ordering="_source")
    def method(self, obj: Any) -> str:
        labels: dict[str, Any] = {
            "manual": _("by hand"),
            "dcr": _("dynamic (RFC 7591)"),
            "cimd": _("metadata document (CIMD)"),
        }
        source = str(getattr(obj, "_source", None) or "—")
        return str(labels.get(source, source))

    @admin.display(description=_("registered"), ordering="_registered")
    def registered(self, obj: Any) -> Any:
        return getattr(obj, "_registered", None)

    @admin.display(description=_("last use"), ordering="_last_token")
    def last_use(self, obj: Any) -> Any:
        """The latest token issued to the client, or its latest session activity when later."""
        moments = [getattr(obj, "_last_token", None), getattr(obj, "_last_session", None)]
        known = [m for m in moments if m is not None]
        return max(known) if known else None

    @admin.display(description=_("active tokens"), ordering="_tokens")
    def active_tokens(self, obj: Any) -> int:
        return int(getattr(obj, "_tokens", None) or 0)

    @admin.display(description=_("redirect URIs"))
    def redirect_uris(self, obj: MCPClient) -> str:
        app = self.application(obj)
        return "\n".join(app.redirect_uris.split()) if app else "—"

    @admin.display(description=_("grant type"))
    def grant_type(self, obj: MCPClient) -> str:
        app = self.application(obj)
        return f"{app.get_authorization_grant_type_display()} ({app.client_type})" if app else "—"

    @admin.display(description=_("tokens"))
    def tokens(self, obj: MCPClient) -> str:
        from django.utils.html import format_html_join
        from oauth2_provider.models import get_access_token_model

        rows = (
            get_access_token_model()
            .objects.filter(application__client_id=obj.client_id)
            .select_related("user")
            .order_by("-created")[:50]
        )
        items = [(t.pk, t.user or "—", t.scope, t.expires, _("expired") if t.is_expired() else "") for t in rows]
        if not items:
            return str(_("none"))
        return format_html_join("\n", "<div>#{} {} · {} · expires {} {}</div>", items)

    @admin.display(description=_("sessions"))
    def sessions(self, obj: MCPClient) -> str:
        from django.utils.html import format_html_join

        rows = MCPSession.objects.filter(oauth_client=obj.client_id, ended__isnull=True).select_related("user")[:50]
        items = [(s.id[:12], s.user or "—", s.protocol_version, s.last_seen) for s in rows]
        if not items:
            return str(_("none"))
        return format_html_join("\n", "<div>{}… {} · {} · last seen {}</div>", items)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # clients register themselves (DCR, CIMD) or are added as DOT applications

    @admin.action(description=_("Disable the selected clients and revoke their tokens"), permissions=["change"])
    def disable_selected(self, request: HttpRequest, queryset: QuerySet[MCPClient]) -> None:
        from .auth_clients import disable_clients

        n = disable_clients(queryset.values_list("client_id", flat=True))
        self.message_user(request, ngettext("Disabled %d client.", "Disabled %d clients.", n) % n, messages.SUCCESS)

    @admin.action(description=_("Enable the selected clients"), permissions=["change"])
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[MCPClient]) -> None:
        from .auth_clients import enable_clients

        n = enable_clients(queryset.values_list("client_id", flat=True))
        self.message_user(request, ngettext("Enabled %d client.", "Enabled %d clients.", n) % n, messages.SUCCESS)

    @admin.action(description=_("Revoke all tokens of the selected clients"), permissions=["change"])
    def revoke_selected_tokens(self, request: HttpRequest, queryset: QuerySet[MCPClient]) -> None:
        from .auth_clients import revoke_tokens

        n = revoke_tokens(queryset.values_list("client_id", flat=True))
        self.message_user(
            request, ngettext("Revoked %d access token.", "Revoked %d access tokens.", n) % n, messages.SUCCESS
        )


class InitialAccessTokenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """RFC 7591 initial access tokens: seen and revoked (deleted) here, issued by ``manage.py mcp_client``.

    Issuing stays in the command because the token is shown once and only its hash is stored.
    """

    list_display = ("__str__", "scopes", "service_user", "uses_left", "expires", "created")
    fields = ("description", "scopes", "service_user", "uses_left", "expires", "created")
    readonly_fields = ("created",)
    raw_id_fields = ("service_user",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


if django_apps.is_installed("oauth2_provider"):
    admin.site.register(MCPClient, MCPClientAdmin)
    admin.site.register(InitialAccessToken, InitialAccessTokenAdmin)
