"""WSGI mode through real processes: ``django_mcp.transports.wsgi.mcp_view`` under gunicorn sync workers
(two of them, sharing sessions through the database) and under Django's own ASGI handler
(uvicorn, no Channels), driven by the official SDK client and by raw HTTP.

Under gunicorn each test runs twice: with the package's WSGI wiring (``django_mcp.wsgi:application``,
the endpoint's requests served without Django's request cycle) and with Django's own handler
(``tests.settings.wsgi:application``, the view inside the full cycle)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.oauth.kit import PASSWORD, SETUP, OAuthServer, mint_two_users_two_clients
from tests.support.raw import META
from tests.support.sdk import Recorder
from tests.support.servers import LiveServer, server_env
from tests.support.wsgi_server import start_wsgi_server

ACCEPT = "application/json, text/event-stream"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def _stopped(server: LiveServer) -> None:
    server.stop()
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log, log


#: The two ways gunicorn serves the project: the package's wiring (every pass), and Django's own handler, whose
#: only difference is Django's request cycle around the same view: the unit pass runs it, on one database and
#: one Django version (the others' differences are the wiring's too).
ENTRIES = [
    "django_mcp.wsgi:application",
    pytest.param(
        "tests.settings.wsgi:application",
        marks=[pytest.mark.own_config, pytest.mark.version_independent],
        id="tests.settings.wsgi:application",
    ),
]


@pytest.fixture(scope="module", params=ENTRIES)
def gunicorn(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("wsgi")
    # Kept connections, as the deployment guide has WSGI mode: the session reads run on the workers' own threads.
    env = server_env(tmp, settings="tests.settings.settings_wsgi", MCP_CONN_MAX_AGE="60")
    server = start_wsgi_server(env, tmp / "gunicorn.log", request.param)
    server.entry = request.param  # type: ignore[attr-defined]
    yield server
    _stopped(server)


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


def post(server: LiveServer, body: Any, **headers: str) -> httpx.Response:
    sent = {"content-type": "application/json", "accept": ACCEPT, **headers}
    return httpx.post(server.url, content=json.dumps(body), headers=sent, timeout=30)


def initialize(server: LiveServer, **headers: str) -> str:
    r = post(server, INIT, **headers)
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    assert (
        post(
            server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **{"mcp-session-id": sid}, **headers
        ).status_code
        == 202
    )
    return sid


# -- the official SDK client --------------------------------------------------------------------
async def test_sdk_handshake(gunicorn: LiveServer, rec: Recorder) -> None:
    async with rec.client(gunicorn.url, "legacy") as client:
        assert client.protocol_version == "2025-11-25"
        caps = client.server_capabilities
        assert caps is not None and caps.tools is not None and not caps.tools.list_changed
        assert caps.resources is not None and not caps.resources.subscribe
        names = [t.name for t in (await client.list_tools()).tools]
        assert names[:3] == ["add", "echo", "square"]
        for a in range(6):  # a sync tool (ORM savepoint) on both workers, one session in the database
            result = await client.call_tool("add", {"a": a, "b": 3})
            assert result.structured_content == {"total": a + 3, "terms": [a, 3]}
        await client.set_logging_level("info")
        result = await client.call_tool("count", {"steps": 3}, progress_callback=rec.on_progress)
        assert result.content[0].text == "counted to 3"  # type: ignore[union-attr]
        assert [p[0] for p in rec.progress] == [1, 2, 3]  # buffered, sent before the result
        assert rec.logs == [("info", "counted 1"), ("info", "counted 2"), ("info", "counted 3")]
        r = await client.read_resource("test://static/hello")
        assert r.contents[0].text == "Hello, world!"  # type: ignore[union-attr]
        # Elicitation needs the POST's stream held while the client answers: refused, not hung.
        with pytest.raises(MCPError, match="cannot carry server-to-client requests") as refused:
            await client.call_tool("ask_name", {})
        assert refused.value.code == -32600


async def test_sdk_stateless(gunicorn: LiveServer, rec: Recorder) -> None:
    async with rec.client(gunicorn.url, "2026-07-28", log_level="info") as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("add", {"a": 20, "b": 22})
        assert result.structured_content == {"total": 42, "terms": [20, 22]}
        result = await client.call_tool("count", {"steps": 2}, progress_callback=rec.on_progress)
        assert [p[0] for p in rec.progress] == [1, 2]
        assert rec.logs == [("info", "counted 1"), ("info", "counted 2")]
        result = await client.call_tool("ask_name", {})  # MRTR: input_required round trips, no stream
        assert result.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
        result = await client.call_tool("ask_model", {"question": "q"})
        assert result.content[0].text == "model said: 42"  # type: ignore[union-attr]


# -- sessions in the database, across the two workers ---------------------------------------------
def test_session_shared_and_deleted(gunicorn: LiveServer) -> None:
    sid = initialize(gunicorn)
    for i in range(8):
        r = post(
            gunicorn,
            {
                "jsonrpc": "2.0",
                "id": i + 2,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": i, "b": 1}},
            },
            **{"mcp-session-id": sid},
        )
        assert r.status_code == 200 and r.headers["mcp-session-id"] == sid, r.text
        assert r.json()["result"]["structuredContent"]["total"] == i + 1
    deleted = httpx.delete(gunicorn.url, headers={"mcp-session-id": sid})
    assert deleted.status_code == 200
    for i in range(4):  # ended for every worker at once: no cache to outlive it
        r = post(gunicorn, {"jsonrpc": "2.0", "id": 20 + i, "method": "tools/list"}, **{"mcp-session-id": sid})
        assert r.status_code == 404, r.text
    assert httpx.delete(gunicorn.url, headers={"mcp-session-id": sid}).status_code == 404


def test_batch(gunicorn: LiveServer) -> None:
    sid = initialize(gunicorn, **{"mcp-protocol-version": "2025-11-25"})
    r = post(gunicorn, INIT | {"params": {**INIT["params"], "protocolVersion": "2025-03-26"}})
    old = r.headers["mcp-session-id"]
    batch = [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": str(n)}}}
        for n in (1, 2)
    ]
    r = post(gunicorn, batch, **{"mcp-session-id": old})
    assert r.status_code == 200 and sorted(m["id"] for m in r.json()) == [1, 2]
    r = post(gunicorn, batch, **{"mcp-session-id": sid})
    assert r.status_code == 400  # batches belong to 2025-03-26 only


# -- what every front end checks, and what WSGI mode does not offer --------------------------------
@pytest.mark.version_independent
def test_bad_input(gunicorn: LiveServer) -> None:
    r = post(gunicorn, INIT, **{"content-type": "text/plain"})
    assert r.status_code == 415 and r.json()["error"]["code"] == -32600
    r = post(gunicorn, INIT, accept="application/json")
    assert r.status_code == 406
    big = httpx.post(
        gunicorn.url,
        content=b"x" * (4 * 1024 * 1024 + 1),
        headers={"content-type": "application/json", "accept": ACCEPT},
    )
    assert big.status_code == 413
    r = httpx.get(gunicorn.url, headers={"accept": "text/event-stream"})
    assert r.status_code == 405 and "POST" in r.headers["allow"] and "GET" not in r.headers["allow"]
    r = post(gunicorn, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, **{"mcp-session-id": "nope"})
    assert r.status_code == 404
    r = post(gunicorn, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 400
    r = post(gunicorn, INIT, host="evil.example")
    assert r.status_code in (400, 403)  # Django's CommonMiddleware may refuse a foreign Host first
    r = post(gunicorn, INIT, origin="http://evil.example")
    assert r.status_code == 403
    r = httpx.post(gunicorn.url, content=b"{", headers={"content-type": "application/json", "accept": ACCEPT})
    assert r.status_code == 400 and r.json()["error"]["code"] == -32700


def test_form_posts_of_api_clients_are_415(gunicorn: LiveServer) -> None:
    """As under Channels: a bearer's or MCP client's form-encoded POST is 415, a browser's form the page's."""
    form = {"content-type": "application/x-www-form-urlencoded"}
    for headers in ({**form, "authorization": "Bearer abc", "accept": ACCEPT}, {**form, "accept": "application/json"}):
        r = httpx.post(gunicorn.url, content=b"access_token=abc", headers=headers, timeout=30)
        assert r.status_code == 415 and r.json()["error"]["code"] == -32600, (headers, r.text[:200])
    r = httpx.post(gunicorn.url, content=b"action=tools/list", headers={**form, "accept": "text/html"}, timeout=30)
    assert r.status_code == 403 and not r.headers["content-type"].startswith("application/json")  # the page refuses


def test_no_held_streams(gunicorn: LiveServer) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    listen = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": True}},
    }
    r = post(gunicorn, listen, **{"mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen"})
    assert r.status_code == 404 and r.json()["error"]["code"] == -32601, r.text
    discover = {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": meta}}
    r = post(gunicorn, discover, **{"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"})
    assert r.status_code == 200, r.text
    caps = r.json()["result"]["capabilities"]
    assert caps["tools"] == {} and caps["resources"] == {} and caps["prompts"] == {}
    sid = initialize(gunicorn)
    sub = {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "test://static/hello"}}
    r = post(gunicorn, sub, **{"mcp-session-id": sid})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32601


# -- the same view under Django's own ASGI handler ------------------------------------------------
async def test_django_asgi_handler(tmp_path: Path, rec: Recorder) -> None:
    env = server_env(tmp_path, settings="tests.settings.settings_django_asgi")
    server = start_wsgi_server(env, tmp_path / "uvicorn.log", "tests.settings.asgi_django:application", asgi=True)
    try:
        async with rec.client(server.url, "legacy") as client:
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result.structured_content == {"total": 3, "terms": [1, 2]}
        async with rec.client(server.url, "2026-07-28") as client:
            result = await client.call_tool("ask_name", {})
            assert result.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
        assert httpx.get(server.url).status_code == 405
    finally:
        _stopped(server)


# -- OAuth --------------------------------------------------------------------------------------
@pytest.mark.version_independent
@pytest.mark.parametrize("entry", ["django_mcp.wsgi:application", "tests.oauth.wsgi:application"])
def test_oauth(tmp_path: Path, entry: str) -> None:
    env = server_env(tmp_path, settings="tests.oauth.settings_wsgi")
    server = start_wsgi_server(env, tmp_path / "gunicorn.log", entry)
    try:
        server.manage("shell", "-c", SETUP.format(password=PASSWORD))
        r = post(server, INIT)
        assert r.status_code == 401
        assert r.headers["www-authenticate"].startswith("Bearer ")
        assert "resource_metadata=" in r.headers["www-authenticate"]
        r = post(server, INIT, authorization="Bearer not-a-token")
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
        tokens = {
            name: server.manage("mcp_token", "--user", name, "--scope", "mcp", "--resource", server.url)
            .strip()
            .splitlines()[-1]
            for name in ("alice", "bob")
        }
        alice = {"authorization": f"Bearer {tokens['alice']}"}
        bob = {"authorization": f"Bearer {tokens['bob']}"}
        sid = initialize(server, **alice)
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
        assert post(server, call, **alice, **{"mcp-session-id": sid}).status_code == 200
        assert post(server, call, **bob, **{"mcp-session-id": sid}).status_code == 404  # not bob's session
        assert httpx.delete(server.url, headers={**bob, "mcp-session-id": sid}).status_code == 404
        assert httpx.delete(server.url, headers={**alice, "mcp-session-id": sid}).status_code == 200
    finally:
        _stopped(server)


_REVOKE_ALICE_FIRST = """
from django.contrib.auth.models import User
from oauth2_provider.models import Application
from django_mcp.auth.clients import revoke_user_tokens
print(revoke_user_tokens([User.objects.get(username="alice").pk], [Application.objects.get(name="first").client_id]))
"""
_DISABLE_SECOND = """
from oauth2_provider.models import Application
from django_mcp.auth.clients import disable_clients
print(disable_clients([Application.objects.get(name="second").client_id]))
"""


@pytest.mark.version_independent
def test_the_wsgi_wiring_keeps_users_and_clients_apart(tmp_path: Path) -> None:
    """The endpoint served without Django's request cycle keeps every refusal of the view: two users on
    two OAuth clients, each session its owner's (user and client), a revoked token and a disabled client
    refused on their next request while the others' go on."""
    env = server_env(tmp_path, settings="tests.oauth.settings_wsgi")
    server = start_wsgi_server(env, tmp_path / "gunicorn.log", "django_mcp.wsgi:application")
    try:
        server.manage("shell", "-c", SETUP.format(password=PASSWORD))
        tokens = mint_two_users_two_clients(OAuthServer(server))  # alice via "first" and "second", bob via "first"
        alice1, alice2, bob1 = ({"authorization": f"Bearer {token}"} for token in tokens)
        sessions = {name: initialize(server, **who) for name, who in (("a1", alice1), ("a2", alice2), ("b1", bob1))}
        listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}

        def status(who: dict[str, str], session: str) -> int:
            return post(server, listing, **who, **{"mcp-session-id": session}).status_code

        assert status(alice1, sessions["a1"]) == 200
        assert status(bob1, sessions["a1"]) == 404  # another user, the same client
        assert status(alice2, sessions["a1"]) == 404  # the same user through another client
        assert status(alice1, sessions["b1"]) == 404
        # Revoking alice's tokens of "first": her next request through it is refused; her "second" and bob's go on.
        assert server.manage("shell", "-c", _REVOKE_ALICE_FIRST).strip().splitlines()[-1] == "1"
        refused = post(server, listing, **alice1, **{"mcp-session-id": sessions["a1"]})
        assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
        assert status(alice2, sessions["a2"]) == 200 and status(bob1, sessions["b1"]) == 200
        # Disabling "second": alice's token through it is refused at once; bob's through "first" still works.
        assert server.manage("shell", "-c", _DISABLE_SECOND).strip().splitlines()[-1] == "1"
        assert post(server, listing, **alice2, **{"mcp-session-id": sessions["a2"]}).status_code == 401
        assert status(bob1, sessions["b1"]) == 200
        # Stateless calls go through the same checks.
        modern = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
        body = {"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": META}}
        assert post(server, body, **bob1, **modern).status_code == 200
        assert post(server, body, **alice2, **modern).status_code == 401
    finally:
        _stopped(server)


WSGI_ONLY_CLIENT = """
import json, django
django.setup()
from django.core.management import call_command
from django.test import Client
call_command("migrate", verbosity=0)
client = Client(
    HTTP_ACCEPT="application/json, text/event-stream", SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1"
)
init = client.post("/mcp/", json.dumps(INIT), content_type="application/json")
assert init.status_code == 200, (init.status_code, init.content)
sid = init["Mcp-Session-Id"]
listed = client.post(
    "/mcp/", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), content_type="application/json",
    HTTP_MCP_SESSION_ID=sid, HTTP_MCP_PROTOCOL_VERSION="2025-11-25",
)
assert listed.status_code == 200, (listed.status_code, listed.content)
card = client.get("/mcp/server-card")  # django_mcp.urls, included without django-oauth-toolkit installed
assert card.status_code == 200 and card.json()["remotes"][0]["url"] == "http://127.0.0.1/mcp/", card.content
assert client.get("/.well-known/oauth-protected-resource").status_code == 404  # no OAuth, no OAuth metadata
print(json.dumps(sorted(t["name"] for t in json.loads(listed.content)["result"]["tools"])))
"""


@pytest.mark.version_independent
def test_wsgi_only_project_needs_no_channels(tmp_path: Path) -> None:
    """No daphne, no channels, no ASGI_APPLICATION, no django-oauth-toolkit: `check` is clean of E003/W002/W001/W003
    and Django's own WSGI handler (the test Client) serves initialize and tools/list through the view, and the
    server card through django_mcp.urls (which failed to import without OAuth)."""
    import subprocess
    import sys

    from tests.support.servers import ROOT

    env = server_env(tmp_path, settings="tests.settings.settings_wsgi_only")
    check = subprocess.run(
        [sys.executable, "-m", "django", "check"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stderr
    for refused in ("E003", "W002", "W001", "W003"):
        assert f"django_mcp.{refused}" not in check.stderr, check.stderr
    script = f"INIT = {INIT!r}\n" + WSGI_ONLY_CLIENT
    run = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "echo" in json.loads(run.stdout.strip().splitlines()[-1])


# -- framing, in process through Django's own WSGI handler ----------------------------------------------------


@pytest.mark.django_db
def test_the_view_gives_every_buffered_reply_its_length(settings: Any) -> None:
    """Without ``CommonMiddleware`` (which would add it) the view still sets ``Content-Length``: gunicorn
    otherwise sends HTTP/1.1 replies chunked, a second write for the terminator. 204 carries none (RFC 9110)."""
    from django.test import Client

    settings.ROOT_URLCONF = "tests.settings.urls_wsgi"
    settings.MIDDLEWARE = []
    client = Client(SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1")  # development mode answers loopback only
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    modern = {"HTTP_MCP_PROTOCOL_VERSION": "2026-07-28", "HTTP_ACCEPT": ACCEPT}

    def post(body: bytes, **headers: str) -> Any:
        return client.post("/mcp/", body, content_type="application/json", **{**modern, **headers})

    listed = post(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}).encode(),
        HTTP_MCP_METHOD="tools/list",
    )
    malformed = post(b"{not json")
    note = post(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}).encode(),
        HTTP_MCP_METHOD="notifications/cancelled",
    )
    for response, status in ((listed, 200), (malformed, 400), (note, 202)):
        assert response.status_code == status, response.content
        assert response["Content-Length"] == str(len(response.content)), response.headers
    preflight = client.options("/mcp/")
    assert preflight.status_code == 204 and not preflight.has_header("Content-Length")


def test_both_front_ends_answer_alike(gunicorn: LiveServer, mcp_server: LiveServer) -> None:
    """The Channels consumer and the WSGI view render one core: the same statuses, framing and bodies."""
    stateless = {"mcp-protocol-version": "2026-07-28"}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}

    def requests(server: LiveServer) -> list[httpx.Response]:
        url, sid = server.url, initialize(server)
        return [
            httpx.delete(url, headers=stateless),  # 405: no sessions in 2026-07-28
            httpx.delete(url),  # 400: no Mcp-Session-Id
            httpx.delete(url, headers={"mcp-session-id": "nope"}),  # 404
            post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **{"mcp-session-id": sid}),
            post(server, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, **{"mcp-session-id": sid}),
            post(
                server, call | {"params": {**call["params"], "_meta": {}}}, **stateless, **{"mcp-method": "tools/call"}
            ),
            httpx.post(url, content=b"{", headers={"content-type": "application/json", "accept": ACCEPT}),
            httpx.delete(url, headers={"mcp-session-id": sid}),  # 200, then the session is gone
            post(server, {"jsonrpc": "2.0", "id": 4, "method": "ping"}, **{"mcp-session-id": sid}),
        ]

    def seen(r: httpx.Response) -> tuple[Any, ...]:
        length = r.headers.get("content-length")
        assert length is not None and int(length) == len(r.content), r.headers  # sized, never chunked
        return r.status_code, r.headers.get("content-type"), "mcp-session-id" in r.headers, r.content

    wsgi, channels = requests(gunicorn), requests(mcp_server)
    assert [r.status_code for r in wsgi] == [405, 400, 404, 202, 200, 400, 400, 200, 404], [r.text for r in wsgi]
    assert [seen(r) for r in wsgi] == [seen(r) for r in channels]
