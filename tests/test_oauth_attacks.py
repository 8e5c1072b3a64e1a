"""Attacks on the OAuth-protected endpoint, each refused with the right status and nothing granted."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

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
    new_client,
    oauth_log,
    oauth_server,
    pkce,
    register,
    token,
)

#: own_config: OAuth's rules are django-oauth-toolkit's and ours, the same on any database and
#: layer (pg-redis skips it).
pytestmark = pytest.mark.own_config


@pytest.fixture
async def alice(oauth_server: OAuthServer) -> Any:
    b = Browser(oauth_server.base)
    await b.login("alice")
    yield b
    await b.close()


def call_whoami(server: OAuthServer, access: str, **headers: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
    init = mcp_post(server, access, INIT)
    if init.status_code != 200:
        return init
    sid = init.headers["mcp-session-id"]
    return mcp_post(server, access, body, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18", **headers})


async def test_valid_flow_works(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    """The baseline the attacks deviate from."""
    tokens = await code_flow(oauth_server, alice)
    assert call_whoami(oauth_server, tokens["access_token"]).status_code == 200


async def test_token_for_another_resource(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    tokens = await code_flow(oauth_server, alice, resource=oauth_server.base + "/other-api/")
    assert_invalid_token(mcp_post(oauth_server, tokens["access_token"], INIT))


def test_token_without_audience(oauth_server: OAuthServer, oauth_log: Any) -> None:
    """``REQUIRE_AUDIENCE``: a token naming no resource is not for us."""
    access = oauth_server.shell(
        MINT.format(user="bob", scope="mcp", resource="").replace('resource=[""]', "resource=[]")
    )
    assert_invalid_token(mcp_post(oauth_server, access, INIT))


def test_expired_token(oauth_server: OAuthServer, oauth_log: Any) -> None:
    access = oauth_server.shell(MINT.format(user="bob", scope="mcp", resource=oauth_server.url))
    assert mcp_post(oauth_server, access, INIT).status_code == 200
    # Saved, as the admin saves it: the save is what tells every worker's token cache (an update() would not).
    oauth_server.shell(
        "from datetime import timedelta; from django.utils import timezone;"
        "from oauth2_provider.models import AccessToken as T\n"
        f"for t in T.objects.filter(token={access!r}):\n"
        "    t.expires = timezone.now() - timedelta(seconds=1); t.save()"
    )
    r = mcp_post(oauth_server, access, INIT)
    assert_invalid_token(r)
    assert "expired" in r.headers["www-authenticate"]


async def test_revoked_token(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    tokens = await code_flow(oauth_server, alice)
    assert call_whoami(oauth_server, tokens["access_token"]).status_code == 200
    r = httpx.post(
        oauth_server.base + "/oauth/revoke_token/",
        data={"token": tokens["access_token"], "client_id": tokens["client_id"]},
    )
    assert r.status_code == 200
    assert_invalid_token(mcp_post(oauth_server, tokens["access_token"], INIT))


def test_garbage_and_malformed_credentials(oauth_server: OAuthServer, oauth_log: Any) -> None:
    assert_invalid_token(mcp_post(oauth_server, "not-a-token", INIT))
    for value in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer a b"):
        r = httpx.post(
            oauth_server.url,
            json=INIT,
            headers={"Authorization": value, "Accept": "application/json, text/event-stream"},
        )
        assert r.status_code == 401 and "error=" not in r.headers["www-authenticate"]


async def test_token_in_query_string(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    tokens = await code_flow(oauth_server, alice)
    access = tokens["access_token"]
    r = httpx.post(
        oauth_server.url + f"?access_token={access}",
        json=INIT,
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert r.status_code == 400
    assert 'error="invalid_request"' in r.headers["www-authenticate"]
    assert "mcp-session-id" not in r.headers
    # Even alongside a valid header the query-string token is refused, not ignored.
    r = mcp_post(oauth_server, access, INIT, **{})
    assert r.status_code == 200
    r = httpx.post(
        oauth_server.url + f"?access_token={access}",
        json=INIT,
        headers={"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {access}"},
    )
    assert r.status_code == 400


async def test_wrong_redirect_uri(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    client_id = new_client(oauth_server)
    _, challenge = pkce()
    for uri in (
        "http://127.0.0.1:9/elsewhere",
        "https://evil.example/callback",
        "http://127.0.0.1:9@evil.example/callback",
        REDIRECT + "#frag",
    ):
        r = await alice.http.get(authorize_url(oauth_server, client_id, challenge, redirect_uri=uri))
        assert r.status_code == 400, (uri, r.status_code)
        assert "location" not in r.headers
        assert "evil" not in r.headers.get("location", "")


def test_registration_refuses_unsafe_redirect_uris(oauth_server: OAuthServer, oauth_log: Any) -> None:
    for uri in (
        "http://evil.example/cb",
        "javascript:alert(1)",
        "com.example.app:/cb",
        "https://user:pw@evil.example/cb",
        "https://ok.example/cb#x",
    ):
        r = register(oauth_server, redirect_uris=[uri])
        assert r.status_code == 400, uri
        assert r.json()["error"] == "invalid_redirect_uri"
    for uri in ("https://ok.example/cb", "http://localhost:1234/cb", "http://[::1]/cb"):
        assert register(oauth_server, redirect_uris=[uri]).status_code == 201, uri


async def test_missing_pkce(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    client_id = new_client(oauth_server)
    r = await alice.http.get(authorize_url(oauth_server, client_id, None))
    assert r.status_code == 302
    query = parse_qs(urlsplit(r.headers["location"]).query)
    assert query["error"] == ["invalid_request"] and "code" not in query


async def test_pkce_plain(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    client_id = new_client(oauth_server)
    url = authorize_url(oauth_server, client_id, "x" * 43, code_challenge_method="plain")
    r = await alice.consent(url)
    assert r.status_code in (302, 400)
    query = parse_qs(urlsplit(r.headers.get("location", "")).query)
    assert "code" not in query


async def test_wrong_code_verifier(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    client_id = new_client(oauth_server)
    _, challenge = pkce()
    query = await authorize(alice, authorize_url(oauth_server, client_id, challenge))
    r = token(
        oauth_server,
        grant_type="authorization_code",
        code=query["code"][0],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=pkce()[0],
    )
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


async def test_code_replay(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    client_id = new_client(oauth_server)
    verifier, challenge = pkce()
    query = await authorize(alice, authorize_url(oauth_server, client_id, challenge))
    exchange = dict(
        grant_type="authorization_code",
        code=query["code"][0],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=verifier,
    )
    assert token(oauth_server, **exchange).status_code == 200
    replay = token(oauth_server, **exchange)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"


async def test_refresh_token_reuse_after_rotation(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    first = await code_flow(oauth_server, alice)
    refresh = dict(grant_type="refresh_token", refresh_token=first["refresh_token"], client_id=first["client_id"])
    second = token(oauth_server, **refresh)
    assert second.status_code == 200
    rotated = second.json()
    assert rotated["refresh_token"] != first["refresh_token"]
    assert call_whoami(oauth_server, rotated["access_token"]).status_code == 200
    reuse = token(oauth_server, **refresh)
    assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
    # Reuse protection: replaying a rotated refresh token revokes the whole family.
    assert_invalid_token(mcp_post(oauth_server, rotated["access_token"], INIT))
    again = token(
        oauth_server, grant_type="refresh_token", refresh_token=rotated["refresh_token"], client_id=first["client_id"]
    )
    assert again.status_code == 400


async def test_another_users_session(oauth_server: OAuthServer, alice: Browser, oauth_log: Any) -> None:
    mine = await code_flow(oauth_server, alice)
    bob = Browser(oauth_server.base)
    await bob.login("bob")
    try:
        theirs = await code_flow(oauth_server, bob)
    finally:
        await bob.close()
    init = mcp_post(oauth_server, mine["access_token"], INIT)
    sid = init.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {}}
    headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    assert mcp_post(oauth_server, mine["access_token"], ping, **headers).status_code == 200
    assert mcp_post(oauth_server, theirs["access_token"], ping, **headers).status_code == 404
    # Same user, another OAuth client: not the same session either.
    other_client = await code_flow(oauth_server, alice)
    assert mcp_post(oauth_server, other_client["access_token"], ping, **headers).status_code == 404
    auth = {"Authorization": f"Bearer {theirs['access_token']}"}
    get = httpx.get(oauth_server.url, headers={**headers, **auth, "Accept": "text/event-stream"})
    assert get.status_code == 404
    assert httpx.delete(oauth_server.url, headers={**headers, **auth}).status_code == 404
    # The owner's session survived the attempts.
    assert mcp_post(oauth_server, mine["access_token"], ping, **headers).status_code == 200


def test_every_entry_point_needs_a_token(oauth_server: OAuthServer, oauth_log: Any) -> None:
    sse = {"Accept": "text/event-stream"}
    for method, path, headers in (
        ("GET", "", {**sse, "Mcp-Session-Id": "x"}),
        ("DELETE", "", {"Mcp-Session-Id": "x"}),
        ("GET", "sse/", sse),
        ("POST", "messages/?session_id=x", {"Content-Type": "application/json"}),
    ):
        r = httpx.request(method, oauth_server.url + path, headers=headers, content=b"{}", timeout=10)
        assert r.status_code == 401, (method, path)
        assert r.headers["www-authenticate"].startswith("Bearer ")
    modern = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    r = mcp_post(oauth_server, None, modern, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
    assert r.status_code == 401 and "add" not in r.text
