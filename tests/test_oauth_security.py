"""The OAuth holes found in a production review, each attacked through a live daphne.

Two users (alice, bob; carol holds ``auth.view_user``) and two clients in every attack:
someone else's client, token or registration must never work for the attacker.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.oauth.kit import (  # noqa: F401  (fixtures)
    INIT,
    MINT,
    REDIRECT,
    Browser,
    OAuthServer,
    assert_invalid_token,
    authorize,
    authorize_url,
    code_flow,
    mcp_post,
    oauth_log,
    oauth_server,
    pkce,
    register,
    start_oauth_server,
    stop_oauth_server,
    token,
)
from tests.support.windows import within_one_window

HANDSHAKE = {"MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture
async def alice(oauth_server: OAuthServer) -> Any:
    b = Browser(oauth_server.base)
    await b.login("alice")
    yield b
    await b.close()


@pytest.fixture
async def bob(oauth_server: OAuthServer) -> Any:
    b = Browser(oauth_server.base)
    await b.login("bob")
    yield b
    await b.close()


def rpc(method: str, params: dict[str, Any] | None = None, id: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


def session(server: OAuthServer, access: str) -> dict[str, str]:
    """Open a handshake-era session with ``access``; the headers for its later requests."""
    r = mcp_post(server, access, INIT)
    assert r.status_code == 200, r.text
    return {"Mcp-Session-Id": r.headers["mcp-session-id"], **HANDSHAKE}


def call_tool(server: OAuthServer, access: str, tool: str, **arguments: Any) -> dict[str, Any]:
    r = mcp_post(server, access, rpc("tools/call", {"name": tool, "arguments": arguments}), **session(server, access))
    assert r.status_code == 200, r.text
    return dict(r.json())


def tool_text(reply: dict[str, Any]) -> str:
    return str(reply["result"]["content"][0]["text"])


def machine_token(server: OAuthServer, client_id: str, secret: str, **data: str) -> httpx.Response:
    body = {"grant_type": "client_credentials", "resource": server.url, **data}
    return httpx.post(server.base + "/oauth/token/", data=body, auth=(client_id, secret), timeout=30)


def mcp_client(server: OAuthServer, *args: str) -> dict[str, str]:
    """``manage.py mcp_client ...`` in the server's project; its ``key value`` lines."""
    out = server.live.manage("mcp_client", *args)
    return dict(line.split(" ", 1) for line in out.strip().splitlines() if " " in line)


def count(server: OAuthServer, model: str, **filters: Any) -> int:
    module, name = model.rsplit(".", 1)
    return int(server.shell(f"from {module} import {name} as M; print(M.objects.filter(**{filters!r}).count())"))


# -- item 1: open registration creates authorization-code clients only ------------------------------------
def test_open_registration_refuses_machine_grants(oauth_server: OAuthServer, oauth_log: Any) -> None:
    before = count(oauth_server, "oauth2_provider.models.Application")
    for metadata in (
        {"grant_types": ["client_credentials"], "token_endpoint_auth_method": "client_secret_basic"},
        {"grant_types": ["authorization_code", "client_credentials"]},
        {"grant_types": ["implicit"]},
        {"grant_types": ["password"]},
        {"grant_types": ["urn:ietf:params:oauth:grant-type:device_code"]},
        {"response_types": ["token"]},
        {"response_types": ["code", "id_token"]},
        {"response_types": "code"},
    ):
        r = register(oauth_server, **metadata)
        assert r.status_code == 400, (metadata, r.text)
        assert r.json()["error"] == "invalid_client_metadata", metadata
    assert count(oauth_server, "oauth2_provider.models.Application") == before
    # The baseline stays open: a client for the authorization-code flow with refresh.
    ok = register(oauth_server)
    assert ok.status_code == 201 and ok.json()["grant_types"] == ["authorization_code", "refresh_token"]


LEGACY_MACHINE = """
from oauth2_provider.models import Application
from oauth2_provider.generators import generate_client_secret
from django.contrib.auth.models import User
secret = generate_client_secret()
app = Application.objects.create(name="registered before the fix", client_type="confidential", client_secret=secret,
    authorization_grant_type="client-credentials", registration_source="dcr", user=User.objects.get(username="alice"))
print(app.client_id, secret)
"""

USERLESS = """
from datetime import timedelta
import secrets
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application
value = secrets.token_urlsafe(30)
AccessToken.objects.create(user=None, application=Application.objects.get(client_id="{client_id}"), token=value,
    expires=timezone.now() + timedelta(hours=1), scope="mcp secret:read", resource=["{resource}"])
print(value)
"""


def test_issue_exploit_fails_at_each_step(oauth_server: OAuthServer, oauth_log: Any) -> None:
    """The reported exploit: register anonymously with client_credentials -> token -> tools/list, a write, a read."""
    # Step 1: the registration itself.
    r = register(
        oauth_server,
        grant_types=["client_credentials"],
        token_endpoint_auth_method="client_secret_basic",
        redirect_uris=[],
    )
    assert r.status_code == 400 and r.json()["error"] == "invalid_client_metadata", r.text
    assert "client_credentials" in r.json()["error_description"]
    # Step 2: a machine client that open registration created before the fix (while alice was signed in,
    # so DOT recorded her as its user) gets no token: no service user, no allowed scopes.
    client_id, secret = oauth_server.shell(LEGACY_MACHINE).split()[-2:]
    for scope in ("mcp books:write", "mcp secret:read", "mcp", None):
        r = machine_token(oauth_server, client_id, secret, **({"scope": scope} if scope else {}))
        assert r.status_code in (400, 401), (scope, r.text)
        assert "access_token" not in r.text
        assert r.json()["error"] in ("unauthorized_client", "invalid_scope", "invalid_client"), r.text
    # Step 3: even a token that names no user (as the old exchange issued) reaches nothing.
    userless = oauth_server.shell(USERLESS.format(client_id=client_id, resource=oauth_server.url))
    groups = count(oauth_server, "django.contrib.auth.models.Group")
    for body in (
        INIT,
        rpc("tools/list"),
        rpc("tools/call", {"name": "create_group", "arguments": {"name": "pwned"}}),  # the write
        rpc("tools/call", {"name": "secret", "arguments": {}}),  # the data read
        rpc("tools/call", {"name": "whoami", "arguments": {}}),
    ):
        r = mcp_post(oauth_server, userless, body, **HANDSHAKE)
        assert_invalid_token(r)
        assert "acts for no user" in r.headers["www-authenticate"]
    assert count(oauth_server, "django.contrib.auth.models.Group") == groups


def test_a_machine_token_without_resource_is_refused_with_what_to_send(
    oauth_server: OAuthServer, oauth_log: Any
) -> None:
    """A client-credentials token asked without ``resource`` is not bound to this endpoint (tokens for the
    project's other uses of django-oauth-toolkit name none): the refusal says which ``resource`` to ask for,
    and a token asked for it, as docs/auth.md shows, works."""
    bot = mcp_client(oauth_server, "create", "--name", "bot-no-resource", "--scopes", "mcp", "--service-user", "bob")
    body = {"grant_type": "client_credentials", "scope": "mcp"}
    r = httpx.post(oauth_server.base + "/oauth/token/", data=body, auth=(bot["client_id"], bot["client_secret"]))
    assert r.status_code == 200, r.text
    refused = mcp_post(oauth_server, r.json()["access_token"], INIT)
    assert_invalid_token(refused)
    advice = f"resource={oauth_server.url} (RFC 8707)"
    assert advice in refused.headers["www-authenticate"] and advice in refused.json()["error"]["message"]
    fixed = machine_token(oauth_server, bot["client_id"], bot["client_secret"], scope="mcp")  # sends resource=
    assert fixed.status_code == 200, fixed.text
    assert tool_text(call_tool(oauth_server, fixed.json()["access_token"], "whoami")) == "bob authenticated=True"


def test_staff_machine_clients_act_as_their_service_user(oauth_server: OAuthServer, oauth_log: Any) -> None:
    """``mcp_client create``: two machine clients, each its own service user and its own scopes."""
    a = mcp_client(oauth_server, "create", "--name", "bot-a", "--scopes", "mcp", "--service-user", "bob")
    b = mcp_client(oauth_server, "create", "--name", "bot-b", "--scopes", "mcp secret:read", "--service-user", "carol")
    ta = machine_token(oauth_server, a["client_id"], a["client_secret"], scope="mcp")
    assert ta.status_code == 200, ta.text
    access_a = ta.json()["access_token"]
    assert tool_text(call_tool(oauth_server, access_a, "whoami")) == "bob authenticated=True"
    # bob's Django permissions, not more: no auth.view_user, no auth.add_group.
    assert "error" in call_tool(oauth_server, access_a, "count_users")
    assert "error" in call_tool(oauth_server, access_a, "create_group", name="by-bot-a")
    # Scopes beyond the client's list are refused at the token endpoint, also by default (no scope asked).
    over = machine_token(oauth_server, a["client_id"], a["client_secret"], scope="mcp secret:read")
    assert over.status_code == 400 and over.json()["error"] == "invalid_scope"
    default = machine_token(oauth_server, a["client_id"], a["client_secret"])
    assert default.status_code == 200 and default.json()["scope"] == "mcp"
    # The other client: carol, with the scope and the permission bob lacks.
    tb = machine_token(oauth_server, b["client_id"], b["client_secret"], scope="mcp secret:read")
    access_b = tb.json()["access_token"]
    assert tool_text(call_tool(oauth_server, access_b, "whoami")) == "carol authenticated=True"
    assert tool_text(call_tool(oauth_server, access_b, "secret")) == "the secret is 42"
    assert call_tool(oauth_server, access_b, "count_users")["result"]["structuredContent"]["result"] >= 3
    # Client A's secret does not open client B.
    cross = machine_token(oauth_server, b["client_id"], a["client_secret"], scope="mcp")
    assert cross.status_code == 401 and cross.json()["error"] == "invalid_client"
    # A machine client without a service user cannot even be created.
    with pytest.raises(subprocess.CalledProcessError):
        oauth_server.live.manage("mcp_client", "create", "--name", "nobody", "--scopes", "mcp")
    # Staff narrow client B in place (the admin edits the same fields).
    mcp_client(oauth_server, "set", b["client_id"], "--scopes", "mcp")
    narrowed = machine_token(oauth_server, b["client_id"], b["client_secret"], scope="mcp secret:read")
    assert narrowed.status_code == 400 and narrowed.json()["error"] == "invalid_scope"


def test_initial_access_token_registration(oauth_server: OAuthServer, oauth_log: Any) -> None:
    """RFC 7591 §3: a registration presenting a staff-issued initial access token may create a machine client."""
    iat = oauth_server.live.manage(
        "mcp_client", "initial-token", "--scopes", "mcp", "--service-user", "carol", "--uses", "1"
    ).strip()
    machine = {
        "grant_types": ["client_credentials"],
        "token_endpoint_auth_method": "client_secret_basic",
        "redirect_uris": [],
        "response_types": [],
    }
    wrong = httpx.post(
        oauth_server.base + "/oauth/register/", json=machine, headers={"Authorization": "Bearer nope"}, timeout=30
    )
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_token"
    auth = {"Authorization": f"Bearer {iat}"}
    r = httpx.post(oauth_server.base + "/oauth/register/", json=machine, headers=auth, timeout=30)
    assert r.status_code == 201, r.text
    client = r.json()
    t = machine_token(oauth_server, client["client_id"], client["client_secret"])
    assert t.status_code == 200 and t.json()["scope"] == "mcp", t.text
    assert tool_text(call_tool(oauth_server, t.json()["access_token"], "whoami")) == "carol authenticated=True"
    # One use: a second registration with the same token is refused.
    again = httpx.post(oauth_server.base + "/oauth/register/", json=machine, headers=auth, timeout=30)
    assert again.status_code == 401
    # A token naming no service user cannot create a machine client (it would act for nobody).
    bare = oauth_server.live.manage("mcp_client", "initial-token", "--scopes", "mcp").strip()
    r = httpx.post(
        oauth_server.base + "/oauth/register/", json=machine, headers={"Authorization": f"Bearer {bare}"}, timeout=30
    )
    assert r.status_code == 400 and r.json()["error"] == "invalid_client_metadata"


# -- item 5: RFC 7592 update follows the registration rules -------------------------------------------------
def test_update_applies_registration_rules(oauth_server: OAuthServer, oauth_log: Any) -> None:
    mine, theirs = register(oauth_server).json(), register(oauth_server).json()
    uri = mine["registration_client_uri"]
    auth = {"Authorization": f"Bearer {mine['registration_access_token']}"}
    stored = (
        "from oauth2_provider.models import Application as A;"
        f"a = A.objects.get(client_id={mine['client_id']!r}); print(a.redirect_uris, a.authorization_grant_type)"
    )
    before = oauth_server.shell(stored)
    base = {"client_name": "raw client", "token_endpoint_auth_method": "none"}
    for metadata in (
        {"redirect_uris": ["http://evil.example/cb"]},
        {"redirect_uris": [REDIRECT, "http://evil.example/cb"]},
        {"redirect_uris": ["javascript:alert(1)"]},
        {"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]},
        {"redirect_uris": [REDIRECT], "response_types": ["token"]},
        {"redirect_uris": [f"https://ok.example/{i}" for i in range(50)]},
    ):
        r = httpx.put(uri, json={**base, **metadata}, headers=auth, timeout=30)
        assert r.status_code == 400, (metadata, r.text)
        assert r.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")
    assert oauth_server.shell(stored) == before
    assert "evil" not in before
    # Another client's registration token cannot touch this registration.
    other = {"Authorization": f"Bearer {theirs['registration_access_token']}"}
    r = httpx.put(uri, json={**base, "redirect_uris": ["https://ok.example/cb"]}, headers=other, timeout=30)
    assert r.status_code == 401
    assert oauth_server.shell(stored) == before
    # A valid update still works.
    r = httpx.put(uri, json={**base, "redirect_uris": ["https://ok.example/cb"]}, headers=auth, timeout=30)
    assert r.status_code == 200 and r.json()["redirect_uris"] == ["https://ok.example/cb"], r.text


# -- item 6: exact audience ---------------------------------------------------------------------------------
def mint(server: OAuthServer, user: str, resource: str) -> str:
    return server.shell(MINT.format(user=user, scope="mcp", resource=resource))


async def test_exact_audience(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    root = oauth_server.base + "/"
    # The real flow: alice's client asks for a token for the site root; it is not a token for /mcp/.
    tokens = await code_flow(oauth_server, alice, resource=root)
    assert_invalid_token(mcp_post(oauth_server, tokens["access_token"], INIT))
    for resource in (root, oauth_server.base, oauth_server.url + "sub/", oauth_server.base + "/mc"):
        r = mcp_post(oauth_server, mint(oauth_server, "bob", resource), INIT)
        assert_invalid_token(r)
        assert "not valid for this resource" in r.headers["www-authenticate"]
    # Exactly the endpoint (with or without its trailing slash) passes, for either user.
    assert mcp_post(oauth_server, mint(oauth_server, "bob", oauth_server.url), INIT).status_code == 200
    assert mcp_post(oauth_server, mint(oauth_server, "alice", oauth_server.url.rstrip("/")), INIT).status_code == 200
    # The legacy SSE pair lives under the endpoint and takes the endpoint's tokens.
    legacy = httpx.get(
        oauth_server.url + "sse/",
        headers={"Authorization": f"Bearer {mint(oauth_server, 'bob', root)}", "Accept": "text/event-stream"},
        timeout=10,
    )
    assert legacy.status_code == 401


PUBLIC = "https://mcp.example.com/mcp/"  # the endpoint's public name behind a proxy, say


@pytest.fixture(scope="module")
def widened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    tmp = tmp_path_factory.mktemp("oauth-widened")
    server = start_oauth_server(tmp, MCP_ACCEPTED_AUDIENCES=PUBLIC)
    yield server
    stop_oauth_server(server)


def test_accepted_audiences_widen(oauth_server: OAuthServer, widened: OAuthServer) -> None:
    """``ACCEPTED_AUDIENCES`` adds exactly what it lists, even on another host; nothing else."""
    assert mcp_post(widened, mint(widened, "bob", PUBLIC), INIT).status_code == 200
    assert mcp_post(widened, mint(widened, "alice", widened.url), INIT).status_code == 200
    assert_invalid_token(mcp_post(widened, mint(widened, "bob", widened.base + "/"), INIT))
    assert_invalid_token(mcp_post(widened, mint(widened, "bob", PUBLIC + "sub/"), INIT))
    # Without the setting the same audience is refused.
    assert_invalid_token(mcp_post(oauth_server, mint(oauth_server, "bob", PUBLIC), INIT))


# -- item 7: a replayed code revokes what its first exchange issued -----------------------------------------
async def test_code_replay_revokes_first_tokens(
    oauth_server: OAuthServer, alice: Browser, bob: Browser, oauth_log: Any
) -> None:
    bystander = await code_flow(oauth_server, bob)  # another user, another client: must be unaffected
    client_id = register(oauth_server).json()["client_id"]
    verifier, challenge = pkce()
    query = await authorize(alice, authorize_url(oauth_server, client_id, challenge))
    exchange = dict(
        grant_type="authorization_code",
        code=query["code"][0],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=verifier,
    )
    first = token(oauth_server, **exchange)
    assert first.status_code == 200
    issued = first.json()
    assert mcp_post(oauth_server, issued["access_token"], INIT).status_code == 200
    # The client refreshes once: the rotated pair belongs to the same grant.
    rotated = token(
        oauth_server, grant_type="refresh_token", refresh_token=issued["refresh_token"], client_id=client_id
    ).json()
    assert mcp_post(oauth_server, rotated["access_token"], INIT).status_code == 200
    replay = token(oauth_server, **exchange)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert_invalid_token(mcp_post(oauth_server, rotated["access_token"], INIT))
    again = token(oauth_server, grant_type="refresh_token", refresh_token=rotated["refresh_token"], client_id=client_id)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert mcp_post(oauth_server, bystander["access_token"], INIT).status_code == 200


async def test_code_replay_by_another_client_revokes_nothing(
    oauth_server: OAuthServer, alice: Browser, oauth_log: Any
) -> None:
    """A stolen code presented with someone else's client_id is refused and cannot be used to revoke."""
    client_id, other = register(oauth_server).json()["client_id"], register(oauth_server).json()["client_id"]
    verifier, challenge = pkce()
    query = await authorize(alice, authorize_url(oauth_server, client_id, challenge))
    exchange = dict(
        grant_type="authorization_code",
        code=query["code"][0],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=verifier,
    )
    access = token(oauth_server, **exchange).json()["access_token"]
    replay = token(oauth_server, **{**exchange, "client_id": other})
    assert replay.status_code == 400
    assert mcp_post(oauth_server, access, INIT).status_code == 200


# -- item 8: registration limits ----------------------------------------------------------------------------
def test_registration_limits(oauth_server: OAuthServer, oauth_log: Any) -> None:
    before = count(oauth_server, "oauth2_provider.models.Application")
    many = register(oauth_server, redirect_uris=[f"http://127.0.0.1:{9000 + i}/cb" for i in range(11)])
    assert many.status_code == 400 and many.json()["error"] == "invalid_redirect_uri"
    long = register(oauth_server, redirect_uris=["https://ok.example/" + "a" * 2100])
    assert long.status_code == 400 and long.json()["error"] == "invalid_redirect_uri"
    extra = register(oauth_server, software_blob="x" * 5000)
    assert extra.status_code == 400 and extra.json()["error"] == "invalid_client_metadata"
    big = register(oauth_server, software_blob="x" * 20_000)
    assert big.status_code == 413
    # The issue's figures: 20,000 redirect URIs, 2 MB of unknown metadata.
    huge = register(oauth_server, redirect_uris=[f"https://ok.example/{i}" for i in range(20_000)])
    assert huge.status_code == 413
    body = json.dumps({"redirect_uris": [REDIRECT], "blob": "x" * 2_000_000}).encode()
    r = httpx.post(
        oauth_server.base + "/oauth/register/", content=body, headers={"Content-Type": "application/json"}, timeout=30
    )
    assert r.status_code == 413
    assert count(oauth_server, "oauth2_provider.models.Application") == before
    assert (
        register(oauth_server, redirect_uris=[f"http://127.0.0.1:{9000 + i}/cb" for i in range(10)]).status_code == 201
    )


@pytest.mark.own_config  # the count is in the one worker's in-process cache (memory layer picked): not the database
def test_registration_rate_limit(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Anonymous registration per address: over the limit 429 with Retry-After; staff's token still registers."""
    tmp = tmp_path_factory.mktemp("oauth-rate")
    # One worker: its own in-process cache, so no other run's count in a shared Redis can leak in.
    # The [count, seconds] form of earlier releases still reads as one rate.
    server = start_oauth_server(tmp, MCP_REGISTRATION_RATE="3,86400", MCP_TEST_LAYER="memory")
    try:
        iat = server.live.manage(
            "mcp_client", "initial-token", "--scopes", "mcp", "--service-user", "bob", "--uses", "0"
        ).strip()
        left = within_one_window(86400, 20)  # the count is a fixed window of a day: all five calls fall in one
        statuses = [register(server).status_code for _ in range(3)]
        assert statuses == [201, 201, 201]
        over = register(server)
        assert over.status_code == 429, over.text
        assert 1 <= int(over.headers["Retry-After"]) <= left + 1  # what is left of the window
        bad = register(server, grant_types=["client_credentials"])  # still counted, still refused
        assert bad.status_code == 429
        trusted = httpx.post(
            server.base + "/oauth/register/",
            json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
            headers={"Authorization": f"Bearer {iat}"},
            timeout=30,
        )
        assert trusted.status_code == 201
        log = server.live.log.read_text(errors="replace")
        assert " 500 " not in log and "Traceback" not in log
    finally:
        stop_oauth_server(server)


# -- item 9: tokens hashed at rest --------------------------------------------------------------------------
STORED = """
import hashlib
from oauth2_provider.models import AccessToken, RefreshToken
for model, value in ((AccessToken, {access!r}), (RefreshToken, {refresh!r})):
    if value:
        row = model.objects.get(token_checksum=hashlib.sha256(value.encode()).hexdigest())
        print(model.__name__, repr(row.token), value in repr(list(model.objects.values())))
"""


async def test_tokens_hashed_at_rest(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    tokens = await code_flow(oauth_server, alice)
    out = oauth_server.live.manage(
        "shell", "-c", STORED.format(access=tokens["access_token"], refresh=tokens["refresh_token"])
    )
    lines = out.strip().splitlines()[-2:]
    assert lines == ["AccessToken '' False", "RefreshToken '' False"], out
    assert mcp_post(oauth_server, tokens["access_token"], INIT).status_code == 200
    # mcp_token prints the token once; the row holds only its checksum, and the bearer authenticates.
    minted = oauth_server.live.manage("mcp_token", "--user", "bob", "--resource", oauth_server.url).strip()
    assert oauth_server.shell(STORED.format(access=minted, refresh="")) == "AccessToken '' False"
    assert hashlib.sha256(minted.encode()).hexdigest() != minted
    r = mcp_post(
        oauth_server, minted, rpc("tools/call", {"name": "whoami", "arguments": {}}), **session(oauth_server, minted)
    )
    assert tool_text(r.json()) == "bob authenticated=True"
    # Someone else's bearer is not bob's: alice's token still acts as alice.
    r = mcp_post(
        oauth_server,
        tokens["access_token"],
        rpc("tools/call", {"name": "whoami", "arguments": {}}),
        **session(oauth_server, tokens["access_token"]),
    )
    assert tool_text(r.json()) == "alice authenticated=True"


@pytest.mark.own_config  # the count is in its own redis-server (picked here), not in the database or the layer
def test_registration_rate_limit_holds_across_workers(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two daphne workers, one database, one Redis cache (its own redis-server): one budget per address."""
    import shutil
    import time

    from tests.support.servers import IN_CI, _reachable, free_port, need_service, server_env, start_server

    need_service("Redis", 6379)  # the test settings' Redis layer; the count itself goes to our own instance
    if shutil.which("redis-server") is None:
        if IN_CI:
            pytest.fail("redis-server is not installed")
        pytest.skip("redis-server is not installed")
    tmp = tmp_path_factory.mktemp("oauth-rate-workers")
    port = free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers = []
    try:
        deadline = time.monotonic() + 10
        while not _reachable(port):
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        env = server_env(
            tmp,
            layer="redis",
            settings="tests.oauth.settings",
            MCP_REDIS_URL=f"redis://127.0.0.1:{port}/1",
            MCP_REGISTRATION_RATE="4/day",
        )
        workers.append(start_server(env, tmp / "a.log", app="tests.oauth.asgi:application"))
        workers.append(start_server(env, tmp / "b.log", migrate=False, app="tests.oauth.asgi:application"))

        def reg(worker: Any) -> httpx.Response:
            body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
            return httpx.post(worker.base + "/oauth/register/", json=body, timeout=30)

        a, b = workers
        within_one_window(86400, 30)  # the count is a fixed window of a day: all six calls must fall in one
        assert [reg(w).status_code for w in (a, b, a, b)] == [201] * 4
        # Each worker alone has seen only two: the fifth and sixth are refused on both.
        for w in (a, b):
            r = reg(w)
            assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1, r.text
        for w in workers:
            log = w.log.read_text(errors="replace")
            assert " 500 " not in log and "Traceback" not in log, log
    finally:
        for w in workers:
            w.stop()
        redis.terminate()
        redis.wait(timeout=10)
