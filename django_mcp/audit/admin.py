"""The audit log in the admin: the calls (searchable, filtered, read-only) and the usage page.

Records are facts: nobody adds, changes or deletes one here (``mcp_cleanup`` prunes them).
Their arguments and results are the callers' data, shown only to staff holding the
``view_mcpcallrecord_payload`` permission. The usage page (``usage/`` under the calls'
changelist, linked from it and from the app's index) needs the calls' view permission;
staff reach it narrowed to one user, OAuth client or target from the links of its tables,
of the calls' user filter and of the MCP clients' list.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import django
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied
from django.db import DataError
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from ..models import MCPCallRecord, MCPTask
from . import usage as usage_data

#: The permission (``app_label.codename``) that shows a record's arguments and result.
PAYLOAD_PERMISSION = "django_mcp.view_mcpcallrecord_payload"
#: Colours of the chart's series, the last for "other" (readable on the admin's light and dark themes).
PALETTE = ("#417690", "#e8a33d", "#5b9a68", "#c0504d", "#8064a2", "#4bacc6", "#9a9a9a")
#: The chart's drawing area, in SVG units.
CHART_WIDTH, CHART_HEIGHT = 960, 200


def usage_url(**params: Any) -> str:
    """The usage page, narrowed by ``params`` (``user``, ``client``, ``target``, ``window``)."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return reverse("admin:django_mcp_mcpcallrecord_usage") + (f"?{query}" if query else "")


def calls_url(**params: Any) -> str:
    """The calls' changelist, filtered by ``params`` (its own lookups: ``oauth_client``, ``user__id__exact``...)."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return reverse("admin:django_mcp_mcpcallrecord_changelist") + (f"?{query}" if query else "")


#: Most choices a filter of client-chosen values offers in the sidebar (the others: search, or the usage page).
MAX_FILTER_CHOICES = 50


class TargetFilter(admin.SimpleListFilter):
    """What the project declares (its tools, prompts and static resources), and one choice for the rest.

    Names come from clients: offering every distinct one as a link let any caller fill the sidebar
    (hundreds of links after a few requests of unknown tool names). Any name still filters through
    ``?target=`` (the usage page's links).
    """

    title = _("tool, resource or prompt")
    parameter_name = "target"
    OTHER = "__other__"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        names = sorted(declared_targets())[:MAX_FILTER_CHOICES]
        return [(name, name) for name in names] + [(self.OTHER, str(_("anything else (not declared)")))]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        value = self.value()
        if value is None:
            return queryset
        if value == self.OTHER:
            return queryset.exclude(target__in=declared_targets())
        return queryset.filter(target=value)


def declared_targets() -> set[str]:
    """The names of every tool and prompt and the URI of every static resource the project's servers declare."""
    from ..checks import project_servers  # reason: the servers mounted by the project, known once it is loaded

    names: set[str] = set()
    for server in project_servers():
        names.update(server.tools)
        names.update(server.prompts)
        names.update(server.resources)
    return names


class ClientFilter(admin.AllValuesFieldListFilter):
    """The OAuth clients seen, at most ``MAX_FILTER_CHOICES`` of them (client ids can be chosen by clients)."""

    title = _("OAuth client")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lookup_choices = self.lookup_choices[:MAX_FILTER_CHOICES]


@admin.register(MCPCallRecord)
class MCPCallRecordAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Every audited call: who, what, how it ended, how long; the usage page behind the "Usage" link."""

    list_display = (
        "at",
        "method",
        "target",
        "outcome_label",
        "who",
        "oauth_client",
        "session",
        "transport",
        "duration",
        "task",
    )
    list_display_links = ("at",)
    list_filter = (
        "outcome",
        "method",
        TargetFilter,
        ("user", admin.RelatedOnlyFieldListFilter),
        ("oauth_client", ClientFilter),
        "transport",
        "at",
    )
    search_fields = ("target", "username", "oauth_client", "^session", "^task_id")
    date_hierarchy = "at"
    show_full_result_count = False  # no COUNT(*) of a large table on every page
    change_list_template = "admin/django_mcp/mcpcallrecord/change_list.html"
    base_fields = (
        "at",
        "method",
        "target",
        "outcome",
        "error_code",
        "http_status",
        "user_link",
        "username",
        "oauth_client",
        "session",
        "revision",
        "transport",
        "duration",
        "request_bytes",
        "response_bytes",
        "task",
    )
    payload_fields = ("arguments_json", "result_json")

    @admin.display(description=_("outcome"), ordering="outcome")
    def outcome_label(self, obj: MCPCallRecord) -> str:
        label = str(obj.get_outcome_display())
        detail = obj.http_status or obj.error_code
        return f"{label} ({detail})" if detail is not None else label

    @admin.display(description=_("user"), ordering="username")
    def who(self, obj: MCPCallRecord) -> str:
        if obj.user_id is None:
            return str(_("anonymous")) if not obj.username else obj.username
        return format_html('<a href="{}">{}</a>', calls_url(user__id__exact=obj.user_id), obj.username or obj.user_id)

    @admin.display(description=_("user"))
    def user_link(self, obj: MCPCallRecord) -> str:
        if obj.user_id is None:
            return str(_("anonymous"))
        return format_html(
            '<a href="{}">{}</a> · <a href="{}">{}</a>',
            calls_url(user__id__exact=obj.user_id),
            _("all calls"),
            usage_url(user=obj.user_id),
            _("usage"),
        )

    @admin.display(description=_("duration"), ordering="duration_ms")
    def duration(self, obj: MCPCallRecord) -> str:
        """Milliseconds as a person reads them: two decimals below 1 ms, one above."""
        ms = obj.duration_ms
        return f"{ms:.2f} ms" if ms < 1 else f"{ms:,.1f} ms"

    @admin.display(description=_("MCP task"), ordering="task_id")
    def task(self, obj: MCPCallRecord) -> str:
        if not obj.task_id:
            return "—"
        # quote(): a task id may hold "_" and two hex digits, which the admin's unquote() reads as an escape.
        link = reverse("admin:django_mcp_mcptask_change", args=[quote(obj.task_id)])
        return format_html('<a href="{}">{}…</a>', link, obj.task_id[:8])

    @admin.display(description=_("arguments"))
    def arguments_json(self, obj: MCPCallRecord) -> str:
        if obj.arguments is None:
            return str(_("not kept (the declaration's audit policy)"))
        return _json(obj.arguments)

    @admin.display(description=_("result"))
    def result_json(self, obj: MCPCallRecord) -> str:
        if obj.result is None:
            return str(_("not kept (only audit='full' keeps results)"))
        return _json(obj.result)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if request.user.has_perm(PAYLOAD_PERMISSION):
            return self.base_fields + self.payload_fields
        return self.base_fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.get_fields(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # records are pruned by mcp_cleanup after AUDIT_RETENTION, never edited away

    # -- the usage page ---------------------------------------------------------------------
    def get_urls(self) -> list[URLPattern]:
        usage = path(
            "usage/",
            self.admin_site.admin_view(self.usage_view),
            name=f"{self.opts.app_label}_{self.opts.model_name}_usage",
        )
        return [usage, *super().get_urls()]

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        """An id or a date beyond what the database stores (``?user=99999999999999999999``) is a bad lookup:
        Django's "invalid filter" redirect, not a 500 from the database driver."""
        try:
            return super().get_changelist_instance(request)
        except (OverflowError, ValueError, DataError) as exc:  # DataError: PostgreSQL's "out of range"
            raise IncorrectLookupParameters(exc) from exc

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """The calls, with a "Usage" link narrowed as the list is (by client or user)."""
        get = request.GET
        narrowed = usage_url(client=get.get("oauth_client"), user=get.get("user__id__exact"), target=get.get("target"))
        return super().changelist_view(request, {**(extra_context or {}), "usage_url": narrowed})

    def usage_view(self, request: HttpRequest) -> HttpResponse:
        """Calls over time per target, error rate, p50/p95, top users and clients, live sessions and tasks."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        get = request.GET
        window = get.get("window", usage_data.DEFAULT_WINDOW)
        user: Any = get.get("user") or None
        if user not in (None, "anonymous"):
            try:  # to_python, then the field's range (an id the database cannot hold would fail the query)
                user = MCPCallRecord._meta.get_field("user").target_field.clean(user, None)  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - a malformed id narrows to nobody rather than failing
                user = None
        client = get.get("client")
        target = get.get("target")
        data = usage_data.usage(window, user=user, client=client, target=target)
        narrowing = {"user": get.get("user"), "client": client, "target": target}
        context = {
            **self.admin_site.each_context(request),
            "breadcrumbs_list": django.VERSION >= (6, 1),  # 6.1's admin styles <ol class="breadcrumbs"> only
            "opts": self.opts,
            "title": _("MCP usage"),
            "usage": data,
            "windows": [
                (w, w.key == data.window.key, usage_url(window=w.key, **narrowing)) for w in usage_data.WINDOWS.values()
            ],
            "narrowed": _narrowed(data, user, client, target),
            "clear_url": usage_url(window=data.window.key),
            "calls_url": calls_url(
                **({"oauth_client": client} if client is not None else {}),
                **({"user__id__exact": user} if user not in (None, "anonymous") else {}),
                **({"user__isnull": "True"} if user == "anonymous" else {}),
                **({"target": target} if target is not None else {}),
            ),
            "chart": _chart(data),
            "legend": [(name, _colour(i, name)) for i, name in enumerate(data.series)],
            "targets": [
                (row, usage_url(window=data.window.key, target=row.key, user=narrowing["user"], client=client))
                for row in data.targets
            ],
            "users": [_party_links(row, data, "user") for row in data.users],
            "clients": [_party_links(row, data, "client") for row in data.clients],
            "task_labels": {MCPTask.WORKING: _("working"), MCPTask.INPUT_REQUIRED: _("input required")},
        }
        return TemplateResponse(request, "admin/django_mcp/mcpcallrecord/usage.html", context)


def _colour(index: int, name: str) -> str:
    """A series' colour: by rank, "other" always the last (grey)."""
    return PALETTE[-1] if name == usage_data.OTHER else PALETTE[min(index, len(PALETTE) - 2)]


def _json(value: Any) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


def _narrowed(data: usage_data.Usage, user: Any, client: str | None, target: str | None) -> list[str]:
    """What the page is narrowed to, in words."""
    parts: list[str] = []
    if user == "anonymous":
        parts.append(str(_("anonymous callers")))
    elif user is not None:
        label = next((r.label for r in data.users if r.key == user), str(user))
        parts.append(f"{_('user')} {label}")
    if client is not None:
        label = usage_data.client_names([client]).get(client, client) if client else str(_("no OAuth client"))
        parts.append(f"{_('client')} {label}")
    if target is not None:
        parts.append(f"{_('target')} {target}")
    return parts


def _party_links(row: usage_data.Row, data: usage_data.Usage, kind: str) -> tuple[usage_data.Row, str, str]:
    """A user's or client's row with its drill-down links: the usage page narrowed to it, and its calls."""
    if kind == "user":
        key = "anonymous" if row.key is None else row.key
        calls = calls_url(user__isnull="True") if row.key is None else calls_url(user__id__exact=row.key)
        return row, usage_url(window=data.window.key, user=key), calls
    return row, usage_url(window=data.window.key, client=row.key), calls_url(oauth_client=row.key)


def _chart(data: usage_data.Usage) -> dict[str, Any]:
    """Stacked bars in SVG units: one column per bucket, one segment per series; no script, no library."""
    peak = data.peak or 1
    slot = CHART_WIDTH / max(1, len(data.buckets))
    bar = max(1.0, slot * 0.8)
    columns = []
    for i, bucket in enumerate(data.buckets):
        y = float(CHART_HEIGHT)
        segments = []
        for j, count in enumerate(bucket.counts):
            if not count:
                continue
            height = CHART_HEIGHT * count / peak
            y -= height
            name = data.series[j]
            colour = PALETTE[-1] if name == usage_data.OTHER else PALETTE[min(j, len(PALETTE) - 1)]
            segments.append(
                {"y": round(y, 2), "height": round(height, 2), "colour": colour, "name": name, "count": count}
            )
        columns.append(
            {"x": round(i * slot + (slot - bar) / 2, 2), "width": round(bar, 2), "bucket": bucket, "segments": segments}
        )
    every = max(1, len(data.buckets) // 6)
    labels = [{"x": round(i * slot + slot / 2, 2), "bucket": b} for i, b in enumerate(data.buckets) if i % every == 0]
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "columns": columns,
        "labels": labels,
        "peak": data.peak,
        "daily": data.window.bucket.total_seconds() >= 86400,
    }
