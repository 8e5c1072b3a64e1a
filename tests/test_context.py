"""Context features beyond the basics: gathered questions and SSE polling (SEP-1699)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.raw import ACCEPT, META, Raw
from tests.support.sdk import Recorder
from tests.support.servers import LiveServer
from tests.support.sse import SSEReader


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_gather_asks_together(mcp_server: LiveServer, mode: str) -> None:
    rec = Recorder()

    async def elicit(ctx: Any, params: Any) -> Any:
        import mcp_types as types

        rec.elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"colour": "teal"})

    rec.elicit = elicit  # type: ignore[method-assign]
    async with rec.client(mcp_server.url, mode) as client:
        result = await client.call_tool("survey", {})
        assert result.structured_content == {"colour": "teal", "roots": "file:///srv/project"}
    assert rec.elicited == ["Favourite colour?"]


def test_gather_is_one_round_trip_in_stateless_era(mcp_server: LiveServer) -> None:
    raw = Raw(mcp_server)
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "roots": {}}}
    h = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "survey"}
    params = {"name": "survey", "arguments": {}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    first = raw.post(body, h).json()["result"]
    assert first["resultType"] == "input_required"
    assert set(first["inputRequests"]) == {"colour", "roots-1"}
    assert first["inputRequests"]["roots-1"]["method"] == "roots/list"


def test_close_stream_then_poll_with_last_event_id(mcp_server: LiveServer) -> None:
    raw = Raw(mcp_server)
    sid = raw.initialize()
    h = raw.session_headers(sid)
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "polled", "arguments": {}, "_meta": {"progressToken": "t"}},
    }
    r = httpx.post(raw.url, json=body, headers={**h, "accept": ACCEPT}, timeout=10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert "retry:" in r.text
    ids = [line[3:].strip() for line in r.text.splitlines() if line.startswith("id:")]
    assert '"id":3' not in r.text.replace(" ", "")  # the result was not on the closed stream
    resumed = SSEReader("GET", raw.url, {**h, "accept": "text/event-stream", "last-event-id": ids[-1]})
    try:
        got = resumed.messages_until(lambda m: m.get("id") == 3)
        assert got[0]["params"]["progress"] == 2
        assert got[-1]["result"]["content"][0]["text"] == "polled result"
    finally:
        resumed.close()
