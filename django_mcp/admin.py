"""Admin for MCP sessions, tasks, OAuth clients and kill switches: who is connected, with what, how to cut it off.

The audit log (calls and the usage page) has its own module, ``audit_admin``, registered from here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Any

from django.apps import apps as django_apps
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.db.models.query import ModelIterable
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from . import switches
from .audit import redaction
from .audit.admin import calls_url, usage_url
from .audit.declaration import FULL, HIDDEN, REDACTED
from .auth.clients import disable_clients, enable_clients, registration_scope, revoke_tokens, with_activity
from .auth.clients import last_use as client_last_use
from .checks import project_servers
from .conf import mcp_settings
from .models import InitialAccessToken, MCPClient, MCPSession, MCPSwitch, MCPTask, MCPTaskWorker
from .server import servers as task_servers
from .server import site
from .state.sessions import end_sessions_sync
from .tasks import beat as task_beat
from .tasks import store

#: Characters of a session id the admin shows, and the longer prefix its URLs and checkboxes use as a key.
SHOWN_PREFIX = 8
ADMIN_KEY_LENGTH = 16


def session_prefix(session_id: str) -> str:
    """What a person sees of a session id: enough to tell sessions apart, too little to use one."""
    return session_id[:SHOWN_PREFIX] + "…"


def admin_key(session_id: str) -> str:
    """The session's key in admin URLs, checkboxes and LogEntry rows: a prefix, never the live id."""
    return session_id[:ADMIN_KEY_LENGTH]


class _KeyedSessions(ModelIterable):  # type: ignore[type-arg]
    """Sessions whose ``pk`` reads as their admin key: every link, checkbox and log row the admin
    builds from ``obj.pk`` then carries a prefix, never the whole ``Mcp-Session-Id``."""

    def __iter__(self) -> Iterator[Any]:
        for obj in super().__iter__():
            obj.mcp_full_id = obj.pk
            obj.pk = admin_key(obj.pk)
            yield obj


@admin.register(MCPSession)
class MCPSessionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Sessions, keyed in every page by a prefix of their id.

    A live ``Mcp-Session-Id`` is a credential of its session: staff can see who is
    connected and end sessions without the admin ever printing one whole.
    """

    list_display = ("short_id", "client", "protocol_version", "user", "created", "last_seen", "ended")
    list_filter = ("protocol_version", ("ended", admin.EmptyFieldListFilter))
    search_fields = ("^id", "client_info", "user__username")  # ^: a pasted prefix finds its session
    readonly_fields = ("short_id", *(f.name for f in MCPSession._meta.fields if f.name != "id"))
    fields = readonly_fields
    actions = ["end_sessions"]
    date_hierarchy = "created"

    @admin.display(description=_("session"))
    def short_id(self, obj: MCPSession) -> str:
        return session_prefix(obj.pk)

    def get_queryset(self, request: HttpRequest) -> QuerySet[MCPSession]:
        queryset = super().get_queryset(request)
        # Private, and kept: Django has no public hook for how a queryset builds its objects (Model.from_db
        # would need a proxy model, which changes the admin's URLs, permissions and migrations).
        queryset._iterable_class = _KeyedSessions
        return queryset

    @staticmethod
    def full_ids(keys: Iterable[str]) -> list[str]:
        """The session ids the admin keys name (a key naming none, or several, names nothing)."""
        found: list[str] = []
        for key in keys:
            if len(key) < ADMIN_KEY_LENGTH:
                continue
            ids = list(MCPSession.objects.filter(id__startswith=key).values_list("id", flat=True)[:2])
            if len(ids) == 1:
                found.append(ids[0])
        return found

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> MCPSession | None:
        ids = self.full_ids([object_id]) if from_field is None else []
        if not ids:
            return None
        found: MCPSession | None = self.get_queryset(request).filter(pk=ids[0]).first()
        return found

    def response_action(self, request: HttpRequest, queryset: QuerySet[Any], *args: Any, **kwargs: Any) -> Any:
        """Checkboxes carry admin keys: turn them back into ids before Django filters ``pk__in``."""
        keys = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
        if keys:
            post = request.POST.copy()
            post.setlist(helpers.ACTION_CHECKBOX_NAME, self.full_ids(keys))
            request.POST = post  # type: ignore[assignment]
        return super().response_action(request, queryset, *args, **kwargs)

    def delete_model(self, request: HttpRequest, obj: MCPSession) -> None:
        full_id = getattr(obj, "mcp_full_id", obj.pk)
        end_sessions_sync([full_id])
        MCPSession.objects.filter(pk=full_id).delete()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[MCPSession]) -> None:
        ids = list(queryset.values_list("id", flat=True))  # values: real ids, not admin keys
        end_sessions_sync(ids)
        MCPSession.objects.filter(pk__in=ids).delete()

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


#: The permission (``app_label.codename``) that shows a task's result or error in the admin.
RESULT_PERMISSION = "django_mcp.view_mcptask_result"


def _json(value: Any) -> str:
    """A JSON field as an indented, escaped ``<pre>`` block."""
    if value is None or value == {} or value == []:
        return "—"
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


@admin.register(MCPTaskWorker)
class MCPTaskWorkerAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """The task worker processes that beat (``tasks.beat``): alive within three beats, else gone."""

    list_display = ("__str__", "started", "beat", "alive")
    readonly_fields = ("id", "host", "pid", "started", "beat")

    @admin.display(description=_("alive"), boolean=True)
    def alive(self, obj: MCPTaskWorker) -> bool:
        return obj.beat >= timezone.now() - timedelta(seconds=task_beat.stale_after())

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a worker registers itself

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _task_tool(task: MCPTask) -> Any:
    """The tool a task runs, on the server it was started on (None when no longer registered)."""
    server = task_servers.get(task.server) if task.server else site
    return server.tools.get(task.tool) if server is not None else None


@admin.register(MCPTask)
class MCPTaskAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Task-augmented tool calls: who started what, where it stands, how long it took.

    Everything is read-only: tasks change only through the protocol, their worker, or the
    cancel action here. A task's arguments, the questions it asked and their answers, its
    result and its error carry the caller's data, so they are shown only to staff with the
    ``view_mcptask_result`` permission, and the arguments masked as the audit log masks them
    (``AUDIT_SENSITIVE_KEYS``, the tool's ``audit=`` policy).
    """

    list_display = (
        "short_id",
        "tool",
        "status",
        "user",
        "oauth_client",
        "created",
        "started",
        "finished",
        "duration",
        "attempts",
    )
    list_filter = ("status", "tool", "created")
    search_fields = ("^id", "tool", "user__username", "oauth_client")  # ^: a pasted prefix finds its task
    list_select_related = ("user",)
    date_hierarchy = "created"
    actions = ["cancel_tasks"]
    sections: tuple[tuple[Any, tuple[str, ...]], ...] = (
        (None, ("id", "server", "tool", "status", "status_message", "cancel_requested")),
        (
            _("Caller"),
            ("user", "oauth_client", "scopes", "oauth_token", "session_prefix", "protocol_version", "client", "locale"),
        ),
        (
            _("Timings"),
            ("created", "started", "heartbeat", "finished", "updated", "expires", "duration", "attempts", "ttl_ms"),
        ),
        (_("Worker"), ("poll_interval_ms", "backend_id")),
    )
    base_fields = tuple(name for _title, names in sections for name in names)
    #: Shown with ``view_mcptask_result`` only: what the caller sent, was asked, answered and got back.
    payload_sections: tuple[tuple[Any, tuple[str, ...]], ...] = (
        (_("Arguments and input"), ("arguments_json", "input_requests_json", "answers_json")),
        (_("Outcome"), ("result_json", "error_json")),
    )
    result_fields = tuple(name for _title, names in payload_sections for name in names)

    @admin.display(description=_("task"), ordering="id")
    def short_id(self, obj: MCPTask) -> str:
        return obj.pk[:SHOWN_PREFIX] + "…"

    @admin.display(description=_("duration"))
    def duration(self, obj: MCPTask) -> str:
        """From creation to the end, or to now while the task is active."""
        seconds = max(0, int(((obj.finished or timezone.now()) - obj.created).total_seconds()))
        text = f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"
        return text if obj.finished else f"{text} …"

    @admin.display(description=_("session"))
    def session_prefix(self, obj: MCPTask) -> str:
        return session_prefix(obj.session) if obj.session else "—"

    @admin.display(description=_("client"))
    def client(self, obj: MCPTask) -> str:
        info = obj.client_info or {}
        return f"{info.get('name', '?')} {info.get('version', '')}".strip() if info else "—"

    @admin.display(description=_("arguments"))
    def arguments_json(self, obj: MCPTask) -> str:
        policy = getattr(_task_tool(obj), "audit", REDACTED)
        if policy in (HIDDEN, False):
            return str(_("(not shown: the tool's audit policy keeps its arguments out of records)"))
        sensitive = None if policy == FULL else redaction.pattern(mcp_settings.AUDIT_SENSITIVE_KEYS)
        return _json(redaction.redact(obj.arguments, sensitive))

    @admin.display(description=_("input requests"))
    def input_requests_json(self, obj: MCPTask) -> str:
        return _json(obj.input_requests)

    @admin.display(description=_("answers"))
    def answers_json(self, obj: MCPTask) -> str:
        return _json(obj.answers)

    @admin.display(description=_("result"))
    def result_json(self, obj: MCPTask) -> str:
        return _json(obj.result)

    @admin.display(description=_("error"))
    def error_json(self, obj: MCPTask) -> str:
        return _json(obj.error)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if request.user.has_perm(RESULT_PERMISSION):
            return self.base_fields + self.result_fields
        return self.base_fields

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets: list[tuple[Any, dict[str, Any]]] = [(title, {"fields": names}) for title, names in self.sections]
        if request.user.has_perm(RESULT_PERMISSION):
            fieldsets[1:1] = [(title, {"fields": names}) for title, names in self.payload_sections]
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.get_fields(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """The change permission allows the cancel action; a task's page has nothing to save."""
        return obj is None and super().has_change_permission(request)

    @admin.action(description=_("Cancel selected tasks"), permissions=["change"])
    def cancel_tasks(self, request: HttpRequest, queryset: QuerySet[MCPTask]) -> None:
        n = store.cancel_many(queryset)
        self.message_user(request, ngettext("Cancelled %d task.", "Cancelled %d tasks.", n) % n, messages.SUCCESS)


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
        "activity",
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
        "activity",
    )
    readonly_fields = tuple(f for f in fields if f not in ("allowed_scopes", "service_user"))
    raw_id_fields = ("service_user",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[MCPClient]:
        return with_activity(super().get_queryset(request))

    def application(self, obj: MCPClient) -> Any:
        from oauth2_provider.models import get_application_model  # reason: DOT's models need it in INSTALLED_APPS

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
        return client_last_use(obj)

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
        from oauth2_provider.models import get_access_token_model  # reason: DOT's models need it in INSTALLED_APPS

        rows = (
            get_access_token_model()
            .objects.filter(application__client_id=obj.client_id)
            .select_related("user")
            .order_by("-created")[:50]
        )
        registration = registration_scope()
        items = [
            (t.pk, t.user or "—", t.scope, t.expires, _("expired") if t.is_expired() else "")
            if t.scope != registration
            else (t.pk, "—", _("registration access token (RFC 7592)"), _("never"), "")
            for t in rows
        ]
        if not items:
            return str(_("none"))
        return format_html_join("\n", "<div>#{} {} · {} · expires {} {}</div>", items)

    @admin.display(description=_("sessions"))
    def sessions(self, obj: MCPClient) -> str:
        rows = MCPSession.objects.filter(oauth_client=obj.client_id, ended__isnull=True).select_related("user")[:50]
        items = [(session_prefix(s.id), s.user or "—", s.protocol_version, s.last_seen) for s in rows]
        if not items:
            return str(_("none"))
        return format_html_join("\n", "<div>{} {} · {} · last seen {}</div>", items)

    @admin.display(description=_("activity"))
    def activity(self, obj: MCPClient) -> str:
        """Drill-down into the audit log: the usage page narrowed to this client, and its calls."""
        return format_html(
            '<a href="{}" class="mcp-client-usage">{}</a> · <a href="{}" class="mcp-client-calls">{}</a>',
            usage_url(client=obj.client_id),
            _("usage"),
            calls_url(oauth_client=obj.client_id),
            _("calls"),
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # clients register themselves (DCR, CIMD) or are added as DOT applications

    @admin.action(description=_("Disable the selected clients and revoke their tokens"), permissions=["change"])
    def disable_selected(self, request: HttpRequest, queryset: QuerySet[MCPClient]) -> None:
        n = disable_clients(queryset.values_list("client_id", flat=True))
        self.message_user(request, ngettext("Disabled %d client.", "Disabled %d clients.", n) % n, messages.SUCCESS)

    @admin.action(description=_("Enable the selected clients"), permissions=["change"])
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[MCPClient]) -> None:
        n = enable_clients(queryset.values_list("client_id", flat=True))
        self.message_user(request, ngettext("Enabled %d client.", "Enabled %d clients.", n) % n, messages.SUCCESS)

    @admin.action(description=_("Revoke all tokens of the selected clients"), permissions=["change"])
    def revoke_selected_tokens(self, request: HttpRequest, queryset: QuerySet[MCPClient]) -> None:
        n = revoke_tokens(queryset.values_list("client_id", flat=True))
        self.message_user(
            request, ngettext("Revoked %d access token.", "Revoked %d access tokens.", n) % n, messages.SUCCESS
        )


@admin.register(MCPSwitch)
class MCPSwitchAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Kill switches: every registered tool, resource, template and prompt, with an off and an on action.

    Opening the list adds a row (on) for whatever is registered and has none, so staff pick
    switches instead of typing names. Turning one off hides it from every list and refuses it on
    every worker within about a second; connected clients are told their lists changed.
    """

    list_display = ("name", "kind", "enabled", "served", "title", "reason", "changed_by", "changed_at")
    list_display_links = ("name",)
    list_filter = ("enabled", "kind")
    search_fields = ("name", "reason")
    list_select_related = ("changed_by",)
    actions = ["disable_selected", "enable_selected"]
    fields = ("kind", "name", "served", "title", "enabled", "reason", "changed_by", "changed_at")
    readonly_fields = ("kind", "name", "served", "title", "changed_by", "changed_at")

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        switches.ensure_rows(project_servers())
        return super().changelist_view(request, extra_context)

    @staticmethod
    def _registered(obj: MCPSwitch) -> Any:
        """The declaration the switch governs on any served server, or None (a dictionary lookup per server)."""
        attr = {"tool": "tools", "resource": "resources", "template": "templates", "prompt": "prompts"}[obj.kind]
        return next((found for s in project_servers() if (found := getattr(s, attr).get(obj.name))), None)

    @admin.display(description=_("served"), boolean=True)
    def served(self, obj: MCPSwitch) -> bool:
        """Whether a server registers it now (a row outlives a declaration removed from the code)."""
        return self._registered(obj) is not None

    @admin.display(description=_("title"))
    def title(self, obj: MCPSwitch) -> str:
        found = self._registered(obj)
        if found is None:
            return "—"
        text = getattr(found, "title", None) or getattr(found, "description", None) or ""
        return text.strip().splitlines()[0][:120] if text.strip() else "—"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # rows come from the registry: nobody types a name

    def save_model(self, request: HttpRequest, obj: MCPSwitch, form: Any, change: bool) -> None:
        toggled = "enabled" in form.changed_data
        if toggled:
            obj.changed_by, obj.changed_at = switches.changed_by(request.user), timezone.now()
        super().save_model(request, obj, form, change)
        if toggled:
            switches.announce([obj.kind])

    def delete_model(self, request: HttpRequest, obj: MCPSwitch) -> None:
        super().delete_model(request, obj)
        switches.announce([obj.kind])  # no row is "on": a deleted switch turns it back on

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[MCPSwitch]) -> None:
        kinds = set(queryset.values_list("kind", flat=True))
        super().delete_queryset(request, queryset)
        switches.announce(kinds)

    def _toggle(self, request: HttpRequest, queryset: QuerySet[MCPSwitch], enabled: bool) -> int:
        changing = list(queryset.exclude(enabled=enabled))
        n = switches.set_enabled(changing, enabled, user=request.user)
        for row in changing:
            self.log_change(request, row, "Enabled" if enabled else "Disabled")
        return n

    @admin.action(description=_("Disable the selected (hide and refuse them on every worker)"), permissions=["change"])
    def disable_selected(self, request: HttpRequest, queryset: QuerySet[MCPSwitch]) -> None:
        n = self._toggle(request, queryset, False)
        self.message_user(request, ngettext("Disabled %d.", "Disabled %d.", n) % n, messages.SUCCESS)

    @admin.action(description=_("Enable the selected"), permissions=["change"])
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[MCPSwitch]) -> None:
        n = self._toggle(request, queryset, True)
        self.message_user(request, ngettext("Enabled %d.", "Enabled %d.", n) % n, messages.SUCCESS)


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
