"""``subscriptions/listen`` refuses exactly what ``resources/subscribe`` refuses.

A real daphne with ``AUTH = "oauth"`` serves ``tests.listenapp``: a static resource, a
template and a ModelResource, each behind the ``secret:read`` scope and the Django
permission ``auth.view_group``. Two users (alice holds the permission, bob does not)
with tokens from two OAuth clients, with and without the scope, ask for each URI both
ways; both paths must agree, resource kind by resource kind.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.oauth.kit import PASSWORD, OAuthServer, start_oauth_server, stop_oauth_server

SETUP = f"""
from django.contrib.auth.models import Group, Permission, User
from oauth2_provider.models import Application
alice = User.objects.create_user("alice", password={PASSWORD!r})
alice.user_permissions.add(Permission.objects.get(codename="view_group"))
User.objects.create_user("bob", password={PASSWORD!r})
for name in ("first", "second"):
    Application.objects.create(name=name, client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/callback")
print(Group.objects.create(name="readers").pk)
"""

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


#: (user, scopes, application, whether every kind is allowed): two users, two OAuth clients.
CASES = [
    ("alice", "mcp secret:read", "first", True),  # scope and permission: every kind accepted
    ("alice", "mcp", "second", False),  # no scope: refused though she holds the permission
    ("bob", "mcp secret:read", "second", False),  # the scope but not the permission
    ("bob", "mcp secret:read", "first", False),
]

MINT = """
import io
from django.core.management import call_command
for user, scope, app in {cases!r}:
    out = io.StringIO()
    call_command("mcp_token", user=user, scope=[scope], application=app, resource=[{url!r}], stdout=out)
    print(out.getvalue().strip())
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OAuthServer, list[str], list[str]]]:
    tmp = tmp_path_factory.mktemp("listen")
    srv = start_oauth_server(tmp, settings="tests.listenapp.settings", setup=None)
    group = srv.shell(SETUP)
    cases = [(u, s, a) for u, s, a, _ in CASES]
    out = srv.live.manage("shell", "-c", MINT.format(cases=cases, url=srv.url)).strip().splitlines()
    tokens = out[-len(CASES) :]
    assert len(tokens) == len(CASES)
    yield srv, ["guarded://static", "guarded://drawer/top", f"guarded://groups/{group}"], tokens
    stop_oauth_server(srv)


def listen_ack(srv: OAuthServer, token: str, uris: list[str]) -> list[str]:
    """The URIs the acknowledgement of a listen stream honours (read the first event, then hang up)."""
    body = {
        "jsonrpc": "2.0",
        "id": "sub",
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": {"resourceSubscriptions": uris}},
    }
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen",
    }
    with httpx.Client(timeout=10) as http, http.stream("POST", srv.url, json=body, headers=headers) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("data:"):
                ack = json.loads(line[5:])
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                return list(ack["params"]["notifications"].get("resourceSubscriptions", []))
    raise AssertionError("no acknowledgement")


def subscribe_ok(srv: OAuthServer, token: str, uri: str) -> bool:
    """Whether ``resources/subscribe`` accepts ``uri`` on a fresh handshake session."""
    h = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    with httpx.Client(timeout=10, headers=h) as http:
        r = http.post(srv.url, json=init)
        assert r.status_code == 200, r.text
        h2 = {"mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        http.post(srv.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h2)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}}
        r = http.post(srv.url, json=body, headers=h2)
        assert r.status_code in (200, 403), r.text
        return r.status_code == 200 and "result" in r.json()


@pytest.mark.parametrize("case", range(len(CASES)))
def test_listen_matches_subscribe(server: tuple[OAuthServer, list[str], list[str]], case: int) -> None:
    srv, uris, tokens = server
    allowed = CASES[case][3]
    honoured = listen_ack(srv, tokens[case], uris)
    for uri in uris:
        assert subscribe_ok(srv, tokens[case], uri) is allowed, uri
        assert (uri in honoured) is allowed, (uri, honoured)


def test_unknown_and_absent_are_dropped(server: tuple[OAuthServer, list[str], list[str]]) -> None:
    srv, uris, tokens = server
    asked = [*uris, "guarded://nowhere", "guarded://groups/999999", "guarded://drawer/..%2Fx"]
    assert listen_ack(srv, tokens[0], asked) == uris
