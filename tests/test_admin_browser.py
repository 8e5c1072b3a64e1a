"""The package's admin pages as staff see them: Debian's chromium (Playwright) against a real daphne serving
the OAuth test project, with data left by real MCP calls through the official SDK.

One server, one browser; each page is opened in turn and checked for what a person would notice: it answers
200, logs no console error, its breadcrumbs are the admin's styled bar (not an unstyled list), its table has
rows, no cell shows a raw ``None`` or a Python repr, and durations read as durations. It runs in the 5.2 and
the 6.0/6.1 passes, where the admin's templates and CSS differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.oauth.kit import PASSWORD, OAuthServer, start_oauth_server, stop_oauth_server
from tests.support.browser import STYLE, WORKING_TASK, mint, need_chromium, sdk, sign_in, wait_for_calls
from tests.support.browser import browser as browser  # the Chromium fixture

DATA = f"""
from datetime import timedelta
from django.contrib.auth.models import User
from django.utils import timezone
from django_mcp.models import MCPClient, MCPSwitch, MCPTask, MCPTaskWorker
from oauth2_provider.models import Application
User.objects.create_superuser("root", password={PASSWORD!r})
now = timezone.now()
MCPTaskWorker.objects.create(id="worker-1", host="app-1", pid=4242, started=now - timedelta(minutes=5), beat=now)
MCPTask.objects.create(id="done-task-0001", tool="task_sleep", protocol_version="2025-11-25", status="completed",
    user=User.objects.get(username="alice"), created=now - timedelta(seconds=75), updated=now, finished=now)
MCPSwitch.objects.create(kind="tool", name="echo", enabled=False, reason="maintenance")
for app in Application.objects.all():
    MCPClient.objects.get_or_create(client_id=app.client_id)
"""

#: Each page: its path (``{record}`` is a call record's id) and whether it shows a result table.
PAGES = [
    ("/admin/django_mcp/mcpcallrecord/", True),
    ("/admin/django_mcp/mcpcallrecord/{record}/change/", False),
    ("/admin/django_mcp/mcpcallrecord/usage/", False),
    ("/admin/django_mcp/mcpsession/", True),
    ("/admin/django_mcp/mcptask/", True),
    ("/admin/django_mcp/mcptaskworker/", True),
    ("/admin/django_mcp/mcpclient/", True),
    ("/admin/django_mcp/mcpswitch/", True),
]
#: What a cell must never show: Python's None or an object's repr where a value is expected.
RAW = re.compile(r"^None$|<[\w.]+ object at 0x|^[A-Z]\w+ object \(")
TRANSPARENT = ("rgba(0, 0, 0, 0)", "transparent")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    need_chromium()
    srv = start_oauth_server(tmp_path_factory.mktemp("admin"))
    yield srv
    stop_oauth_server(srv)


async def test_each_admin_page_renders_for_staff(server: OAuthServer, browser: Any) -> None:
    _, token = mint(server, "Claude Desktop", "alice")
    http, client = sdk(server, token)
    async with http, client:
        await client.call_tool("echo", {"text": "one"})
        await client.call_tool("add", {"a": 2, "b": 2})
        assert (await client.call_tool("fail", {"kind": "tool"})).is_error
        wait_for_calls(server, 3)
        server.shell(WORKING_TASK)
        server.shell(DATA)
        record = server.shell("from django_mcp.models import MCPCallRecord as R; print(R.objects.first().pk)")

        page = await sign_in(browser, server, "root", "/admin/")
        errors: list[str] = []
        page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
        for path, table in PAGES:
            url = server.base + path.format(record=record.strip())
            response = await page.goto(url)
            assert response is not None and response.status == 200, (path, response and response.status)
            crumbs = await page.eval_on_selector(".breadcrumbs", STYLE)
            assert crumbs["background"] not in TRANSPARENT and crumbs["links"] >= 2, (path, crumbs)
            assert crumbs["display"] != "list-item" and not crumbs["padding"].startswith("0px"), (path, crumbs)
            if table:
                assert await page.locator("#result_list tbody tr").count() >= 1, path
            cells = await page.locator("#content td, #content .readonly, #content [data-metric]").all_inner_texts()
            raw = [c for c in cells if RAW.search(c.strip())]
            assert not raw, (path, raw)
            if path == "/admin/django_mcp/mcpcallrecord/":
                durations = await page.locator("#result_list td.field-duration").all_inner_texts()
                assert durations and all(re.fullmatch(r"[\d,]+\.\d{1,2} ms", d.strip()) for d in durations), durations
            if path == "/admin/django_mcp/mcptask/":
                durations = await page.locator("#result_list td.field-duration").all_inner_texts()
                assert "1 min 15 s" in durations, durations
        assert not errors, errors
