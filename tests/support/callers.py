"""The official SDK client as a given user of ``users_server`` (TEST ONLY ``X-Test-User`` header)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

#: Both eras: the handshake era (legacy mode, 2025-11-25) and the stateless 2026-07-28 era.
MODES = ["legacy", "2026-07-28"]


def client(url: str, mode: str, user: str | None = None, **extra: Any) -> Client:
    http = create_mcp_http_client(headers={"X-Test-User": user} if user else None)
    kwargs: dict[str, Any] = {"mode": mode, "read_timeout_seconds": 30}
    if mode != "legacy":
        kwargs["cache"] = None
    kwargs.update(extra)
    return Client(streamable_http_client(url, http_client=http), **kwargs)


@asynccontextmanager
async def bearer_client(url: str, token: str, mode: str = "legacy") -> AsyncIterator[Client]:
    """The official SDK client, connected to ``url`` with ``token`` as its bearer token."""
    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=30) as c:
        yield c


def unique(prefix: str) -> str:
    """A name no other test (or earlier run on a kept PostgreSQL database) used."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def all_resources(c: Client) -> list[types.Resource]:
    out: list[types.Resource] = []
    cursor: str | None = None
    while True:
        page = await c.list_resources(cursor=cursor)
        out.extend(page.resources)
        cursor = page.next_cursor
        if cursor is None:
            return out


async def read_error(c: Client, uri: str) -> MCPError:
    with pytest.raises(MCPError) as info:
        await c.read_resource(uri)
    return info.value


#: What a host that renders MCP Apps declares (the UI extension, its page type).
UI_EXTENSION = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}


@asynccontextmanager
async def ui_session(url: str, token: str) -> AsyncIterator[Any]:
    """The official SDK's ``ClientSession`` as an apps host: the UI extension declared, ``token`` as its bearer
    token, initialized (the handshake era)."""
    from mcp.client.session import ClientSession

    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with (
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, read_timeout_seconds=30, extensions=UI_EXTENSION) as session,
    ):
        await session.initialize()
        yield session
