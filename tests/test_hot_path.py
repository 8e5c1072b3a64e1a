"""The hot path: a known session costs no database query per request."""

from __future__ import annotations

from typing import Any

from tests.conftest import LiveServer
from tests.test_bad_input import Raw


def queries(raw: Raw, headers: dict[str, str]) -> int:
    r = raw.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "queries"}}, headers)
    return int(r.json()["result"]["structuredContent"]["result"])


def test_known_session_costs_no_query(mcp_server: LiveServer, server_log: Any) -> None:
    raw = Raw(mcp_server)
    sid = raw.initialize()
    h = raw.session_headers(sid)
    before = queries(raw, h)
    for i in range(30):
        assert raw.post({"jsonrpc": "2.0", "id": i, "method": "ping"}, h).status_code == 200
        r = raw.post(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}},
            h,
        )
        assert r.json()["result"]["content"][0]["text"] == "x"
    after = queries(raw, h)
    assert after - before == 1  # the counter's own increment: no SQL ran for 60 requests
    # The counter does see SQL: a new session is one INSERT (and an unknown id one lookup).
    raw.initialize()
    assert queries(raw, h) - after >= 2


def test_stateless_requests_cost_no_query(mcp_server: LiveServer) -> None:
    raw = Raw(mcp_server)
    sid = raw.initialize()
    h = raw.session_headers(sid)
    before = queries(raw, h)
    for i in range(20):
        assert raw.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}}, rid=i).status_code == 200
    assert queries(raw, h) - before == 1
