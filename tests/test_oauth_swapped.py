"""Bearer tokens of swapped token models, verified by DOT's own machinery on a live server.

``tests.oauth_swapped.settings`` points ``OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL`` (and, as DOT
wants, the refresh and ID token models) at ``tests.swappedapp``: DOT's own ``AccessToken`` is
not installed, so anything reading ``oauth2_provider.models.AccessToken`` directly would fail.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.kit import OAuthServer, assert_invalid_token, mcp_post, start_oauth_server, stop_oauth_server

SWAPPED = "tests.swappedapp.models"
LIST = {
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
MODERN = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}


@pytest.fixture(scope="module")
def swapped_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    server = start_oauth_server(tmp_path_factory.mktemp("oauth-swapped"), settings="tests.oauth_swapped.settings")
    yield server
    stop_oauth_server(server)


@pytest.fixture
def swapped_log(swapped_server: OAuthServer) -> Iterator[Path]:
    """The server's log; the test fails if the server answered 500 or logged a traceback meanwhile."""
    log = swapped_server.live.log
    start = log.stat().st_size
    yield log
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    assert " 500 " not in text and "Traceback" not in text, text


def mint(server: OAuthServer, user: str, scope: str) -> str:
    """``manage.py mcp_token`` on the swapped project: a token in the swapped table."""
    return server.live.manage("mcp_token", "--user", user, "--scope", scope, "--resource", server.url).strip()


def stored(server: OAuthServer, raw: str, update: str = "") -> str:
    """The swapped row of ``raw`` (looked up by DOT's checksum) as ``user scope``, after ``update``."""
    checksum = hashlib.sha256(raw.encode()).hexdigest()
    return server.shell(
        f"from datetime import timedelta\nfrom django.utils import timezone\nfrom {SWAPPED} import LibraryCardToken\n"
        f"rows = LibraryCardToken.objects.filter(token_checksum={checksum!r})\n{update}\n"
        "print(*[f'{t.user.username} {t.scope}' for t in rows], sep=';')"
    )


@asynccontextmanager
async def sdk_client(server: OAuthServer, raw: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {raw}"}, timeout=30) as http:
        async with Client(streamable_http_client(server.url, http_client=http), read_timeout_seconds=30) as client:
            yield client


def test_the_token_models_are_swapped(swapped_server: OAuthServer) -> None:
    labels = swapped_server.shell(
        "from django.apps import apps\n"
        "from oauth2_provider.models import get_access_token_model, get_refresh_token_model\n"
        "print(get_access_token_model()._meta.label, get_refresh_token_model()._meta.label,"
        " [m._meta.label for m in apps.get_app_config('oauth2_provider').get_models()])"
    )
    assert labels.startswith("swappedapp.LibraryCardToken swappedapp.LibraryCardRefreshToken"), labels
    assert "oauth2_provider.AccessToken" not in labels, labels


async def test_swapped_token_lists_tools(swapped_server: OAuthServer, swapped_log: Any) -> None:
    narrow, wide = mint(swapped_server, "alice", "mcp"), mint(swapped_server, "bob", "mcp secret:read")
    assert stored(swapped_server, narrow) == "alice mcp"
    assert stored(swapped_server, wide) == "bob mcp secret:read"
    # The official SDK (handshake era) with the bearer token: the scopes are the swapped row's.
    async with sdk_client(swapped_server, narrow) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names and "secret" not in names
    async with sdk_client(swapped_server, wide) as client:
        assert "secret" in {t.name for t in (await client.list_tools()).tools}
    # The stateless era: one request.
    r = mcp_post(swapped_server, wide, LIST, **MODERN)
    assert r.status_code == 200, r.text
    assert '"secret"' in r.text


def test_expired_and_unknown_tokens_are_refused(swapped_server: OAuthServer, swapped_log: Any) -> None:
    raw = mint(swapped_server, "alice", "mcp")
    assert mcp_post(swapped_server, raw, LIST, **MODERN).status_code == 200
    # Saved, as the admin saves it: the save is what tells every worker's token cache (an update() would not).
    expire = "for t in rows:\n    t.expires = timezone.now() - timedelta(minutes=1)\n    t.save()"
    assert stored(swapped_server, raw, expire) == "alice mcp"
    assert_invalid_token(mcp_post(swapped_server, raw, LIST, **MODERN))
    assert_invalid_token(mcp_post(swapped_server, secrets.token_urlsafe(30), LIST, **MODERN))
