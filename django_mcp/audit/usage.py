"""What the admin's usage page shows, computed from the audit log in a handful of grouped queries.

Calls over time per target (the busiest few as series, the rest as "other"), the error rate,
p50/p95 durations per target, the top users and OAuth clients, and what is live now: sessions
not ended (and not idle past ``SESSION_IDLE_TIMEOUT``) and tasks working or waiting for input.
Everything can be narrowed to one user, one client or one target (the drill-down links).

Durations: PostgreSQL computes the percentiles itself (``percentile_cont``); other databases
send the durations of at most ``PERCENTILE_SAMPLE`` most recent calls of the window to Python,
which interpolates the same way, and the page says so when the window held more.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps as django_apps
from django.db import connections, router
from django.db.models import Aggregate, Count, FloatField, Max, Q, QuerySet
from django.db.models.functions import TruncDay, TruncHour
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ..conf import mcp_settings
from ..models import MCPCallRecord, MCPSession, MCPTask

#: Durations sent to Python for the percentiles where the database cannot compute them.
PERCENTILE_SAMPLE = 100_000
#: Targets drawn as their own series in the chart; the others are summed as "other".
SERIES = 6
#: Rows of the per-target, per-user and per-client tables.
TOP = 15
OTHER = "other"


@dataclass(frozen=True)
class Window:
    key: str
    label: Any
    buckets: int
    bucket: timedelta

    @property
    def span(self) -> timedelta:
        return self.bucket * self.buckets


WINDOWS = {
    "24h": Window("24h", _("Last 24 hours"), 24, timedelta(hours=1)),
    "7d": Window("7d", _("Last 7 days"), 28, timedelta(hours=6)),
    "30d": Window("30d", _("Last 30 days"), 30, timedelta(days=1)),
}
DEFAULT_WINDOW = "24h"


class Percentile(Aggregate):
    """PostgreSQL's ``percentile_cont(fraction) WITHIN GROUP (ORDER BY expression)``."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: str, fraction: float) -> None:
        super().__init__(expression, fraction=float(fraction))  # our constant, never user input


def percentile(values: list[float], fraction: float) -> float | None:
    """Linear interpolation between closest ranks (``percentile_cont``'s definition); ``values`` sorted."""
    if not values:
        return None
    position = (len(values) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


@dataclass
class Row:
    """One line of a table: a target, a user or a client, with its counts."""

    key: Any
    label: str
    calls: int
    failures: int
    p50: float | None = None
    p95: float | None = None
    share: float = 0.0  # of the busiest row, for the bar's width (0..100)

    @property
    def error_rate(self) -> float:
        return 100.0 * self.failures / self.calls if self.calls else 0.0


@dataclass
class Bucket:
    start: datetime
    counts: list[int]  # per series, in ``Usage.series`` order

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclass
class Usage:
    window: Window
    since: datetime
    until: datetime
    total: int = 0
    failures: int = 0
    p50: float | None = None
    p95: float | None = None
    sampled: bool = False  # percentiles from the latest PERCENTILE_SAMPLE calls only
    series: list[str] = field(default_factory=list)
    buckets: list[Bucket] = field(default_factory=list)
    targets: list[Row] = field(default_factory=list)
    users: list[Row] = field(default_factory=list)
    clients: list[Row] = field(default_factory=list)
    sessions: int = 0
    sessions_by_client: list[tuple[str, int]] = field(default_factory=list)
    tasks: dict[str, int] = field(default_factory=dict)
    tasks_by_tool: list[tuple[str, int]] = field(default_factory=list)

    @property
    def error_rate(self) -> float:
        return 100.0 * self.failures / self.total if self.total else 0.0

    @property
    def peak(self) -> int:
        return max((b.total for b in self.buckets), default=0)


def _end_of_window(now: datetime, window: Window) -> datetime:
    """The end of the bucket ``now`` falls in, in the current time zone (a day is a local day)."""
    local = timezone.localtime(now) if timezone.is_aware(now) else now
    hour = local.replace(minute=0, second=0, microsecond=0)
    if window.bucket >= timedelta(days=1):
        return hour.replace(hour=0) + timedelta(days=1)
    step = int(window.bucket.total_seconds() // 3600)
    return hour.replace(hour=hour.hour - hour.hour % step) + window.bucket


def usage(
    window_key: str = DEFAULT_WINDOW,
    *,
    user: Any = None,
    client: str | None = None,
    target: str | None = None,
    now: datetime | None = None,
) -> Usage:
    """The page's figures for ``window_key`` ("24h", "7d", "30d"), narrowed to a user id, client or target.

    ``user="anonymous"`` narrows to calls without a user.
    """
    window = WINDOWS.get(window_key, WINDOWS[DEFAULT_WINDOW])
    until = _end_of_window(now or timezone.now(), window)
    since = until - window.span
    calls = MCPCallRecord.objects.filter(at__gte=since, at__lt=until).order_by()
    if user == "anonymous":
        calls = calls.filter(user__isnull=True)
    elif user is not None:
        calls = calls.filter(user_id=user)
    if client is not None:
        calls = calls.filter(oauth_client=client)
    if target is not None:
        calls = calls.filter(target=target)
    failed = Q(outcome__in=MCPCallRecord.FAILURES)
    result = Usage(window, since, until)

    totals = calls.aggregate(n=Count("id"), failures=Count("id", filter=failed))
    result.total, result.failures = totals["n"], totals["failures"]
    targets = list(
        calls.values("target").annotate(n=Count("id"), failures=Count("id", filter=failed)).order_by("-n", "target")
    )
    result.targets = [Row(t["target"], t["target"] or "—", t["n"], t["failures"]) for t in targets[:TOP]]
    _durations(calls, result)
    result.series = [t["target"] for t in targets[:SERIES]]
    if len(targets) > SERIES:
        result.series.append(OTHER)
    result.buckets = _buckets(calls, result.series, window, since)
    result.users = _parties(calls, "user_id", failed)
    result.clients = _parties(calls, "oauth_client", failed)
    _live(result, user, client, target)
    for rows in (result.targets, result.users, result.clients):
        top = max((r.calls for r in rows), default=0)
        for row in rows:
            row.share = 100.0 * row.calls / top if top else 0.0
    return result


def _durations(calls: QuerySet[MCPCallRecord], result: Usage) -> None:
    """p50/p95 per shown target and overall."""
    shown = [r.key for r in result.targets]
    by_target = {r.key: r for r in result.targets}
    vendor = connections[router.db_for_read(MCPCallRecord)].vendor
    if vendor == "postgresql":
        for row in (
            calls.filter(target__in=shown)
            .values("target")
            .annotate(p50=Percentile("duration_ms", 0.5), p95=Percentile("duration_ms", 0.95))
        ):
            by_target[row["target"]].p50, by_target[row["target"]].p95 = row["p50"], row["p95"]
        overall = calls.aggregate(p50=Percentile("duration_ms", 0.5), p95=Percentile("duration_ms", 0.95))
        result.p50, result.p95 = overall["p50"], overall["p95"]
        return
    sample = list(calls.order_by("-at").values_list("target", "duration_ms")[:PERCENTILE_SAMPLE])
    result.sampled = result.total > len(sample)
    grouped: dict[str, list[float]] = defaultdict(list)
    for name, ms in sample:
        grouped[name].append(ms)
    for name, row in by_target.items():
        values = sorted(grouped.get(name, ()))
        row.p50, row.p95 = percentile(values, 0.5), percentile(values, 0.95)
    everything = sorted(ms for _, ms in sample)
    result.p50, result.p95 = percentile(everything, 0.5), percentile(everything, 0.95)


def _buckets(calls: QuerySet[MCPCallRecord], series: list[str], window: Window, since: datetime) -> list[Bucket]:
    """Calls per bucket and series: grouped by hour (or day) in the database, folded into buckets here."""
    trunc = TruncDay("at") if window.bucket >= timedelta(days=1) else TruncHour("at")
    buckets = [Bucket(since + window.bucket * i, [0] * len(series)) for i in range(window.buckets)]
    index = {name: i for i, name in enumerate(series)}
    other = index.get(OTHER)
    for row in calls.annotate(slot=trunc).values("slot", "target").annotate(n=Count("id")):
        slot = row["slot"]
        if slot is None:
            continue
        if timezone.is_naive(slot) and timezone.is_aware(since):
            slot = timezone.make_aware(slot)
        position = int((slot - since) / window.bucket)
        if not 0 <= position < len(buckets):
            continue
        column = index.get(row["target"], other)
        if column is not None:
            buckets[position].counts[column] += row["n"]
    return buckets


def _parties(calls: QuerySet[MCPCallRecord], key: str, failed: Q) -> list[Row]:
    """The busiest users (by id, labelled with their latest name) or OAuth clients (labelled with their name)."""
    rows = (
        calls.values(key)
        .annotate(n=Count("id"), failures=Count("id", filter=failed), name=Max("username"))
        .order_by("-n", key)[:TOP]
    )
    found = [Row(r[key], "", r["n"], r["failures"]) for r in rows]
    if key == "user_id":
        for row, r in zip(found, rows, strict=True):
            row.label = r["name"] or (str(row.key) if row.key is not None else str(_("anonymous")))
    else:
        names = client_names([r.key for r in found if r.key])
        for row in found:
            row.label = names.get(row.key, row.key) if row.key else str(_("no OAuth client"))
    return found


def client_names(client_ids: list[str]) -> dict[str, str]:
    """The OAuth applications' names by client id (none without django-oauth-toolkit installed)."""
    if not client_ids or not django_apps.is_installed("oauth2_provider"):
        return {}
    from oauth2_provider.models import get_application_model  # reason: DOT's models need it in INSTALLED_APPS

    apps = get_application_model().objects.filter(client_id__in=client_ids).values_list("client_id", "name")
    return {cid: f"{name} ({cid[:8]}…)" if name else cid for cid, name in apps}


def _live(result: Usage, user: Any, client: str | None, target: str | None) -> None:
    """Sessions open now and tasks still running, narrowed like the calls."""
    idle = timezone.now() - timedelta(seconds=float(mcp_settings.SESSION_IDLE_TIMEOUT))
    sessions = MCPSession.objects.filter(ended__isnull=True, last_seen__gte=idle).order_by()
    tasks = MCPTask.objects.filter(status__in=(MCPTask.WORKING, MCPTask.INPUT_REQUIRED)).order_by()
    if user == "anonymous":
        sessions, tasks = sessions.filter(user__isnull=True), tasks.filter(user__isnull=True)
    elif user is not None:
        sessions, tasks = sessions.filter(user_id=user), tasks.filter(user_id=user)
    if client is not None:
        sessions, tasks = sessions.filter(oauth_client=client), tasks.filter(oauth_client=client)
    if target is not None:
        tasks = tasks.filter(tool=target)
    by_client = list(sessions.values("oauth_client").annotate(n=Count("id")).order_by("-n", "oauth_client")[:5])
    result.sessions = sessions.count()
    names = client_names([r["oauth_client"] for r in by_client if r["oauth_client"]])
    result.sessions_by_client = [
        (names.get(r["oauth_client"], r["oauth_client"]) or str(_("no OAuth client")), r["n"]) for r in by_client
    ]
    result.tasks = {status: 0 for status in (MCPTask.WORKING, MCPTask.INPUT_REQUIRED)}
    for row in tasks.values("status").annotate(n=Count("id")):
        result.tasks[row["status"]] = row["n"]
    result.tasks_by_tool = [
        (r["tool"], r["n"]) for r in tasks.values("tool").annotate(n=Count("id")).order_by("-n", "tool")[:5]
    ]


__all__ = ["DEFAULT_WINDOW", "PERCENTILE_SAMPLE", "WINDOWS", "Row", "Usage", "Window", "client_names", "usage"]
