"""Chromium (Debian's, driven by Playwright) for the browser tests: the browser, a page, the OAuth client's loopback
callback, and what the admin-page tests share (signing in, minting a token, waiting for the audit writer).

Without chromium a browser test skips, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import django.contrib.admin as admin_app
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.kit import PASSWORD, OAuthServer
from tests.support.servers import IN_CI, LiveServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def need_chromium() -> None:
    if shutil.which(CHROMIUM):
        return
    message = f"chromium is not installed ({CHROMIUM}); `make browser` installs it"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: a skip would hide untested code)")
    pytest.skip(message)


class _Callback(BaseHTTPRequestHandler):
    """The client's loopback redirect target: what a desktop MCP client shows after consent."""

    def do_GET(self) -> None:
        body = b"<p>You may close this window.</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def callback() -> Iterator[str]:
    """A real loopback callback server (Playwright does not route a request reached by a redirect)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Callback)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/callback"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
async def page() -> AsyncIterator[Any]:
    need_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            context = await browser.new_context()
            yield await context.new_page()
        finally:
            await browser.close()


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    need_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            await chromium.close()


#: A task working in alice's name (this project runs no task worker: the row is what one would leave).
WORKING_TASK = """
from django.contrib.auth.models import User
from django.utils import timezone
from django_mcp.models import MCPTask
MCPTask.objects.create(id="report-task-0001", tool="task_sleep", protocol_version="2025-11-25", status="working",
    user=User.objects.get(username="alice"), created=timezone.now(), updated=timezone.now())
"""


def mint(server: OAuthServer, app: str, user: str) -> tuple[str, str]:
    client_id, token = server.shell(MINT.format(app=app, user=user, resource=server.url)).split()
    return client_id, token


def sdk(server: OAuthServer, token: str) -> Any:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return http, Client(streamable_http_client(server.url, http_client=http), mode="legacy", read_timeout_seconds=30)


#: The admin's own static files: a deployment serves them (collectstatic); the test server does not.
ADMIN_STATIC = Path(admin_app.__file__).parent / "static"


async def static(route: Any) -> None:
    """Serve ``/static/admin/...`` from django.contrib.admin, as a web server in front of daphne would."""
    relative = route.request.url.split("/static/", 1)[1].split("?")[0]
    file = (ADMIN_STATIC / relative).resolve()
    if ADMIN_STATIC in file.parents and file.is_file():
        await route.fulfill(path=str(file))
    else:
        await route.fulfill(status=404)


#: What a person sees of an element: its tag, background, padding, layout and how many links it holds.
STYLE = """el => { const s = getComputedStyle(el); return {tag: el.tagName, background: s.backgroundColor,
    padding: s.padding, display: s.display, links: el.querySelectorAll("a").length}; }"""


async def sign_in(chromium: Any, server: OAuthServer, username: str, path: str, login: str = "/admin/login/") -> Any:
    context = await chromium.new_context(viewport={"width": 1280, "height": 900})
    await context.route("**/static/**", static)
    page = await context.new_page()
    await page.goto(f"{server.base}{login}?next={path}")
    await page.fill("#id_username", username)
    await page.fill("#id_password", PASSWORD)
    await page.click("[type=submit]")
    await page.wait_for_load_state()
    return page


def wait_for_calls(server: OAuthServer, count: int, timeout: float = 30) -> None:
    """Until the server's background writer has written ``count`` records (no flush by hand here)."""
    deadline = time.monotonic() + timeout
    code = "from django_mcp.models import MCPCallRecord as R; print(R.objects.count())"
    while int(server.shell(code)) < count:
        assert time.monotonic() < deadline, "the server never wrote its audit records"
        time.sleep(0.2)


MINT = """
from datetime import timedelta
import secrets
from django.contrib.auth.models import User
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application
app, _ = Application.objects.get_or_create(name={app!r}, defaults=dict(
    client_type="public", authorization_grant_type="authorization-code", redirect_uris="http://127.0.0.1:9/cb"))
value = secrets.token_urlsafe(30)
AccessToken.objects.create(user=User.objects.get(username={user!r}), application=app, token=value,
    expires=timezone.now() + timedelta(hours=1), scope="mcp", resource=[{resource!r}])
print(app.client_id, value)
"""


@contextlib.asynccontextmanager
async def host_page(
    server: LiveServer, *, session: str | None = None, token: str | None = None, errors: list[str] | None = None
) -> AsyncIterator[Any]:
    """The test host page in Debian's chromium, as a signed-in ``session`` or with a bearer ``token``.

    The console's errors go to ``errors`` when given; otherwise a Content-Security-Policy error fails the test.
    """
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            context = await browser.new_context(viewport={"width": 720, "height": 640})
            if session is not None:
                cookie = {"name": "sessionid", "value": session, "domain": "127.0.0.1", "path": "/"}
                await context.add_cookies([cookie])  # type: ignore[list-item]
            tab = await context.new_page()
            console: list[str] = [] if errors is None else errors
            tab.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
            query = {"sandbox": f"http://localhost:{server.port}/host/sandbox.html"}  # another origin than the host's
            if token is not None:
                query["token"] = token
            await tab.goto(f"{server.base}/host/index.html?{urlencode(query)}")
            await tab.wait_for_selector("body[data-ready=true]")
            yield tab
            assert errors is not None or not [e for e in console if "Content Security Policy" in e], console
        finally:
            await browser.close()
