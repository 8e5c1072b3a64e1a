"""The usage page as a person sees it: Debian's chromium (Playwright) against a real daphne serving the
OAuth test project, after real MCP calls by two users through two OAuth clients with the official SDK.

The figures on the page are checked against what was called; a client's drill-down and its calls are
followed by clicking; a signed-in non-staff user and a staff member without the permission are turned
away. A screenshot is saved under the test's tmp dir, and copied to ``docs/img/usage.png`` only when
``MCP_DOCS_SCREENSHOTS=1`` (so CI never dirties the checkout).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.oauth.kit import PASSWORD, OAuthServer, start_oauth_server, stop_oauth_server
from tests.support.browser import STYLE, WORKING_TASK, mint, need_chromium, sdk, sign_in, wait_for_calls
from tests.support.browser import browser as browser  # the Chromium fixture
from tests.support.servers import ROOT

STAFF = f"""
from django.contrib.auth.models import Permission, User
auditor = User.objects.create_user("auditor", password={PASSWORD!r}, is_staff=True)
auditor.user_permissions.add(Permission.objects.get(codename="view_mcpcallrecord"))
User.objects.create_user("intern", password={PASSWORD!r}, is_staff=True)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    need_chromium()
    srv = start_oauth_server(tmp_path_factory.mktemp("usage"))
    srv.shell(STAFF)
    yield srv
    stop_oauth_server(srv)


async def cell(page: Any, table: str, row: str, column: str) -> str:
    return str(await page.inner_text(f"#{table} tr[{row}] td.{column}")).strip()


async def test_staff_see_usage_as_it_happened(server: OAuthServer, browser: Any, tmp_path: Path) -> None:
    claude, alice_token = mint(server, "Claude Desktop", "alice")
    cursor, bob_token = mint(server, "Cursor", "bob")
    # bob, through Cursor: two echoes, an add, and a tool his token's scopes do not cover (403).
    http, client = sdk(server, bob_token)
    async with http, client:
        await client.call_tool("echo", {"text": "one"})
        await client.call_tool("echo", {"text": "two"})
        await client.call_tool("add", {"a": 2, "b": 2})
        with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the 403 in its task group
            await client.call_tool("secret", {})
    # alice, through Claude Desktop: three adds, an echo and a tool error; her session stays open.
    http, client = sdk(server, alice_token)
    async with http, client:
        for n in range(3):
            await client.call_tool("add", {"a": n, "b": 1})
        await client.call_tool("echo", {"text": "hello"})
        assert (await client.call_tool("fail", {"kind": "tool"})).is_error
        wait_for_calls(server, 9)
        server.shell(WORKING_TASK)

        page = await sign_in(browser, server, "auditor", "/admin/django_mcp/mcpcallrecord/usage/")
        assert await page.inner_text("h1") == "MCP usage"
        metric = {m: (await page.inner_text(f"[data-metric={m}]")).strip() for m in ("calls", "failures", "error-rate")}
        assert metric == {"calls": "9", "failures": "2", "error-rate": "22.2%"}
        assert (await page.inner_text("[data-metric=sessions]")).strip() == "1"  # alice's, still open
        assert (await page.inner_text("[data-metric=tasks-working]")).strip() == "1"
        assert await cell(page, "mcp-targets", 'data-target="add"', "calls") == "4"
        assert await cell(page, "mcp-targets", 'data-target="fail"', "errors") == "100.0% (1)"
        assert await cell(page, "mcp-targets", 'data-target="secret"', "errors") == "100.0% (1)"
        assert await cell(page, "mcp-clients", f'data-client="{claude}"', "calls") == "5"
        assert await cell(page, "mcp-clients", f'data-client="{cursor}"', "errors") == "25.0% (1)"
        users = await page.inner_text("#mcp-users")
        assert "alice" in users and "bob" in users
        assert "Claude Desktop" in await page.inner_text("#mcp-clients")
        # The breadcrumbs are the admin's own, styled as on the calls list (Django 6.1 styles <ol> only).
        crumbs = await page.eval_on_selector(".breadcrumbs", STYLE)
        assert crumbs["background"] not in ("rgba(0, 0, 0, 0)", "transparent") and crumbs["links"] == 3, crumbs
        listing_page = await page.context.new_page()
        await listing_page.goto(server.base + "/admin/django_mcp/mcpcallrecord/")
        listed = await listing_page.eval_on_selector(".breadcrumbs", STYLE)
        await listing_page.close()
        assert {k: crumbs[k] for k in ("tag", "background", "padding", "display")} == {
            k: listed[k] for k in ("tag", "background", "padding", "display")
        }
        bars = await page.locator("#mcp-chart rect").count()
        assert bars >= 4  # this hour's column, stacked by tool
        shot = tmp_path / "usage.png"
        await page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        if os.environ.get("MCP_DOCS_SCREENSHOTS") == "1":
            shutil.copyfile(shot, ROOT / "docs" / "img" / "usage.png")

        # Drill down: Cursor's usage, then its calls.
        await page.click(f'#mcp-clients tr[data-client="{cursor}"] td a')
        await page.wait_for_selector("#mcp-narrowed")
        assert "Cursor" in await page.inner_text("#mcp-narrowed")
        assert (await page.inner_text("[data-metric=calls]")).strip() == "4"
        assert (await page.inner_text("[data-metric=sessions]")).strip() == "0"
        await page.click("#mcp-narrowed >> text=See these calls")
        await page.wait_for_selector("#result_list")
        assert await page.locator("#result_list tbody tr").count() == 4
        listing = await page.inner_text("#result_list")
        assert "alice" not in listing and listing.count("bob") == 4


async def test_others_are_turned_away(server: OAuthServer, browser: Any) -> None:
    """bob (signed in, not staff) is sent to the login page; intern (staff, no permission) gets 403."""
    usage = "/admin/django_mcp/mcpcallrecord/usage/"
    page = await sign_in(browser, server, "bob", usage, login="/accounts/login/")  # the site's login: bob may
    assert "/admin/login/" in page.url
    assert "not authorized to access this page" in await page.inner_text("body")
    page = await sign_in(browser, server, "intern", usage)
    response = await page.goto(server.base + usage)
    assert response.status == 403
    assert "data-metric" not in await page.content()
