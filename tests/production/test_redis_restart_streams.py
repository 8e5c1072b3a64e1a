"""Redis loses everything under open streams: they keep receiving, never open and silent.

Two real daphne workers share the test's own Redis (``--save ''``). Worker A holds, from
before the loss, a session's GET stream and a 2026-07-28 ``subscriptions/listen`` stream, and
both have already carried a dozen broadcasts. Then Redis loses every key, in two ways:

* ``restart``: stopped and started again on its port (a replaced instance: the connections break);
* ``flush``: ``FLUSHALL`` with every connection left open (a failover to an empty node behind a
  proxy; nothing tells the workers).

From the moment Redis is back, a tool on worker B announces a change every 0.25 s for 4 s.
Every announcement made from 2 s after Redis was back must reach both streams on A: the GET
stream by its live feed or its catch-up from the event store (its broadcast counter restarted
too), the listen stream live. And the session's own traffic crosses again: a tool on worker A
waiting for an elicitation gets the answer the client POSTs to worker B.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.production.harness import ACCEPT, Client, Deployment, ResumingStream
from tests.support.servers import log_problem
from tests.support.sse import SSEReader

pytestmark = [pytest.mark.production, pytest.mark.postgres, pytest.mark.redis]

#: The issue's bound: streams live again within this many seconds of Redis being back.
BOUND = 2.0


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    d = Deployment(tmp_path).start()
    yield d
    d.stop()
    logs = d.logs()
    assert not (bad := log_problem(logs, "Traceback", '" 500 ')), bad


class ListenStream:
    """A 2026-07-28 ``subscriptions/listen`` stream on one worker: list changes and some resources."""

    def __init__(self, url: str, uris: list[str]) -> None:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "ops", "version": "1"},
        }
        body = {
            "jsonrpc": "2.0",
            "id": "sub",
            "method": "subscriptions/listen",
            "params": {"_meta": meta, "notifications": {"toolsListChanged": True, "resourceSubscriptions": uris}},
        }
        headers = {
            "accept": ACCEPT,
            "content-type": "application/json",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "subscriptions/listen",
        }
        self.arrivals: dict[str, float] = {}
        self.ended: float | None = None
        self.reader = SSEReader("POST", url, headers, body)
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        while True:
            try:
                item = self.reader.next(120)
            except Exception:  # noqa: BLE001 - queue.Empty: nothing for two minutes, the test is over
                return
            if item is None:
                self.ended = time.monotonic()
                return
            message = item[1]
            if isinstance(message, dict) and message.get("method") == "notifications/resources/updated":
                self.arrivals.setdefault(message["params"]["uri"], time.monotonic())

    def close(self) -> None:
        self.reader.close()


def _updated(stream: ResumingStream) -> set[str]:
    return {m["params"]["uri"] for m in stream.snapshot() if m.get("method") == "notifications/resources/updated"}


def _elicit_across(d: Deployment, sid: str) -> str:
    """``ask_name`` on worker A; the client's answer POSTed to worker B; A's result."""
    headers = {"content-type": "application/json", "accept": ACCEPT}
    headers |= {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
    body = {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}}
    call = SSEReader("POST", d.worker_url(0), headers, body)
    try:
        request = call.messages_until(lambda m: m.get("method") == "elicitation/create", timeout=10)[-1]
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
        r = httpx.post(d.worker_url(1), json=answer, headers=headers, timeout=10)
        assert r.status_code == 202, r.text
        final = call.messages_until(lambda m: m.get("id") == 41, timeout=10)[-1]
        return str(final["result"]["content"][0]["text"])
    finally:
        call.close()


@pytest.mark.parametrize("loss", ["restart", "flush"])
def test_open_streams_keep_receiving_after_redis_loses_everything(deployment: Deployment, loss: str) -> None:
    d = deployment
    assert d.redis is not None
    c = Client(d.worker_url(1))  # requests go to worker B; the streams live on worker A
    r = c.post(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "f", "version": "1"},
            },
        }
    )
    c.sid = r.headers["mcp-session-id"]
    c.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    uris = [f"test://items/x{i}" for i in range(40)]
    for uri in uris:
        c.subscribe(uri)
    get = ResumingStream(d.worker_url(0), c.headers())
    assert get.opened.wait(10)
    listen = ListenStream(d.worker_url(0), uris)
    # Before the loss both streams are live, and the broadcast counter has gone past what the
    # first touches after it will be numbered, were it to start again from 1.
    before = 12
    for uri in uris[:before]:
        assert c.call("touch", uri=uri).status_code == 200
    assert get.wait_for(lambda m: m.get("params", {}).get("uri") == uris[before - 1], 10), get.snapshot()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and uris[before - 1] not in listen.arrivals:
        time.sleep(0.05)
    assert uris[before - 1] in listen.arrivals, listen.arrivals
    connections = get.connections

    if loss == "restart":
        d.redis.stop()
        d.redis.start()
    else:
        assert d.redis_cli("flushall").strip() == "OK"
    back = time.monotonic()

    sent: dict[str, float] = {}
    k = before
    while time.monotonic() - back < 4.0:
        r = c.call("touch", uri=uris[k])
        assert r.status_code == 200, r.text
        sent[uris[k]] = time.monotonic()
        k += 1
        time.sleep(0.25)
    deadline = time.monotonic() + BOUND + 1
    while time.monotonic() < deadline and not (set(sent) <= _updated(get) and set(sent) <= set(listen.arrivals)):
        time.sleep(0.05)
    got_get = _updated(get)
    due = {u: t for u, t in sent.items() if t >= back + BOUND}
    missed_get = sorted(set(due) - got_get)
    missed_listen = sorted(set(due) - set(listen.arrivals))
    late_listen = {u: round(listen.arrivals[u] - t, 2) for u, t in due.items() if u in listen.arrivals}
    first_get = min((round(t - back, 2) for u, t in sent.items() if u in got_get), default=None)
    first_listen = min((round(t - back, 2) for u, t in sent.items() if u in listen.arrivals), default=None)
    print(
        f"\n[redis {loss}] {len(sent)} touches from +0 to +4 s after Redis was back; GET stream got "
        f"{len(set(sent) & got_get)} (first one sent at +{first_get}s), reconnects {get.connections - connections}; "
        f"listen stream got {len(set(sent) & set(listen.arrivals))} (first one sent at +{first_listen}s), "
        f"the slowest of those sent after +{BOUND}s arrived {max(late_listen.values(), default=None)}s after it"
    )
    assert missed_get == [], f"the GET stream is open and silent: missed {missed_get}"
    assert missed_listen == [], f"the listen stream is open and silent: missed {missed_listen}"
    assert listen.ended is None and get.connections == connections, "the streams stayed open"
    assert max(late_listen.values()) < 1.0, late_listen

    # The session's own group crosses workers again: the answer POSTed to B reaches the tool on A.
    assert _elicit_across(d, c.sid) == "Hello, Ada!"
    get.close()
    listen.close()
