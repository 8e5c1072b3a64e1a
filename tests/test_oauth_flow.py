"""End to end with the official SDK client's OAuthClientProvider against the real OAuth server.

Discovery from a 401, dynamic registration, authorization code + PKCE + ``resource``,
consent through DOT's real consent form, token, calls, refresh; the same with a
Client ID Metadata Document and with client credentials.
"""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.kit import (  # noqa: F401  (fixtures)
    CONFIDENTIAL_APP,
    INIT,
    MINT,
    REDIRECT,
    Browser,
    OAuthServer,
    SDKUser,
    Storage,
    mcp_post,
    oauth_log,
    oauth_server,
)

#: own_config: the SDK's OAuth flow runs the same on any database and layer (pg-redis skips it).
pytestmark = pytest.mark.own_config


@pytest.fixture
async def browser(oauth_server: OAuthServer) -> Any:
    b = Browser(oauth_server.base)
    await b.login("alice")
    yield b
    await b.close()


def test_unauthenticated_request_gets_a_challenge(oauth_server: OAuthServer, oauth_log: Any) -> None:
    r = mcp_post(oauth_server, None, INIT)
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{oauth_server.base}/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="mcp secret:read"' in challenge
    assert "error=" not in challenge  # RFC 6750 3.1: no error code when no token was sent
    assert r.json()["error"]["message"].startswith("Unauthorized")
    # Nothing about tools leaks: the body names none.
    assert "secret" not in r.text.replace("secret:read", "") and "add" not in r.text


def test_metadata_documents(oauth_server: OAuthServer, oauth_log: Any) -> None:
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        prm = httpx.get(oauth_server.base + path).json()
        assert prm["resource"] == oauth_server.url
        assert prm["authorization_servers"] == [oauth_server.base]
        assert prm["scopes_supported"] == ["mcp", "secret:read"]
        assert prm["bearer_methods_supported"] == ["header"]
    assert httpx.get(oauth_server.base + "/.well-known/oauth-protected-resource/elsewhere").status_code == 404
    asm = httpx.get(oauth_server.base + "/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == oauth_server.base
    assert asm["authorization_endpoint"] == oauth_server.base + "/oauth/authorize/"
    assert asm["token_endpoint"] == oauth_server.base + "/oauth/token/"
    assert asm["registration_endpoint"] == oauth_server.base + "/oauth/register/"
    assert asm["code_challenge_methods_supported"] == ["S256"]
    assert asm["response_types_supported"] == ["code"]
    assert asm["authorization_response_iss_parameter_supported"] is True
    assert asm["client_id_metadata_document_supported"] is True
    assert "none" in asm["token_endpoint_auth_methods_supported"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_sdk_full_flow(oauth_server: OAuthServer, browser: Browser, mode: str, oauth_log: Any) -> None:
    user = SDKUser(oauth_server, browser)
    async with user.client(mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"add", "secret", "whoami"} <= names
        assert "count_users" not in names  # alice lacks the Django permission
        result = await client.call_tool("whoami", {})
        assert result.content[0].text == "alice authenticated=True"  # type: ignore[union-attr]
        result = await client.call_tool("secret", {})
        assert result.content[0].text == "the secret is 42"  # type: ignore[union-attr]
        # Refresh: an expired access token is renewed with the rotated refresh token, no new consent.
        old = user.storage.tokens
        assert old is not None and old.refresh_token
        user.expire_access_token()
        assert (await client.call_tool("whoami", {})).content[0].text == "alice authenticated=True"  # type: ignore[union-attr]
        new = user.storage.tokens
        assert new is not None
        assert new.access_token != old.access_token
        assert new.refresh_token and new.refresh_token != old.refresh_token  # rotated
    # One authorization: PKCE S256 and the resource indicator naming this endpoint.
    assert len(user.authorizations) == 1
    url = httpx.URL(user.authorizations[0])
    assert url.params["code_challenge_method"] == "S256"
    assert url.params["resource"] == oauth_server.url
    assert user.storage.client is not None
    assert set((new.scope or "").split()) == {"mcp", "secret:read"}


async def test_scopes_filter_lists_and_step_up(oauth_server: OAuthServer, browser: Browser, oauth_log: Any) -> None:
    """The user approves only ``mcp``: no scoped tool is listed; calling one is a 403 the SDK steps up from."""
    user = SDKUser(oauth_server, browser, approve="mcp")
    provider_scope_seen: list[str] = []
    async with user.client("legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "secret" not in names and "add" in names
        assert [p.name for p in (await client.list_prompts()).prompts if p.name == "secret_prompt"] == []
        assert "secret://vault" not in [str(r.uri) for r in (await client.list_resources()).resources]
        assert user.storage.tokens is not None
        provider_scope_seen.append(user.storage.tokens.scope or "")
        # Step-up: 403 insufficient_scope, the SDK re-authorizes for the union of scopes and retries.
        user.approve = None
        result = await client.call_tool("secret", {})
        assert result.content[0].text == "the secret is 42"  # type: ignore[union-attr]
    assert provider_scope_seen == ["mcp"]
    assert len(user.authorizations) == 2
    assert httpx.URL(user.authorizations[1]).params["scope"].split() == ["mcp", "secret:read"]


def test_insufficient_scope_is_a_403_challenge(oauth_server: OAuthServer, oauth_log: Any) -> None:
    access = oauth_server.shell(MINT.format(user="bob", scope="mcp", resource=oauth_server.url)).strip()
    init = mcp_post(oauth_server, access, INIT)
    assert init.status_code == 200
    sid = init.headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "secret", "arguments": {}}}
    r = mcp_post(oauth_server, access, call, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
    assert r.status_code == 403
    challenge = r.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="secret:read"' in challenge
    assert "resource_metadata=" in challenge
    read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "secret://vault"}}
    r = mcp_post(oauth_server, access, read, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
    assert r.status_code == 403
    # A Django permission is not a scope: an unpermitted tool simply does not exist.
    call["params"] = {"name": "count_users", "arguments": {}}
    r = mcp_post(oauth_server, access, call, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"})
    assert r.status_code == 200 and r.json()["error"]["message"] == "Unknown tool: count_users"


async def test_django_permissions_apply_to_token_user(oauth_server: OAuthServer, oauth_log: Any) -> None:
    carol = Browser(oauth_server.base)
    await carol.login("carol")
    try:
        async with SDKUser(oauth_server, carol).client("legacy") as client:
            assert "count_users" in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("count_users", {})
            assert result.structured_content == {"result": 3}
    finally:
        await carol.close()


async def test_cimd_client(oauth_server: OAuthServer, browser: Browser, oauth_log: Any) -> None:
    """A Client ID Metadata Document instead of registration: DOT fetches it and the flow completes."""
    client_id = "https://client.example/mcp-client.json"
    oauth_server.cimd.documents["/mcp-client.json"] = {  # type: ignore[attr-defined]
        "client_id": client_id,
        "client_name": "CIMD test client",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    user = SDKUser(oauth_server, browser, client_metadata_url=client_id)
    async with user.client("legacy") as client:
        assert (await client.call_tool("whoami", {})).content[0].text == "alice authenticated=True"  # type: ignore[union-attr]
    assert user.storage.client is not None and user.storage.client.client_id == client_id
    assert "/mcp-client.json" in oauth_server.cimd.fetched  # type: ignore[attr-defined]
    out = oauth_server.shell(
        "from oauth2_provider.models import Application as A;"
        f"print(A.objects.get(client_id={client_id!r}).registration_source)"
    )
    assert out.strip() == "cimd"


async def test_client_credentials(oauth_server: OAuthServer, oauth_log: Any) -> None:
    """A machine client (client credentials grant) acts as the account it was registered for."""
    out = oauth_server.shell(CONFIDENTIAL_APP).split()
    client_id, secret = out[-2], out[-1]
    provider = ClientCredentialsOAuthProvider(
        oauth_server.url, Storage(), client_id, secret, scope="mcp", issuer=oauth_server.base
    )
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        async with Client(streamable_http_client(oauth_server.url, http_client=http), mode="legacy") as client:
            result = await client.call_tool("whoami", {})
            assert result.content[0].text == "bob authenticated=True"  # type: ignore[union-attr]
            # The client may ask for the scopes staff listed for it (the SDK steps up to secret:read).
            result = await client.call_tool("secret", {})
            assert result.content[0].text == "the secret is 42"  # type: ignore[union-attr]


async def test_denied_consent_grants_nothing(oauth_server: OAuthServer, browser: Browser) -> None:
    user = SDKUser(oauth_server, browser, allow=False)
    with pytest.raises(Exception):  # noqa: B017 - the SDK raises whatever our callback raised
        async with user.client("legacy") as client:
            await client.list_tools()
    assert user.storage.tokens is None


def test_verify_token_outside_http(oauth_server: OAuthServer) -> None:
    """``verify_token`` (for stdio and other non-HTTP transports) applies the same checks, audience included."""
    access = oauth_server.shell(MINT.format(user="bob", scope="mcp", resource=oauth_server.url))
    script = (
        "from django_mcp.auth.bearer import Challenge, verify_token\n"
        f"info = verify_token({access!r}, {oauth_server.url!r})\n"
        "print(info.user.username, sorted(info.scopes), bool(info.client_id))\n"
        "try:\n"
        f"    verify_token({access!r}, {oauth_server.base + '/elsewhere/'!r})\n"
        "except Challenge as c:\n"
        "    print(c.status, c.error)\n"
    )
    out = oauth_server.live.manage("shell", "-c", script).strip().splitlines()
    assert out[-2:] == ["bob ['mcp'] True", "401 invalid_token"]
