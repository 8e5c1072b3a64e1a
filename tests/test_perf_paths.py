"""The shortcuts of the hot path keep their promises: cancellation, delayed watchers, remembered verdicts."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.test import override_settings

from django_mcp.runtime.timers import Later
from django_mcp.transports.security import host_allowed
from tests.support.raw import ACCEPT, META, Raw
from tests.support.servers import LiveServer


@pytest.fixture
def raw(mcp_server: LiveServer, server_log: Any) -> Iterator[Raw]:
    """A hand-driven client; the live server's log must show no traceback (``server_log``)."""
    client = Raw(mcp_server)
    yield client
    client.http.close()


def test_json_request_cancelled_mid_call_then_session_serves(raw: Raw) -> None:
    """No progress token: the reply would be JSON. Cancelled, it is an empty 202, and the session carries on."""
    sid = raw.initialize()
    h = raw.session_headers(sid)
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "sleepy", "arguments": {"seconds": 20}},
    }
    result: dict[str, Any] = {}

    def call() -> None:
        with httpx.Client(timeout=30) as c:
            resp = c.post(raw.url, json=body, headers={"accept": ACCEPT, **h})
            result["status"], result["text"] = resp.status_code, resp.text

    t = threading.Thread(target=call)
    started = time.monotonic()
    t.start()
    time.sleep(0.8)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    assert raw.post(cancel, h).status_code == 202
    t.join(15)
    assert not t.is_alive() and time.monotonic() - started < 10
    assert result == {"status": 202, "text": ""}
    for i in range(3):  # the consumer that was cancelled left nothing behind
        r = raw.post(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}},
            h,
        )
        assert r.json()["result"]["content"] == [{"type": "text", "text": "x"}]


def test_stateless_call_abandoned_by_its_client(raw: Raw, mcp_server: LiveServer) -> None:
    """The client hangs up during a 2026-07-28 call: the call is cancelled quietly (no traceback, no 500)."""
    params = {"name": "sleepy", "arguments": {"seconds": 20}, "_meta": META}
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}).encode()
    request = (
        f"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1:{mcp_server.port}\r\nContent-Type: application/json\r\n"
        f"Accept: {ACCEPT}\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: sleepy\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection(("127.0.0.1", mcp_server.port), timeout=10) as s:
        s.sendall(request)
        time.sleep(0.5)  # past the 10 ms after which the disconnect watcher starts
    time.sleep(0.3)
    r = raw.modern("tools/call", {"name": "echo", "arguments": {"text": "still here"}})
    assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "still here"


def test_later_runs_only_what_outlives_the_delay() -> None:
    # Margins of 125 ms either side of each deadline: a loaded CI machine oversleeps by tens of ms.
    later = Later(0.5)

    async def scenario() -> list[str]:
        ran: list[str] = []
        for name in ("fast", "slow", "slower"):
            later.add(name, lambda name=name: ran.append(name))  # type: ignore[misc]
        later.discard("fast")
        await asyncio.sleep(0.25)
        assert ran == []  # nothing before the delay
        later.add("late", lambda: ran.append("late"))
        await asyncio.sleep(0.375)
        assert ran == ["slow", "slower"]  # due ones ran; "late" (added 250 ms later) still waits
        await asyncio.sleep(0.5)
        later.add("again", lambda: ran.append("again"))
        later.discard("again")
        await asyncio.sleep(0.6)
        later.add("leftover", lambda: ran.append("leftover"))  # its loop ends before it is due
        return ran

    assert asyncio.run(scenario()) == ["slow", "slower", "late"]
    # On a new event loop the old loop's pending work is dropped, and the new work runs as before.
    assert asyncio.run(scenario()) == ["slow", "slower", "late"]


def test_host_verdicts_follow_settings() -> None:
    assert host_allowed("127.0.0.1:8000")
    with override_settings(ALLOWED_HOSTS=["example.com"]):
        assert not host_allowed("127.0.0.1:8000")
        assert host_allowed("example.com")
    assert host_allowed("127.0.0.1:8000") and not host_allowed("example.com")
