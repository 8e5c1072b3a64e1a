"""The whole package under a prefix: a project that mounts nothing of django_mcp at its root.

``tests.prefixed`` includes ``django_mcp.urls`` (and, in WSGI mode, ``django_mcp.urls_wsgi``) only under
``plugins/mcp/``, with ``URL_PREFIX = ENDPOINT = "/plugins/mcp/"``. Served by daphne (``django_mcp.asgi``) and by
gunicorn, the official SDK client, given only the endpoint URL, runs its whole OAuth flow: the 401's
``resource_metadata`` → the PRM under the prefix → the issuer ``…/plugins/mcp`` → the spec's discovery order
(the two root URLs 404, ``/plugins/mcp/.well-known/openid-configuration`` answers) → registration → consent → token
→ a tool call with a token whose audience is the prefixed endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.kit import (
    INIT,
    MINT,
    PASSWORD,
    SETUP,
    Browser,
    OAuthServer,
    SDKUser,
    mcp_post,
    start_oauth_server,
    stop_oauth_server,
)
from tests.support.servers import served_cleanly as conftest_served_cleanly
from tests.support.servers import server_env
from tests.support.wsgi_server import start_wsgi_server

#: own_config: URL prefixes do not depend on the database or the layer (pg-redis skips it).
pytestmark = pytest.mark.own_config

PREFIX = "/plugins/mcp/"
#: The audience of the newest access token of a user (the ``resource`` it was issued for).
AUDIENCE = """
from oauth2_provider.models import AccessToken
print(AccessToken.objects.filter(user__username="{user}").latest("id").resource)
"""


@pytest.fixture(scope="module", params=["asgi", "wsgi"])
def prefixed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    """The prefixed project, served by daphne (``django_mcp.asgi:application``) or by gunicorn."""
    tmp = tmp_path_factory.mktemp(f"prefixed-{request.param}")
    if request.param == "asgi":
        server = start_oauth_server(tmp, settings="tests.prefixed.settings", app="django_mcp.asgi:application")
    else:
        env = server_env(tmp, settings="tests.prefixed.settings_wsgi")
        server = OAuthServer(start_wsgi_server(env, tmp / "gunicorn.log", "tests.oauth.wsgi:application"))
        server.shell(SETUP.format(password=PASSWORD))
    server.live.url = server.base + PREFIX
    yield server
    stop_oauth_server(server)


@pytest.fixture
def served_cleanly(prefixed: OAuthServer) -> Iterator[None]:
    """The test fails if the server answered 500 or logged a traceback meanwhile."""
    with conftest_served_cleanly(prefixed.live.log):
        yield


async def test_sdk_client_connects_with_only_the_prefixed_endpoint(prefixed: OAuthServer, served_cleanly: None) -> None:
    browser = Browser(prefixed.base)
    await browser.login("alice")  # the project's own login page, at its root
    user = SDKUser(prefixed, browser)
    seen: list[tuple[str, str, int]] = []

    async def record(response: Any) -> None:
        seen.append((response.request.method, response.request.url.path, response.status_code))

    try:
        async with httpx2.AsyncClient(auth=user.provider(), timeout=30, event_hooks={"response": [record]}) as http:
            async with Client(
                streamable_http_client(prefixed.url, http_client=http), read_timeout_seconds=30
            ) as client:
                result = await client.call_tool("whoami", {})
                assert result.content[0].text == "alice authenticated=True"  # type: ignore[union-attr]
    finally:
        await browser.close()
    paths = {(method, path): status for method, path, status in seen}
    # Discovery followed the links, all under the prefix...
    assert paths[("GET", PREFIX + ".well-known/oauth-protected-resource")] == 200
    assert paths[("GET", PREFIX + ".well-known/openid-configuration")] == 200
    assert paths[("POST", PREFIX + "oauth/register/")] == 201
    assert paths[("POST", PREFIX + "oauth/token/")] == 200
    # ...and whatever the client tried at the root's /.well-known/ (the spec's order for an issuer with a path
    # starts there) was a 404: nothing of the package is served at the root.
    root = [(path, status) for _, path, status in seen if path.startswith("/.well-known/")]
    assert ("/.well-known/oauth-authorization-server/plugins/mcp", 404) in root
    assert all(status == 404 for _, status in root), root
    # The token is for the prefixed endpoint, the audience the server checks on every call.
    assert prefixed.shell(AUDIENCE.format(user="alice")) == str([prefixed.url])
    assert httpx.URL(user.authorizations[0]).params["resource"] == prefixed.url
    assert httpx.URL(user.authorizations[0]).path == PREFIX + "oauth/authorize/"


def test_documents_agree_under_the_prefix(prefixed: OAuthServer, served_cleanly: None) -> None:
    base = prefixed.base
    r = mcp_post(prefixed, None, INIT)
    assert r.status_code == 401
    assert f'resource_metadata="{base}{PREFIX}.well-known/oauth-protected-resource"' in r.headers["www-authenticate"]
    prm = httpx.get(f"{base}{PREFIX}.well-known/oauth-protected-resource").json()
    assert prm["resource"] == prefixed.url
    issuer = base + PREFIX.rstrip("/")
    assert prm["authorization_servers"] == [issuer]
    for where in (".well-known/openid-configuration", ".well-known/oauth-authorization-server"):
        asm = httpx.get(base + PREFIX + where).json()
        assert asm["issuer"] == issuer, where
        assert asm["authorization_endpoint"] == f"{base}{PREFIX}oauth/authorize/"
        assert asm["token_endpoint"] == f"{base}{PREFIX}oauth/token/"
        assert asm["registration_endpoint"] == f"{base}{PREFIX}oauth/register/"
    card = httpx.get(f"{base}{PREFIX}server-card").json()
    assert card["remotes"][0]["url"] == prefixed.url
    prm_url = card["_meta"]["io.github.django-mcp-toolkit/authorization"]["protectedResourceMetadata"]
    assert prm_url == f"{base}{PREFIX}.well-known/oauth-protected-resource"
    catalog = httpx.get(f"{base}{PREFIX}.well-known/ai-catalog.json").json()
    assert catalog["entries"][0]["url"] == f"{base}{PREFIX}server-card"
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/plugins/mcp",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/plugins/mcp",
        "/.well-known/openid-configuration",
        "/.well-known/ai-catalog.json",
        "/oauth/token/",
        "/mcp/",
    ):
        assert httpx.get(base + path).status_code == 404, path


def test_system_checks_pass(prefixed: OAuthServer) -> None:
    """The prefixed project as configured: none of E231-E234 (``check`` fails on any error)."""
    out = prefixed.live.manage("check")
    assert "django_mcp.E22" not in out, out


def test_tokens_and_sessions_under_the_prefix(prefixed: OAuthServer, served_cleanly: None) -> None:
    """Two users, two audiences: a token for another endpoint of the host is refused; a session stays its user's."""
    alice = prefixed.shell(MINT.format(user="alice", scope="mcp", resource=prefixed.url))
    bob = prefixed.shell(MINT.format(user="bob", scope="mcp", resource=prefixed.url))
    elsewhere = prefixed.shell(MINT.format(user="alice", scope="mcp", resource=prefixed.base + "/mcp/"))
    refused = mcp_post(prefixed, elsewhere, INIT)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
    init = mcp_post(prefixed, alice, INIT)
    assert init.status_code == 200
    sid = init.headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    assert mcp_post(prefixed, bob, call, **headers).status_code == 404  # not bob's session
    mine = mcp_post(prefixed, alice, call, **headers)
    assert mine.status_code == 200 and "alice authenticated=True" in mine.text
