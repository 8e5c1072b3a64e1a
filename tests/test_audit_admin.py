"""The audit log in the admin, in process: the calls' list (filters, search, read-only, who may see
arguments), the usage page's figures for calls made through the door, its drill-downs, and who may
open it (two users, two OAuth clients, staff with and without the permission, a non-staff user).

The same page in a real browser against a real server is ``test_audit_browser.py``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from oauth2_provider.models import get_application_model

from django_mcp.audit import middleware as audit
from django_mcp.audit import usage as usage_data
from django_mcp.audit.redaction import SUBSTITUTE
from django_mcp.models import MCPCallRecord, MCPClient, MCPTask
from django_mcp.test import MCPTestClient

pytestmark = pytest.mark.django_db

USAGE = "admin:django_mcp_mcpcallrecord_usage"
CALLS = "admin:django_mcp_mcpcallrecord_changelist"
Application = get_application_model()


def app(name: str) -> Any:
    return Application.objects.create(
        name=name,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1:9/callback",
    )


def staff(username: str, *codenames: str) -> Client:
    user = User.objects.create_user(username, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.fixture
def world() -> dict[str, Any]:
    """alice calls through Claude, bob through Cursor: 7 calls, 1 tool error, made through the door."""
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    claude, cursor = app("Claude"), app("Cursor")
    client = MCPTestClient(protocol_version="2025-11-25")
    client.force_authenticate(alice, scopes=["mcp"], client_id=claude.client_id)
    for n in range(3):
        client.call_tool("add", {"a": n, "b": 1})
    client.call_tool("fail", {"kind": "tool"})
    other = MCPTestClient()
    other.force_authenticate(bob, scopes=["mcp"], client_id=cursor.client_id)
    other.call_tool("add", {"a": 1, "b": 1})
    other.call_tool("echo", {"text": "hi"})
    other.call_tool("echo", {"text": "again"})
    assert audit.flush() == 7
    return {"alice": alice, "bob": bob, "claude": claude, "cursor": cursor, "session": client.session.id}


def cell(html: str, row: str, column: str) -> str:
    """The text of a ``<td class="column">`` in the table row ``<tr row>``."""
    found = re.search(rf"<tr {re.escape(row)}>(.*?)</tr>", html, re.S)
    assert found, f"no row {row} in the page"
    value = re.search(rf'<td class="num {column}[^"]*">(.*?)</td>', found.group(1), re.S)
    assert value, f"no {column} in row {row}"
    return value.group(1).strip()


def metric(html: str, name: str) -> str:
    found = re.search(rf'data-metric="{name}">([^<]*)<', html)
    assert found, name
    return found.group(1).strip()


def test_the_usage_page_counts_what_was_called(world: dict[str, Any]) -> None:
    html = staff("auditor", "view_mcpcallrecord").get(reverse(USAGE)).content.decode()
    assert (metric(html, "calls"), metric(html, "failures"), metric(html, "error-rate")) == ("7", "1", "14.3%")
    assert cell(html, 'data-target="add"', "calls") == "4"
    assert cell(html, 'data-target="fail"', "errors") == "100.0% (1)"
    assert cell(html, 'data-target="echo"', "calls") == "2"
    assert cell(html, f'data-user="{world["alice"].pk}"', "calls") == "4"
    assert cell(html, f'data-user="{world["bob"].pk}"', "calls") == "3"
    assert cell(html, f'data-client="{world["claude"].client_id}"', "errors") == "25.0% (1)"
    assert cell(html, f'data-client="{world["cursor"].client_id}"', "calls") == "3"
    assert "Claude (" in html and "Cursor (" in html  # clients named after their OAuth application
    assert metric(html, "p50").endswith(" ms") and metric(html, "p95").endswith(" ms")
    # The chart: this hour's column holds the 7 calls, stacked by tool; no script on the page.
    totals = [int(t) for t in re.findall(r'data-total="(\d+)"', html)]
    assert len(totals) == 24 and totals[-1] == 7 and sum(totals) == 7
    assert re.findall(r'data-series="add" data-count="(\d+)"', html) == ["4"]
    assert "<script" not in html.split('id="mcp-usage"')[1]
    assert metric(html, "sessions") == "1"  # alice's handshake-era session is open (bob's era has none)


def test_windows_and_drill_downs_narrow_every_figure(world: dict[str, Any]) -> None:
    browser = staff("auditor", "view_mcpcallrecord")
    cursor, alice = world["cursor"].client_id, world["alice"].pk

    def page(**query: Any) -> str:
        response = browser.get(reverse(USAGE), query)
        assert response.status_code == 200
        return response.content.decode()

    narrowed = page(client=cursor)
    assert metric(narrowed, "calls") == "3" and metric(narrowed, "failures") == "0"
    assert "Narrowed to" in narrowed and "Cursor" in narrowed
    assert f"?oauth_client={cursor}" in narrowed  # "See these calls": the list filtered alike
    assert f'data-user="{world["alice"].pk}"' not in narrowed
    assert metric(page(user=alice), "calls") == "4" and metric(page(user=alice), "sessions") == "1"
    assert metric(page(target="fail"), "calls") == "1"
    assert metric(page(user="anonymous"), "calls") == "0"
    assert metric(page(user="not-a-number"), "calls") == "7"  # a malformed id is ignored, never a 500
    for window, columns in (("7d", 28), ("30d", 30), ("bogus", 24)):
        html = page(window=window)
        assert metric(html, "calls") == "7" and len(re.findall(r'data-total="', html)) == columns
    # A user's row links to the page narrowed to them and to their calls.
    html = page()
    assert f"?window=24h&amp;user={alice}" in html and f"?user__id__exact={alice}" in html


def test_the_buckets_and_percentiles_are_computed_right() -> None:
    """Known times and durations: 100 calls of 1..100 ms, spread over the window's buckets."""
    now = timezone.now()
    client = MCPTestClient()
    for _ in range(100):
        client.call_tool("echo", {"text": "x"})
    audit.flush()
    for n, record in enumerate(MCPCallRecord.objects.order_by("id"), start=1):
        record.duration_ms = float(n)
        record.at = now - timedelta(hours=n % 10)  # 10 per hour, over the last 10 hours
        record.save()
    data = usage_data.usage("24h", now=now)
    assert data.total == 100
    assert (data.p50, data.p95) == (pytest.approx(50.5), pytest.approx(95.05))
    assert [b.total for b in data.buckets][-10:] == [10] * 10 and sum(b.total for b in data.buckets) == 100
    assert data.buckets[-1].start <= now < data.buckets[-1].start + timedelta(hours=1)
    daily = usage_data.usage("30d", now=now)
    assert sum(b.total for b in daily.buckets) == 100 and daily.buckets[-1].total >= 1
    MCPCallRecord.objects.update(at=now - timedelta(days=2))
    assert usage_data.usage("24h", now=now).total == 0 and usage_data.usage("7d", now=now).total == 100


def test_the_page_shows_open_sessions_and_running_tasks(world: dict[str, Any]) -> None:
    now = timezone.now()
    for n, status in enumerate(("working", "working", "input_required", "completed")):
        MCPTask.objects.create(
            id=f"task-{n}", tool="report", protocol_version="2025-11-25", status=status, created=now, updated=now,
            user=world["bob"], oauth_client=world["cursor"].client_id,
        )  # fmt: skip
    browser = staff("auditor", "view_mcpcallrecord")
    html = browser.get(reverse(USAGE)).content.decode()
    assert (metric(html, "tasks-working"), metric(html, "tasks-input_required")) == ("2", "1")
    html = browser.get(reverse(USAGE), {"user": world["alice"].pk}).content.decode()
    assert (metric(html, "tasks-working"), metric(html, "sessions")) == ("0", "1")


def test_the_page_makes_the_same_few_queries_however_many_callers(world: dict[str, Any]) -> None:
    browser = staff("auditor", "view_mcpcallrecord")
    browser.get(reverse(USAGE))
    with CaptureQueriesContext(connection) as few:
        browser.get(reverse(USAGE))
    apps = [app(f"App {n}").client_id for n in range(4)]  # an application costs ~0.5 s (its hashed secret)
    for n in range(12):
        client = MCPTestClient()
        client.force_authenticate(User.objects.create_user(f"user{n}"), scopes=["mcp"], client_id=apps[n % 4])
        client.call_tool("echo", {"text": str(n)})
    audit.flush()
    with CaptureQueriesContext(connection) as many:
        browser.get(reverse(USAGE))
    assert len(many) == len(few) <= 25, [q["sql"] for q in many.captured_queries]


# -- who may look --------------------------------------------------------------------------------------


def test_only_staff_with_the_view_permission_see_calls_or_usage(world: dict[str, Any]) -> None:
    """Attack: a signed-in non-staff user and a staff member without the permission get nothing."""
    mallory = User.objects.create_user("mallory")  # signed in, not staff
    outsider = Client()
    outsider.force_login(mallory)
    intern = staff("intern")  # staff, no permission on the audit log
    auditor = staff("auditor", "view_mcpcallrecord")
    record = MCPCallRecord.objects.filter(username="bob").first()
    assert record is not None
    pages = [reverse(USAGE), reverse(CALLS), reverse("admin:django_mcp_mcpcallrecord_change", args=[record.pk])]
    for url in pages:
        response = outsider.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url
        anonymous = Client().get(url)
        assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"], url
        assert intern.get(url).status_code == 403, url
        assert auditor.get(url).status_code == 200, url
    assert "alice" not in intern.get(reverse(USAGE)).content.decode()


def test_records_are_read_only_and_arguments_need_their_own_permission(world: dict[str, Any]) -> None:
    caller = MCPTestClient()
    caller.force_authenticate(world["bob"], scopes=["mcp"], client_id=world["cursor"].client_id)
    caller.call_tool("echo", {"text": "hi", "api_key": "sk-secret"})  # an unknown argument: a tool error
    audit.flush()
    record = MCPCallRecord.objects.get(target="echo", arguments__api_key=SUBSTITUTE)
    change = reverse("admin:django_mcp_mcpcallrecord_change", args=[record.pk])
    viewer = staff("viewer", "view_mcpcallrecord")
    page = viewer.get(change).content.decode()
    assert "bob" in page and "echo" in page and "sk-secret" not in page and SUBSTITUTE not in page
    reader = staff("reader", "view_mcpcallrecord", "view_mcpcallrecord_payload")
    page = reader.get(change).content.decode()
    assert SUBSTITUTE in page and "sk-secret" not in page  # masked when recorded, not only when shown
    boss = User.objects.create_superuser("boss", "boss@example.com", None)
    admin = Client()
    admin.force_login(boss)
    assert admin.get(reverse("admin:django_mcp_mcpcallrecord_add")).status_code == 403
    assert admin.post(change, {"target": "forged"}).status_code == 403
    assert admin.post(reverse("admin:django_mcp_mcpcallrecord_delete", args=[record.pk])).status_code == 403
    listing = admin.get(reverse(CALLS)).content.decode()
    assert "delete_selected" not in listing
    MCPCallRecord.objects.get(pk=record.pk)  # still there, unchanged
    assert MCPCallRecord.objects.get(pk=record.pk).target == "echo"


def test_durations_read_as_milliseconds(world: dict[str, Any]) -> None:
    """The record shows "0.11 ms" (two decimals under 1 ms, one above), never the stored float."""
    now = timezone.now()
    fast = MCPCallRecord.objects.create(
        at=now, method="tools/call", target="echo", outcome=MCPCallRecord.OK, duration_ms=0.10782199979075813
    )
    slow = MCPCallRecord.objects.create(
        at=now, method="tools/call", target="echo", outcome=MCPCallRecord.OK, duration_ms=1234.5678
    )
    viewer = staff("timer", "view_mcpcallrecord")
    for record, shown in ((fast, "0.11 ms"), (slow, "1,234.6 ms")):
        page = viewer.get(reverse("admin:django_mcp_mcpcallrecord_change", args=[record.pk])).content.decode()
        assert shown in page and str(record.duration_ms) not in page, shown
    listing = viewer.get(reverse(CALLS)).content.decode()
    assert "0.11 ms" in listing and "1,234.6 ms" in listing


def test_out_of_range_filters_are_bad_lookups_not_500s(world: dict[str, Any]) -> None:
    """An id or a year no database column holds: the list answers Django's "invalid filter" redirect,
    the usage page shows everyone's usage; neither reaches the database driver's OverflowError."""
    viewer = staff("ranger", "view_mcpcallrecord")
    viewer.raise_request_exception = False
    huge = "9" * 30
    for query in (f"user={huge}", f"user__id__exact={huge}", "at__year=99999999999", f"user=-{huge}"):
        listing = viewer.get(reverse(CALLS) + "?" + query)
        assert listing.status_code in (200, 302), (query, listing.status_code)
        if listing.status_code == 302:
            assert listing["Location"].endswith("?e=1")
    usage = viewer.get(reverse(USAGE) + f"?user={huge}")
    assert usage.status_code == 200 and "MCP usage" in usage.content.decode()


def test_the_calls_list_filters_and_searches(world: dict[str, Any]) -> None:
    browser = staff("auditor", "view_mcpcallrecord")

    def count(**query: Any) -> int:
        response = browser.get(reverse(CALLS), query)
        assert response.status_code == 200, query
        return int(response.context["cl"].result_count)

    alice, cursor = world["alice"], world["cursor"]
    assert count() == 7
    assert count(target="add") == 4
    assert count(user__id__exact=alice.pk) == 4
    assert count(oauth_client=cursor.client_id) == 3
    assert count(outcome="tool_error") == 1
    assert count(**{"at__gte": (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S%z")}) == 7
    assert count(q="bob") == 3
    assert count(q=world["session"][:8]) == 4  # a pasted session prefix
    html = browser.get(reverse(CALLS), {"oauth_client": cursor.client_id}).content.decode()
    assert f'href="{reverse(USAGE)}?client={cursor.client_id}"' in html  # "Usage", narrowed like the list


def test_names_callers_choose_do_not_fill_the_filters(world: dict[str, Any]) -> None:
    """400 unknown tool names from a caller: the target filter still offers only what the project declares and
    one "anything else" choice; each name still filters through ?target= (the usage page's links)."""
    now = timezone.now()
    MCPCallRecord.objects.bulk_create(
        MCPCallRecord(at=now, method="tools/call", target=f"junk-{n}", outcome=MCPCallRecord.REFUSED, duration_ms=0.1)
        for n in range(400)
    )
    browser = staff("filterer", "view_mcpcallrecord")
    html = browser.get(reverse(CALLS)).content.decode()
    sidebar = html.split('id="changelist-filter"')[1].split('id="changelist-form"')[0]  # <nav> on 5.2, <search> on 6.1
    assert "junk-" not in sidebar and "?target=add" in sidebar
    assert "?target=add" in html and "?target=__other__" in html
    assert browser.get(reverse(CALLS), {"target": "junk-7"}).context["cl"].result_count == 1
    assert browser.get(reverse(CALLS), {"target": "__other__"}).context["cl"].result_count == 400


def test_the_clients_page_and_the_app_index_link_to_usage(world: dict[str, Any]) -> None:
    boss = User.objects.create_superuser("boss", "boss@example.com", None)
    admin = Client()
    admin.force_login(boss)
    clients = admin.get(reverse("admin:django_mcp_mcpclient_changelist")).content.decode()
    for registered in (world["claude"], world["cursor"]):
        assert f'href="{reverse(USAGE)}?client={registered.client_id}"' in clients
        assert f'href="{reverse(CALLS)}?oauth_client={registered.client_id}"' in clients
    row = MCPClient.objects.get(client_id=world["claude"].client_id)
    detail = admin.get(reverse("admin:django_mcp_mcpclient_change", args=[row.pk]))
    assert f"?client={world['claude'].client_id}" in detail.content.decode()
    index = admin.get(reverse("admin:app_list", args=["django_mcp"])).content.decode()
    assert f'href="{reverse(USAGE)}"' in index


def test_a_records_task_link_opens_its_task_whatever_its_id() -> None:
    """A task id is URL-safe base64: "_6A" in it is an escape to the admin's unquote() unless the link quotes it."""
    now = timezone.now()
    task_id = "Ab_6AcD_3Ct7" + "x" * 31  # "_6A" and "_3C": read back as "j" and "<" when not quoted
    MCPTask.objects.create(
        id=task_id, tool="slow_report", arguments={}, protocol_version="2026-07-28", status=MCPTask.WORKING,
        created=now, updated=now, expires=now + timedelta(hours=1), ttl_ms=3_600_000,
    )  # fmt: skip
    record = MCPCallRecord.objects.create(
        at=now, method="tools/call", target="slow_report", outcome=MCPCallRecord.TASK, task_id=task_id, duration_ms=1.0
    )
    admin = staff("operator", "view_mcpcallrecord", "view_mcptask")
    page = admin.get(reverse("admin:django_mcp_mcpcallrecord_change", args=[record.pk])).content.decode()
    (link,) = re.findall(r'href="(/admin/django_mcp/mcptask/[^"]+/change/)"', page)
    response = admin.get(link)
    assert response.status_code == 200, (link, response.status_code)
    assert task_id in response.content.decode()
