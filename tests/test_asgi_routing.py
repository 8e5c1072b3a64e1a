"""How ``django_mcp.asgi.get_asgi_application`` routes: the endpoint's own paths looked up first, the rest
as Channels' ``URLRouter`` routes them, a project's ``extra_patterns`` first in both.

Driven in process through httpx's ASGI transport: the real application, a real HTTP exchange each.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from channels.routing import URLRouter
from django.urls import path

from django_mcp.asgi import ShortcutRouter, get_asgi_application
from tests.support.raw import META

pytestmark = pytest.mark.django_db(transaction=True)  # the kill switches are read on a process's first call

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/list",
}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}


class Custom:
    """A project's own ASGI app, mounted by ``extra_patterns``: it answers who it is and the scope it got."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        await send({"type": "http.response.start", "status": 299, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"custom"})


async def post(app: Any, url: str, root_path: str = "") -> httpx.Response:
    transport = httpx.ASGITransport(app=app, root_path=root_path)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.post(url, json=LIST, headers=HEADERS)


async def test_the_endpoint_with_and_without_its_slash_and_under_a_root_path_is_mcp() -> None:
    app = get_asgi_application()
    for url, root in (("/mcp/", ""), ("/mcp", ""), ("/api/mcp/", "/api")):
        r = await post(app, url, root)
        assert r.status_code == 200, (url, r.text)
        assert "tools" in r.json()["result"], url
    # The project's own URLs still reach Django (404 here), as the router sends them.
    assert (await post(app, "/no-such-page/")).status_code == 404


async def test_a_project_pattern_for_the_endpoint_s_path_still_wins() -> None:
    """``extra_patterns`` come first in the router, so a project that mounts its own app at the
    endpoint's path keeps it: the shortcut holds what the router itself would pick."""
    custom = Custom()
    app = get_asgi_application(extra_patterns=[path("mcp/", custom)])  # type: ignore[arg-type]
    r = await post(app, "/mcp/")
    assert (r.status_code, r.text) == (299, "custom")
    # Without its slash, the endpoint is still MCP's (the project claimed only "mcp/").
    assert (await post(app, "/mcp")).status_code == 200
    assert custom.scopes[0]["url_route"] == {"args": (), "kwargs": {}}


async def test_the_shortcut_passes_the_scope_the_router_would() -> None:
    """The same application gets the same ``path_remaining`` and ``url_route`` by either way."""
    custom = Custom()
    routes = [path("mcp/", custom), path("mcp/<str:name>/", custom)]  # type: ignore[arg-type]
    router = URLRouter(routes)
    shortcut = ShortcutRouter(router, {"mcp/", "mcp/x/", "other/"})
    # Only a whole path the router would route to an application without arguments is kept.
    assert shortcut.shortcuts == {"mcp/": custom}
    await post(router, "/mcp/")
    await post(shortcut, "/mcp/")
    by_router, by_shortcut = custom.scopes
    for key in ("path_remaining", "url_route", "path", "root_path"):
        assert by_shortcut[key] == by_router[key], key
    # A path the shortcut does not hold goes through the router, arguments and all.
    await post(shortcut, "/mcp/x/")
    assert custom.scopes[-1]["url_route"] == {"args": (), "kwargs": {"name": "x"}}
