"""A separate authorization server: the MCP endpoint verifies tokens by RFC 7662 introspection (DOT's own mode)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oauth.kit import (  # noqa: F401  (fixtures)
    CONFIDENTIAL_APP,
    INIT,
    Browser,
    OAuthServer,
    assert_invalid_token,
    code_flow,
    mcp_post,
    oauth_server,
    start_oauth_server,
    stop_oauth_server,
)

#: own_config: introspection asks another server over HTTP, the same on any database and layer (pg-redis skips it).
pytestmark = pytest.mark.own_config


@pytest.fixture(scope="module")
def resource_server(oauth_server: OAuthServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    """A second project whose tokens come from ``oauth_server``, checked at its introspection endpoint."""
    client_id, secret = oauth_server.shell(CONFIDENTIAL_APP).split()[-2:]
    rs = start_oauth_server(
        tmp_path_factory.mktemp("rs"),
        MCP_OAUTH_INTROSPECT=oauth_server.base + "/oauth/introspect/",
        MCP_OAUTH_INTROSPECT_ID=client_id,
        MCP_OAUTH_INTROSPECT_SECRET=secret,
    )
    yield rs
    stop_oauth_server(rs)


async def test_token_from_another_authorization_server(oauth_server: OAuthServer, resource_server: OAuthServer) -> None:
    alice = Browser(oauth_server.base)
    await alice.login("alice")
    try:
        for_rs = await code_flow(oauth_server, alice, resource=resource_server.url)
        for_as = await code_flow(oauth_server, alice)
    finally:
        await alice.close()
    init = mcp_post(resource_server, for_rs["access_token"], INIT)
    assert init.status_code == 200, init.text
    sid = init.headers["mcp-session-id"]
    call: dict[str, Any] = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}}
    r = mcp_post(
        resource_server, for_rs["access_token"], call, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    )
    assert r.json()["result"]["content"][0]["text"] == "alice authenticated=True"
    # The introspected audience is checked too: a token issued for the authorization server's own endpoint fails.
    assert_invalid_token(mcp_post(resource_server, for_as["access_token"], INIT))
    # And a token the authorization server never issued.
    assert_invalid_token(mcp_post(resource_server, "forged-token-value", INIT))
