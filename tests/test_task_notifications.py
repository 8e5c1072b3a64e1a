"""Task status notifications, from a real ``db_worker`` process to a stream held on a real daphne.

The worker that runs a task is another process than the web worker holding the
client's stream, so its status changes travel over the channel layer: these tests
run on Redis (the in-memory layer crosses no process; with it a client polls).

- 2026-07-28: ``subscriptions/listen`` with ``notifications.taskIds`` (tasks extension
  declared) gets ``notifications/tasks`` with the ``DetailedTask``, the result inlined
  once completed; without the extension the listen request is -32021; an id the caller
  does not own is left out of the acknowledgement.
- 2025-11-25: the creating session's GET stream gets ``notifications/tasks/status``.

The conformance suite's ``tasks-status-notifications`` checks nothing yet (it skips);
this file is what proves the notifications.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import LiveServer, TaskWorker, need_service, server_env, start_server, start_task_worker
from tests.support.sse import SSEReader
from tests.support.taskwire import EXTENSION, headers, meta

INFO = {"name": "raw", "version": "1"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, TaskWorker]]:
    need_service("Redis", 6379)
    tmp: Path = tmp_path_factory.mktemp("task-notify")
    env = server_env(tmp, layer="redis", settings="tests.conformance.settings")
    server = start_server(env, tmp / "daphne.log", app="tests.conformance.asgi:application")
    worker = start_task_worker(env, tmp / "worker.log")
    yield server, worker
    worker.stop()
    server.stop()
    for log in (server.log, worker.log):
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text()


def call(server: LiveServer, seconds: float, extension: bool = True) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "slow_compute", "arguments": {"seconds": seconds, "label": "n"}, "_meta": meta(extension)},
    }
    r = httpx.post(server.url, json=body, headers=headers("tools/call", "slow_compute"), timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def response(r: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response in a JSON or an SSE body."""
    assert r.status_code == 200, r.text
    if not r.headers["content-type"].startswith("text/event-stream"):
        return r.json()  # type: ignore[no-any-return]
    for line in r.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if "id" in message and ("result" in message or "error" in message):
                return message  # type: ignore[no-any-return]
    raise AssertionError(r.text)


def listen(server: LiveServer, task_ids: list[str], extension: bool = True) -> SSEReader:
    body = {
        "jsonrpc": "2.0",
        "id": "sub",
        "method": "subscriptions/listen",
        "params": {"_meta": meta(extension), "notifications": {"taskIds": task_ids}},
    }
    return SSEReader("POST", server.url, headers("subscriptions/listen"), body)


def test_listen_stream_gets_the_task_to_its_end(live: tuple[LiveServer, TaskWorker]) -> None:
    server, _ = live
    task = call(server, 1.5)["result"]
    assert task["resultType"] == "task" and task["status"] == "working"
    stream = listen(server, [task["taskId"], "not-a-task-of-mine"])
    try:
        assert stream.status == 200
        ack = stream.next()
        assert ack is not None and ack[1]["method"] == "notifications/subscriptions/acknowledged"
        assert ack[1]["params"]["notifications"]["taskIds"] == [task["taskId"]]  # the unknown id is dropped
        got = stream.messages_until(lambda m: m.get("params", {}).get("status") == "completed", timeout=15)
        final = got[-1]
        assert final["method"] == "notifications/tasks"
        params = final["params"]
        assert params["taskId"] == task["taskId"]
        assert params["result"]["content"][0]["text"] == "computed n after 1.5s"
        assert params["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"
        assert "pollIntervalMs" not in params and isinstance(params["ttlMs"], int)
    finally:
        stream.close()


def test_listen_stream_hears_a_cancellation(live: tuple[LiveServer, TaskWorker]) -> None:
    server, _ = live
    task = call(server, 30)["result"]
    stream = listen(server, [task["taskId"]])
    try:
        stream.next()  # the acknowledgement
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tasks/cancel",
            "params": {"taskId": task["taskId"], "_meta": meta()},
        }
        r = httpx.post(server.url, json=body, headers=headers("tasks/cancel", task["taskId"]), timeout=10)
        assert r.json()["result"]["resultType"] == "complete"
        got = stream.messages_until(lambda m: m.get("params", {}).get("status") == "cancelled", timeout=10)
        assert got[-1]["params"]["taskId"] == task["taskId"]
    finally:
        stream.close()


def test_task_ids_without_the_extension_are_refused(live: tuple[LiveServer, TaskWorker]) -> None:
    server, _ = live
    task = call(server, 0)["result"]
    body = {
        "jsonrpc": "2.0",
        "id": "sub",
        "method": "subscriptions/listen",
        "params": {"_meta": meta(extension=False), "notifications": {"taskIds": [task["taskId"]]}},
    }
    r = httpx.post(server.url, json=body, headers=headers("subscriptions/listen"), timeout=10)
    error = r.json()["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


def test_handshake_session_gets_tasks_status_on_its_get_stream(live: tuple[LiveServer, TaskWorker]) -> None:
    server, _ = live
    h = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": INFO},
    }
    with httpx.Client(timeout=10) as http:
        r = http.post(server.url, json=init, headers=h)
        assert r.json()["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
        session = {**h, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        http.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        stream = SSEReader("GET", server.url, {**session, "accept": "text/event-stream"})
        try:
            assert stream.status == 200
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "slow_compute", "arguments": {"seconds": 1}, "task": {"ttl": 60000}},
            }
            task = response(http.post(server.url, json=body, headers=session))["result"]["task"]
            assert task["status"] == "working" and task["ttl"] == 60000
            got = stream.messages_until(lambda m: m.get("params", {}).get("status") == "completed", timeout=15)
            final = got[-1]
            assert final["method"] == "notifications/tasks/status"
            assert final["params"]["taskId"] == task["taskId"]
            assert "result" not in final["params"]  # 2025-11-25: the result comes from tasks/result
        finally:
            stream.close()
