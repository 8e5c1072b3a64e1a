"""Idle sessions expire and unanswered server->client requests time out (a server with tight limits)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.support.raw import ACCEPT, Raw, sse_messages
from tests.support.servers import LiveServer, server_env, start_server


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("tight")
    env = server_env(
        tmp,
        MCP_SESSION_IDLE_TIMEOUT="3",  # a margin for last_seen's batched writes on a loaded machine
        MCP_SESSION_REVALIDATE="0.2",
        MCP_CLIENT_REQUEST_TIMEOUT="1",
    )
    server = start_server(env, tmp / "daphne.log")
    yield server
    server.stop()


def test_idle_session_expires(tight: LiveServer) -> None:
    raw = Raw(tight)
    sid = raw.initialize()
    h = raw.session_headers(sid)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    started = time.monotonic()
    while time.monotonic() - started < 4.5:  # activity keeps it alive past the idle timeout
        time.sleep(0.5)
        assert raw.post(ping, h).status_code == 200
    time.sleep(4.5)
    assert raw.post(ping, h).status_code == 404


def test_unanswered_elicitation_times_out(tight: LiveServer) -> None:
    raw = Raw(tight)
    sid = raw.initialize(capabilities={"elicitation": {}})
    h = raw.session_headers(sid)
    started = time.monotonic()
    r = raw.http.post(
        raw.url,
        json={"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}},
        headers={**h, "accept": ACCEPT, "content-type": "application/json"},
    )
    elapsed = time.monotonic() - started
    messages = sse_messages(r.text)
    assert messages[0]["method"] == "elicitation/create"
    assert messages[1]["method"] == "notifications/cancelled"  # the server withdraws its request
    assert messages[1]["params"]["requestId"] == messages[0]["id"]
    final = messages[-1]
    assert final["id"] == 5 and final["error"]["code"] == -32001
    assert 0.9 < elapsed < 10
