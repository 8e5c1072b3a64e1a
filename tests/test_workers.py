"""Two daphne workers sharing PostgreSQL and Redis: everything that crosses a request crosses workers.

A session opened on worker A is served by worker B; a GET stream on A receives
what a POST on B produced; a client's answer to A's elicitation reaches A when it
is POSTed to B; a stream interrupted on A resumes on B; ending a session on B is
seen by A at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.raw import ACCEPT, Raw
from tests.support.servers import LiveServer, server_env, start_server
from tests.support.sse import SSEReader, first_event_then_drop

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.own_config]


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, LiveServer]]:
    tmp = tmp_path_factory.mktemp("workers")
    env = server_env(tmp, db="postgres", layer="redis")
    a = start_server(env, tmp / "a.log")
    b = start_server(env, tmp / "b.log", migrate=False)
    yield a, b
    for server in (a, b):
        server.stop()
    for log in (tmp / "a.log", tmp / "b.log"):
        assert "Traceback" not in Path(log).read_text(errors="replace")


def test_session_and_notifications_cross_workers(workers: tuple[LiveServer, LiveServer]) -> None:
    a, b = Raw(workers[0]), Raw(workers[1])
    sid = a.initialize()
    h = a.session_headers(sid)
    # The session is usable on B straight away (loaded from PostgreSQL once).
    assert b.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, h).json()["result"] == {}
    assert (
        b.post(
            {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "test://static/hello"}}, h
        ).status_code
        == 200
    )
    stream = SSEReader("GET", a.url, {**h, "accept": "text/event-stream"})
    try:
        time.sleep(0.5)
        r = b.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "touch", "arguments": {}}}, h)
        assert r.status_code == 200
        got = stream.messages_until(lambda m: m.get("method") == "notifications/resources/updated", timeout=10)
        assert [m["method"] for m in got] == ["notifications/tools/list_changed", "notifications/resources/updated"]
    finally:
        stream.close()


def test_elicitation_answer_posted_to_other_worker(workers: tuple[LiveServer, LiveServer]) -> None:
    a, b = Raw(workers[0]), Raw(workers[1])
    sid = a.initialize(capabilities={"elicitation": {}})
    h = a.session_headers(sid)
    call = {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}}
    stream = SSEReader("POST", a.url, {**h, "accept": ACCEPT, "content-type": "application/json"}, call)
    try:
        _eid, request = stream.next(timeout=10) or (None, None)
        assert request["method"] == "elicitation/create"
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Lin"}}}
        assert b.post(answer, h).status_code == 202
        got = stream.messages_until(lambda m: m.get("id") == 10, timeout=10)
        assert got[-1]["result"]["content"][0]["text"] == "Hello, Lin!"
    finally:
        stream.close()


def test_resume_on_other_worker(workers: tuple[LiveServer, LiveServer]) -> None:
    a, b = Raw(workers[0]), Raw(workers[1])
    sid = a.initialize()
    h = a.session_headers(sid)
    body = {
        "jsonrpc": "2.0",
        "id": 20,
        "method": "tools/call",
        "params": {"name": "slow_count", "arguments": {"steps": 4, "delay": 0.5}, "_meta": {"progressToken": 1}},
    }
    first_id = first_event_then_drop(a.url, body, {**h, "accept": ACCEPT})
    resumed = SSEReader("GET", b.url, {**h, "accept": "text/event-stream", "last-event-id": first_id})
    try:
        got = resumed.messages_until(lambda m: m.get("id") == 20, timeout=15)
        progress = [m["params"]["progress"] for m in got if m.get("method") == "notifications/progress"]
        assert progress == [2, 3, 4]
        assert got[-1]["result"]["content"][0]["text"] == "slowly counted to 4"
    finally:
        resumed.close()


def test_session_end_is_seen_by_every_worker(workers: tuple[LiveServer, LiveServer]) -> None:
    a, b = Raw(workers[0]), Raw(workers[1])
    sid = a.initialize()
    h = a.session_headers(sid)
    ping: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert a.post(ping, h).status_code == 200 and b.post(ping, h).status_code == 200
    assert b.http.delete(b.url, headers=h).status_code == 200
    time.sleep(0.3)
    assert a.post(ping, h).status_code == 404  # A's cached copy was dropped over the channel layer


def test_ending_sessions_from_sync_code_joins_no_group(workers: tuple[LiveServer, LiveServer]) -> None:
    """The admin action and management commands publish through ``async_to_sync``: straight to the
    layer, without a throwaway hub channel that would join the broadcast group and never be read."""
    import redis as redis_py

    a, b = Raw(workers[0]), Raw(workers[1])
    sid = a.initialize()
    h = a.session_headers(sid)
    ping: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert b.post(ping, h).status_code == 200  # B caches the session
    client = redis_py.Redis.from_url("redis://127.0.0.1:6379/0")
    group = os.environ.get("MCP_REDIS_PREFIX", "asgi") + ":group:mcp.all"  # this run's servers only
    before = client.zcard(group)
    workers[0].manage(
        "shell", "-c", f"from django_mcp.state.sessions import end_sessions_sync; end_sessions_sync([{sid!r}])"
    )
    for _ in range(2):
        workers[0].manage(
            "shell", "-c", "from django_mcp.state.sessions import end_sessions_sync; end_sessions_sync(['x'])"
        )
    assert client.zcard(group) == before
    time.sleep(0.3)
    assert b.post(ping, h).status_code == 404  # the end still reached B's cache over the layer
