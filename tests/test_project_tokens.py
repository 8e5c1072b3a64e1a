"""The project's own API tokens as MCP bearer tokens (``AUTHENTICATION_CLASSES``), attacked through live servers.

Two users, each with DRF's ``authtoken`` token and the project's own ``ApiToken`` (a write flag,
allowed addresses, expiry: ``tests/tokenapp``), against daphne (Channels) and gunicorn (the WSGI
view), driven by the official SDK client sending the token as a bearer header and by raw HTTP.
The REST API of the same project answers the same tokens alongside, as the yardstick.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.kit import INIT, MINT, PASSWORD, OAuthServer, mcp_post, start_oauth_server, stop_oauth_server
from tests.support.servers import server_env
from tests.support.wsgi_server import start_wsgi_server

#: own_config: a project's token check is its own authentication class, the same on any database and
#: layer (pg-redis skips it).
pytestmark = pytest.mark.own_config

#: DRF authtoken keys (40 characters) and the project's ApiToken keys, made by ``SETUP``.
DRF_ALICE = "a" * 40
DRF_BOB = "b" * 40
DRF_DORA = "d" * 40
ALICE_RO = "pat_alice_read_only"
ALICE_RW = "pat_alice_read_write"
BOB_RW = "pat_bob_read_write"
ALICE_EXPIRED = "pat_alice_expired"
ALICE_FAR = "pat_alice_from_elsewhere"
ALICE_NEAR = "pat_alice_from_loopback"
DORA = "pat_dora_inactive"

SETUP = f"""
from datetime import timedelta
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.authtoken.models import Token
from tests.tokenapp.models import ApiToken, Note
users = {{name: User.objects.create_user(name, password={PASSWORD!r}) for name in ("alice", "bob", "dora")}}
User.objects.filter(username="dora").update(is_active=False)
for name, key in (("alice", {DRF_ALICE!r}), ("bob", {DRF_BOB!r}), ("dora", {DRF_DORA!r})):
    Token.objects.create(user=users[name], key=key)
ApiToken.objects.create(user=users["alice"], key={ALICE_RO!r})
ApiToken.objects.create(user=users["alice"], key={ALICE_RW!r}, write_enabled=True)
ApiToken.objects.create(user=users["bob"], key={BOB_RW!r}, write_enabled=True)
ApiToken.objects.create(user=users["alice"], key={ALICE_EXPIRED!r}, write_enabled=True,
    expires=timezone.now() - timedelta(seconds=1))
ApiToken.objects.create(user=users["alice"], key={ALICE_FAR!r}, allowed_ips="10.9.8.7 192.0.2.1")
ApiToken.objects.create(user=users["alice"], key={ALICE_NEAR!r}, allowed_ips="10.9.8.7 127.0.0.1")
ApiToken.objects.create(user=users["dora"], key={DORA!r}, write_enabled=True)
Note.objects.create(owner=users["bob"], text="bob's secret note")
"""


@pytest.fixture(scope="module", params=["daphne", "gunicorn"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    """The token project under daphne (Channels) or gunicorn (the WSGI view)."""
    tmp = tmp_path_factory.mktemp(f"tokens-{request.param}")
    if request.param == "daphne":
        found = start_oauth_server(
            tmp, settings="tests.tokenapp.settings", app="tests.tokenapp.asgi:application", setup=SETUP
        )
    else:
        env = server_env(tmp, settings="tests.tokenapp.settings_wsgi")
        found = OAuthServer(start_wsgi_server(env, tmp / "gunicorn.log", "tests.tokenapp.wsgi:application"))
        found.shell(SETUP)
    yield found
    stop_oauth_server(found)


@pytest.fixture
def log(server: OAuthServer) -> Iterator[Path]:
    """The server's log; the test fails if the server answered 500 or logged a traceback meanwhile."""
    path = server.live.log
    start = path.stat().st_size
    yield path
    with path.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    assert " 500 " not in text and "Traceback" not in text, text


@asynccontextmanager
async def sdk(
    server: OAuthServer, authorization: str, mode: str = "legacy", statuses: list[int] | None = None
) -> AsyncIterator[Client]:
    """The official SDK client sending ``authorization`` as its ``Authorization`` header (answers' statuses kept)."""

    async def remember(response: Any) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    hooks = {"response": [remember]}
    async with httpx2.AsyncClient(headers={"Authorization": authorization}, timeout=30, event_hooks=hooks) as http:
        kwargs: dict[str, Any] = {"mode": mode, "read_timeout_seconds": 30}
        if mode != "legacy":
            kwargs["cache"] = None
        async with Client(streamable_http_client(server.url, http_client=http), **kwargs) as client:
            yield client


def raw(server: OAuthServer, authorization: str | bytes | None, body: dict[str, Any] = INIT) -> httpx.Response:
    headers: dict[str, Any] = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    return httpx.post(server.url, content=json.dumps(body), headers=headers, timeout=30)


def call(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A stateless (2026-07-28) ``tools/call``: one request, no session."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments or {}, "_meta": meta},
    }


def stateless(server: OAuthServer, authorization: str, name: str, arguments: dict[str, Any] | None = None) -> Any:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": authorization,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    return httpx.post(server.url, json=call(name, arguments), headers=headers, timeout=30)


def rest(server: OAuthServer, method: str, path: str, authorization: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method,
        server.base + path,
        headers={"Authorization": authorization},
        timeout=30,
        follow_redirects=False,
        **kwargs,
    )


def assert_refused(r: httpx.Response, words: str = "") -> None:
    assert r.status_code == 401, r.text
    header = r.headers["www-authenticate"]
    assert header.startswith("Bearer ") and 'error="invalid_token"' in header, header
    assert words in r.json()["error"]["message"], r.text
    assert words in header, header


# -- who a token is ------------------------------------------------------------------------------------------
async def test_drf_authtoken_as_bearer_and_as_token(server: OAuthServer, log: Path) -> None:
    """DRF's TokenAuthentication answers the bearer header MCP hosts send, and its own ``Token`` scheme."""
    async with sdk(server, f"Bearer {DRF_ALICE}") as client:
        info = (await client.call_tool("token_info", {})).structured_content
    assert info == {
        "user": "alice",
        "kind": "Token",
        "write_enabled": None,
        "scopes": ["mcp", "notes:read", "notes:write", "secret:read"],
        "authenticator": "rest_framework.authentication.TokenAuthentication",
    }
    assert raw(server, f"Token {DRF_ALICE}").status_code == 200
    assert raw(server, f"token   {DRF_BOB}").status_code == 200


async def test_project_token_reaches_tools_resources_and_prompts(server: OAuthServer, log: Path) -> None:
    async with sdk(server, f"Bearer {ALICE_RO}", mode="2026-07-28") as client:
        info = (await client.call_tool("token_info", {})).structured_content
        resource = await client.read_resource("notes://token")
        prompt = await client.get_prompt("token_prompt", {})
    assert info == {
        "user": "alice",
        "kind": "ApiToken",
        "write_enabled": False,
        "scopes": ["mcp", "notes:read"],
        "authenticator": "tests.tokenapp.auth.ApiTokenAuthentication",
    }
    assert json.loads(resource.contents[0].text)["kind"] == "ApiToken"  # type: ignore[union-attr]
    assert prompt.messages[0].content.text == "Your token is a ApiToken."  # type: ignore[union-attr]


async def test_oauth_tokens_still_work_alongside(server: OAuthServer, log: Path) -> None:
    access = server.shell(MINT.format(user="bob", scope="mcp notes:read", resource=server.url))
    async with sdk(server, f"Bearer {access}") as client:
        info = (await client.call_tool("token_info", {})).structured_content
    assert info is not None
    assert (info["user"], info["kind"], info["authenticator"]) == ("bob", "AccessToken", "")
    assert info["scopes"] == ["mcp", "notes:read"]


# -- what a token may do -------------------------------------------------------------------------------------
async def test_read_only_token_reads_but_cannot_write(server: OAuthServer, log: Path) -> None:
    statuses: list[int] = []
    async with sdk(server, f"Bearer {ALICE_RO}", statuses=statuses) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"note_list", "note_retrieve", "token_info"} <= names
        assert "add_note" not in names  # its notes:write scope is not the token's
        # The DRF create: the view's own permission class reads request.auth (the ApiToken) and refuses it,
        # so the tool is neither listed nor callable.
        assert "note_create" not in names
        listed = await client.call_tool("note_list", {})
        assert not listed.is_error
        with pytest.raises(Exception, match="Unknown tool: note_create"):
            await client.call_tool("note_create", {"text": "from a read-only token"})
        del statuses[:]
        with pytest.raises(Exception):  # noqa: B017  # the plain write tool: 403 insufficient_scope
            await client.call_tool("add_note", {"text": "from a read-only token"})
        assert statuses == [403]
    created = stateless(server, f"Bearer {ALICE_RO}", "note_create", {"text": "from a read-only token"})
    assert created.json()["error"]["message"] == "Unknown tool: note_create", created.text
    # The same refusal, seen raw: 403 insufficient_scope naming the scope, so a client knows what to ask for.
    r = stateless(server, f"Bearer {ALICE_RO}", "add_note", {"text": "x"})
    assert r.status_code == 403, r.text
    assert 'error="insufficient_scope"' in r.headers["www-authenticate"]
    assert 'scope="notes:write"' in r.headers["www-authenticate"]
    # The REST API refuses the same token the same write.
    assert rest(server, "POST", "/api/notes/", f"Bearer {ALICE_RO}", json={"text": "x"}).status_code == 403
    assert "from a read-only token" not in server.shell(
        "from tests.tokenapp.models import Note; print(list(Note.objects.values_list('text', flat=True)))"
    )


async def test_write_enabled_token_writes(server: OAuthServer, log: Path) -> None:
    async with sdk(server, f"Bearer {ALICE_RW}") as client:
        assert {"add_note", "note_create"} <= {t.name for t in (await client.list_tools()).tools}
        created = await client.call_tool("note_create", {"text": "alice via drf"})
        assert not created.is_error, created.content
        added = await client.call_tool("add_note", {"text": "alice via tool"})
        assert not added.is_error, added.content
    owners = server.shell(
        "from tests.tokenapp.models import Note;"
        "print(sorted(Note.objects.filter(text__startswith='alice via').values_list('owner__username', flat=True)))"
    )
    assert owners == "['alice', 'alice']"


async def test_another_users_object_is_absent(server: OAuthServer, log: Path) -> None:
    """alice's tokens, of either kind, cannot read bob's note: not found, as the REST API answers."""
    theirs = int(
        server.shell("from tests.tokenapp.models import Note; print(Note.objects.get(owner__username='bob').pk)")
    )
    assert rest(server, "GET", f"/api/notes/{theirs}/", f"Bearer {BOB_RW}").status_code == 200
    for mine, rest_scheme in ((ALICE_RW, "Bearer"), (DRF_ALICE, "Token")):  # DRF's REST API reads "Token <key>"
        assert rest(server, "GET", f"/api/notes/{theirs}/", f"{rest_scheme} {mine}").status_code == 404
        async with sdk(server, f"Bearer {mine}") as client:
            got = await client.call_tool("note_retrieve", {"pk": theirs})
            assert got.is_error and "bob's secret note" not in str(got.content)
            assert got.content[0].text == "No Note matches the given query."  # type: ignore[union-attr]  # 404, as REST
            listed = await client.call_tool("note_list", {})
            assert "bob's secret note" not in str(listed.structured_content)
    async with sdk(server, f"Bearer {BOB_RW}") as client:
        got = await client.call_tool("note_retrieve", {"pk": theirs})
        assert not got.is_error and got.structured_content["text"] == "bob's secret note"  # type: ignore[index]


def test_a_session_is_not_shared_across_users(server: OAuthServer, log: Path) -> None:
    init = raw(server, f"Bearer {ALICE_RW}")
    assert init.status_code == 200
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {}}
    headers = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
    assert mcp_post(server, ALICE_RW, ping, **headers).status_code == 200
    assert mcp_post(server, BOB_RW, ping, **headers).status_code == 404


# -- refused tokens: 401 at the next request -------------------------------------------------------------------
async def test_deleted_tokens_are_refused_at_the_next_request(server: OAuthServer, log: Path) -> None:
    server.shell(
        "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token;"
        "from tests.tokenapp.models import ApiToken; bob = User.objects.get(username='bob');"
        "ApiToken.objects.create(user=bob, key='pat_bob_to_revoke', write_enabled=True);"
        "Token.objects.filter(user=bob).delete(); Token.objects.create(user=bob, key='r' * 40)"
    )
    statuses: list[int] = []
    async with sdk(server, "Bearer pat_bob_to_revoke", statuses=statuses) as client:
        assert not (await client.call_tool("token_info", {})).is_error
        server.shell(
            "from tests.tokenapp.models import ApiToken; ApiToken.objects.filter(key='pat_bob_to_revoke').delete()"
        )
        del statuses[:]
        with pytest.raises(Exception, match="error response"):
            await client.call_tool("token_info", {})
        assert statuses == [401]
    assert_refused(raw(server, "Bearer pat_bob_to_revoke"), "Unknown API token.")
    assert raw(server, f"Bearer {'r' * 40}").status_code == 200
    server.shell("from rest_framework.authtoken.models import Token; Token.objects.filter(key='r' * 40).delete()")
    assert_refused(raw(server, f"Bearer {'r' * 40}"), "Invalid token.")
    assert_refused(raw(server, f"Token {'r' * 40}"), "Invalid token.")


def test_expired_token(server: OAuthServer, log: Path) -> None:
    assert raw(server, f"Bearer {ALICE_RW}").status_code == 200  # the same user's live token
    assert_refused(raw(server, f"Bearer {ALICE_EXPIRED}"), "API token expired.")
    assert rest(server, "GET", "/api/notes/", f"Bearer {ALICE_EXPIRED}").status_code == 401


def test_allowed_addresses_see_the_client_address(server: OAuthServer, log: Path) -> None:
    """The token's rule reads REMOTE_ADDR: the client's real address (127.0.0.1), from daphne and gunicorn alike."""
    assert_refused(raw(server, f"Bearer {ALICE_FAR}"), "API token not allowed from this address.")
    assert raw(server, f"Bearer {ALICE_NEAR}").status_code == 200


def test_inactive_users_tokens(server: OAuthServer, log: Path) -> None:
    # DRF's TokenAuthentication refuses an inactive user itself; the project's class does not look,
    # django_mcp does.
    assert raw(server, f"Bearer {DRF_ALICE}").status_code == 200 and raw(server, f"Bearer {BOB_RW}").status_code == 200
    assert_refused(raw(server, f"Bearer {DRF_DORA}"), "User inactive or deleted.")
    assert_refused(raw(server, f"Bearer {DORA}"), "The access token's user is inactive.")


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer",
        "Token",
        "Bearer pat_a pat_b",
        "Token a b c",
        "Bearer pat_" + "x" * 5000,
        "Token " + "y" * 5000,
        "Bearer " + "z" * 6000,
        b"Bearer pat_\xff\xfe",
        b"Token \xe9\xe9\xe9",
        'Bearer pat_\\"quoted"',
    ],
    ids=lambda v: repr(v)[:24],
)
def test_malformed_and_huge_headers(server: OAuthServer, log: Path, authorization: str | bytes) -> None:
    r = raw(server, authorization)
    assert r.status_code in (400, 401), (r.status_code, r.text)
    assert r.headers["www-authenticate"].startswith("Bearer"), r.headers
    assert len(r.headers["www-authenticate"]) < 1024


def test_refusals_in_django_words_and_long_messages(server: OAuthServer, log: Path) -> None:
    """Django's PermissionDenied refuses as DRF's exceptions do; a message is cut, kept ASCII, never a header."""
    assert_refused(raw(server, "Bearer pat_blocked_1"), "Blocked by the API policy.")
    r = raw(server, "Bearer pat_noisy_1")
    assert_refused(r)
    assert 'error_description="Cl  \\"refus e\\" X-Injected: 1 xxx' in r.headers["www-authenticate"]
    assert "x-injected" not in r.headers
    message = r.json()["error"]["message"]
    assert message.startswith('Unauthorized: Cl  "refus e" X-Injected: 1 xxx') and message.endswith("x...")
    assert len(message) == len("Unauthorized: ") + 200


def test_no_other_scheme_reaches_the_classes(server: OAuthServer, log: Path) -> None:
    """Basic (or any scheme but Bearer and the classes' keywords) is not a token: 401, authentication required."""
    r = raw(server, f"Basic {DRF_ALICE}")
    assert r.status_code == 401 and "error=" not in r.headers["www-authenticate"], r.headers


def test_stdio_verifies_project_tokens(server: OAuthServer) -> None:
    """``verify_token`` (``mcp_stdio``'s DJANGO_MCP_TOKEN) runs the same classes."""
    out = server.shell(
        "from django_mcp.auth.bearer import verify_token;"
        f"info = verify_token({ALICE_RO!r}, {server.url!r});"
        "print(info.user.username, type(info.token).__name__, sorted(info.scopes))"
    )
    assert out == "alice ApiToken ['mcp', 'notes:read']"
