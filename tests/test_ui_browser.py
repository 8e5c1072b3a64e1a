"""MCP Apps from Django templates, the way hosts use them: a real daphne, Debian's chromium, the official SDKs.

The host is a web page built on the ext-apps ``AppBridge`` with the TypeScript SDK's client
(``tests/uihost/host.mjs``, bundled by esbuild): it reads a tool's ``ui://`` page, renders it in a
sandboxed frame behind a sandbox proxy on another origin under the specification's CSP, hands it the
tool's input and result, and relays what the app asks. The test asserts what the app shows (alice's
card, rendered by the tool's template with the site's CSS inlined), that its Borrow button calls
``lend_book`` back through the bridge and the card changes, and that a page doing everything in
JavaScript calls an app-only helper. The official Python SDK sees the resource, its MIME type and
``_meta`` as the specification says. Screenshots are saved under the test's tmp dir. The example
project's own app (the library's book card) is shown the same way in ``tests/test_example_project.py``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.extension import ClientExtension
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.support.browser import CHROMIUM, host_page, need_chromium
from tests.support.seeds import SESSIONS_SETUP
from tests.support.servers import LiveServer, free_port, server_env, start_server
from tests.uihost.serve import build as build_host

pytestmark = pytest.mark.own_config  # the page and its calls do not depend on the database

UI = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"


@dataclass
class Live:
    server: LiveServer
    sessions: dict[str, str]


@pytest.fixture(scope="module")
def host_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_chromium()
    return build_host(tmp_path_factory.mktemp("ui-host"))


def serve_ui(tmp: Path, host: Path, public_url: bool = False) -> Iterator[Live]:
    """``tests.uiapp`` under daphne with the host page; ``public_url``: ``PUBLIC_URL`` is the server's own URL."""
    port = free_port()
    extra = {"MCP_PUBLIC_URL": f"http://127.0.0.1:{port}"} if public_url else {}
    env = server_env(tmp, MCP_UI_HOST_DIR=str(host), **extra)
    server = start_server(env, tmp / "daphne.log", app="tests.uiapp.asgi:application", port=port)
    try:
        sessions = json.loads(server.manage("shell", "-c", SESSIONS_SETUP).strip().splitlines()[-1])
        yield Live(server, sessions)
    finally:
        server.stop()
    log = (tmp / "daphne.log").read_text(errors="replace")
    assert " 500 " not in log and "Traceback" not in log, log


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, host_dir: Path) -> Iterator[Live]:
    """``PUBLIC_URL`` unset: each page inlines the bridge."""
    yield from serve_ui(tmp_path_factory.mktemp("ui"), host_dir)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, host_dir: Path) -> Iterator[Live]:
    """``PUBLIC_URL`` set: each page loads the bridge from the server (``django_mcp.app_bridge``)."""
    yield from serve_ui(tmp_path_factory.mktemp("ui-served"), host_dir, public_url=True)


@pytest.fixture
async def page(live: Live) -> AsyncIterator[Any]:
    async with host_page(live.server, session=live.sessions["alice"]) as tab:
        yield tab


async def test_a_host_renders_the_tools_template_and_a_click_calls_back_through_the_bridge(
    page: Any, tmp_path: Path
) -> None:
    shown = await page.evaluate("host.show('get_book', {book_id: 1})")
    assert shown["uri"] == "ui://ui-tests/get_book" and shown["tool"]["ui"]["resourceUri"] == shown["uri"]
    assert shown["ui"] == {"csp": {"resourceDomains": ["https://fonts.example"]}, "prefersBorder": True}
    app = page.frame_locator("#app-get_book").frame_locator("iframe")
    title = app.locator(".card .title")
    await title.wait_for()
    assert await title.inner_text() == "Dune"
    assert await app.locator(".status").inner_text() == "On the shelf"
    assert await app.locator(".viewer").inner_text() == "alice"  # rendered for the signed-in caller
    color = await title.evaluate("e => getComputedStyle(e).color")
    assert color == "rgb(10, 20, 30)"  # the site's CSS, inlined into the page
    await page.screenshot(path=str(tmp_path / "mcp-app-before.png"))

    await app.locator("button.borrow").click()  # lend_book through the host, then its own template
    await app.locator(".status", has_text="Lent to alice").wait_for()
    assert await app.locator("button.borrow").count() == 0
    again = await page.evaluate("host.call('get_book', {book_id: 1})")
    assert again["structuredContent"] == {"id": 1, "title": "Dune", "borrower": "alice"}  # the click really lent it

    await page.screenshot(path=str(tmp_path / "mcp-app.png"))


async def test_a_page_of_its_own_handles_the_result_in_javascript_and_calls_an_app_only_helper(page: Any) -> None:
    await page.evaluate("host.show('raw_card', {book_id: 2})")
    app = page.frame_locator("#app-raw_card").frame_locator("iframe")
    await app.locator("#raw-size", has_text="shelf of 3").wait_for()
    assert await app.locator("#raw-title").inner_text() == "Emma"


async def test_an_escaped_title_stays_text_in_the_app(page: Any) -> None:
    await page.evaluate("host.show('get_book', {book_id: 3})")
    app = page.frame_locator("#app-get_book").frame_locator("iframe")
    title = app.locator(".card .title")
    await title.wait_for()
    assert await title.inner_text() == "<script>alert(1)</script> & Co"


# -- PUBLIC_URL: the bridge served once, under the CSP the host builds from the page's resourceDomains ----------
#: What a ui:// page may weigh when it references the bridge (inlined, about 249 KB: tests/test_ui.py).
SERVED_PAGE_BUDGET = 100_000


async def bridge_loads(tab: Any) -> list[str]:
    """The served bridge's URLs that the tab's frames (the app's included) got a 200 for, from each frame's own
    resource timing (``responseStatus``; a request the CSP blocked has none): the app frame is sandboxed and
    out of process, and a response listener attached from outside misses its first requests now and then."""
    entries: list[list[Any]] = []
    script = "performance.getEntriesByType('resource').map(e => [e.name, e.responseStatus])"
    for frame in tab.frames:
        with contextlib.suppress(Exception):  # a frame detached meanwhile
            entries += await frame.evaluate(script)
    return [name for name, status in entries if "/mcp/apps/bridge." in name and status == 200]


async def test_with_public_url_the_app_loads_the_served_bridge_under_the_hosts_csp(served: Live) -> None:
    base = served.server.base
    async with host_page(served.server, session=served.sessions["alice"]) as tab:
        shown = await tab.evaluate("host.show('get_book', {book_id: 1})")
        assert shown["size"] <= SERVED_PAGE_BUDGET, shown["size"]
        assert shown["ui"]["csp"] == {"resourceDomains": ["https://fonts.example", base]}  # the host's CSP source
        app = tab.frame_locator("#app-get_book").frame_locator("iframe")
        await app.locator(".card .title", has_text="Dune").wait_for()
        assert await app.locator(".viewer").inner_text() == "alice"
        await app.locator("button.borrow").click()  # lend_book through the host, with the served bridge
        await app.locator(".status", has_text="Lent to alice").wait_for()
        await tab.evaluate("host.show('raw_card', {book_id: 2})")  # a page of its own: mcpApp from the bridge
        raw = tab.frame_locator("#app-raw_card").frame_locator("iframe")
        await raw.locator("#raw-size", has_text="shelf of 3").wait_for()
        loaded = await bridge_loads(tab)
        assert loaded and all(url.startswith(base + "/mcp/apps/bridge.") for url in loaded), loaded
    served_file = httpx.get(loaded[0], timeout=30)
    assert served_file.status_code == 200 and served_file.headers["access-control-allow-origin"] == "*"
    assert "immutable" in served_file.headers["cache-control"]


async def test_without_the_declared_origin_the_hosts_csp_blocks_the_bridge(served: Live) -> None:
    """The same page, but the host builds its CSP from resourceDomains without the site's origin: no bridge."""
    errors: list[str] = []
    base = served.server.base
    async with host_page(served.server, session=served.sessions["alice"], errors=errors) as tab:
        with pytest.raises(Exception, match="did not initialize"):
            await tab.evaluate(f"host.show('get_book', {{book_id: 2}}, {{undeclare: {base!r}, timeout: 4000}})")
        app = tab.frame_locator("#app-get_book").frame_locator("iframe")
        assert await app.locator(".card").count() == 0
        assert await app.locator("main[data-mcp-result]").count() == 1  # the page is there, its bridge is not
        loaded = await bridge_loads(tab)
    blocked = [e for e in errors if "Content Security Policy" in e and "/mcp/apps/bridge." in e]
    assert blocked, errors
    assert not loaded  # the browser never asked for it


async def test_the_served_bridge_over_http(served: Live) -> None:
    """What a browser, a CDN or a proxy gets from the bridge's route under daphne (ASGI)."""
    import gzip

    from django_mcp import app_bridge

    name = app_bridge.file_name()
    url = f"{served.server.base}/mcp/apps/{name}"
    async with httpx.AsyncClient(timeout=10) as http:
        plain = await http.get(url, headers={"Origin": "null", "Accept-Encoding": "identity"})  # the app's frame
        zipped = await http.get(url, headers={"Accept-Encoding": "gzip"})
        head = await http.head(url)
        other = await http.get(f"{served.server.base}/mcp/apps/bridge.0123456789abcdef.js")
        post = await http.post(url)
    assert plain.status_code == 200 and plain.content == app_bridge.BRIDGE_FILE.read_bytes()
    assert plain.headers["content-type"] == "text/javascript; charset=utf-8"
    assert plain.headers["access-control-allow-origin"] == "*"
    assert plain.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert zipped.headers["content-encoding"] == "gzip" and zipped.content == plain.content  # httpx decodes it
    assert int(zipped.headers["content-length"]) == len(gzip.compress(plain.content, 9, mtime=0))
    assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == f'"{name}"'
    assert other.status_code == 404 and other.headers["cache-control"] == "no-store"
    assert post.status_code == 405 and post.headers["allow"] == "GET, HEAD"


class Apps(ClientExtension):
    """The official Python SDK declaring MCP Apps, as a host built on it would."""

    identifier = UI

    def settings(self) -> dict[str, Any]:
        return {"mimeTypes": [MIME]}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_python_sdk_sees_the_resource_its_mime_type_and_meta(live: Live, mode: str) -> None:
    async with create_mcp_http_client() as http:
        kwargs: dict[str, Any] = {"mode": mode, "read_timeout_seconds": 30, "extensions": [Apps()]}
        if mode != "legacy":
            kwargs["cache"] = None
        async with Client(streamable_http_client(live.server.url, http_client=http), **kwargs) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["get_book"].meta is not None
            assert tools["get_book"].meta["ui"] == {"resourceUri": "ui://ui-tests/get_book"}
            assert tools["shelf_size"].meta == {"ui": {"visibility": ["app"]}}
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            entry = listed["ui://ui-tests/get_book"]
            assert entry.mime_type == MIME and entry.meta == {
                "ui": {"csp": {"resourceDomains": ["https://fonts.example"]}, "prefersBorder": True}
            }
            (content,) = (await client.read_resource("ui://ui-tests/get_book")).contents
            assert content.mime_type == MIME and content.meta == entry.meta
            assert content.text.startswith("<!DOCTYPE html>")  # type: ignore[union-attr]


# -- the browsable endpoint, under daphne (the consumer hands a browser's requests to the project's middleware) --
STAFF = """
from django.contrib.auth.models import User
User.objects.create_user("ops", password="ops-password-1", is_staff=True)
User.objects.create_user("member", password="member-password-1")
"""


async def test_staff_sign_in_see_their_tools_and_call_one_in_chromium(live: Live, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright

    live.server.manage("shell", "-c", STAFF)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            tab = await (await browser.new_context(viewport={"width": 1100, "height": 900})).new_page()
            await tab.goto(live.server.url)  # anonymous: sent to sign in first
            assert "/admin/login/" in tab.url
            await tab.fill("#id_username", "ops")
            await tab.fill("#id_password", "ops-password-1")
            await tab.click("input[type=submit]")
            await tab.wait_for_url(live.server.url)
            assert await tab.locator("#tool-get_book").count() == 1
            assert await tab.locator("#tool-shelf_stats").count() == 0  # ops lacks auth.view_user
            await tab.locator("#tool-get_book textarea").fill('{"book_id": 2}')
            await tab.locator("#tool-get_book button[type=submit]").click()
            response = tab.locator("#exchange-response")
            await response.wait_for()
            shown = json.loads(await response.inner_text())
            assert shown["result"]["structuredContent"] == {"id": 2, "title": "Emma", "borrower": ""}
            await tab.screenshot(path=str(tmp_path / "browsable.png"), full_page=False)
        finally:
            await browser.close()
    with httpx.Client(timeout=10) as http:  # a signed-in member is no staff: refused; an MCP client is untouched
        login = http.get(live.server.base + "/admin/login/")
        token = login.cookies["csrftoken"]
        http.post(live.server.base + "/admin/login/", data={"username": "member", "password": "member-password-1",
                  "csrfmiddlewaretoken": token}, headers={"Referer": live.server.base + "/admin/login/"})  # fmt: skip
        assert http.get(live.server.url, headers={"Accept": "text/html"}).status_code in (302, 403)
        assert http.get(live.server.url, headers={"Accept": "text/event-stream"}).status_code == 400  # no session
