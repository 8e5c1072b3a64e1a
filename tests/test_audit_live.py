"""The audit log in real processes: daphne's background writer, its drain at SIGTERM, and a task run
in a real ``db_worker`` with the worker's log lines naming the tool and the MCP task id.

Callers are the official SDK client (Streamable HTTP, as alice and bob through ``tests.settings.asgi_users``)
and raw 2026-07-28 HTTP for tasks. Records are read back from the server's own database with
``manage.py shell``; nothing here flushes by hand: the processes' writers do.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.seeds import USERS_SETUP
from tests.support.servers import LiveServer, drop_pg_database, server_env, start_server, start_task_worker
from tests.support.task_client import Modern

READ = """
import json
from django_mcp.models import MCPCallRecord
rows = MCPCallRecord.objects.order_by("id").values(
    "method", "target", "username", "oauth_client", "session", "revision", "transport", "outcome",
    "error_code", "task_id", "arguments", "duration_ms", "request_bytes", "response_bytes")
print(json.dumps(list(rows)))
"""


def records(live: LiveServer) -> list[dict[str, Any]]:
    return list(json.loads(live.manage("shell", "-c", READ).strip().splitlines()[-1]))


def wait_for_records(live: LiveServer, count: int, timeout: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = records(live)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def start(tmp: Path, **env: str) -> LiveServer:
    live = start_server(server_env(tmp, **env), tmp / "daphne.log", app="tests.settings.asgi_users:application")
    live.manage("shell", "-c", USERS_SETUP)
    return live


def stop(live: LiveServer) -> None:
    live.stop()
    if live.env["MCP_TEST_DB"] == "postgres":
        drop_pg_database(live.env["MCP_PG_NAME"])


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    server = start(tmp_path, MCP_CALL_LOG="1")
    yield server
    stop(server)


async def sdk_calls(url: str, user: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """Calls through the official SDK client as ``user``; the session id the server gave it."""
    sessions: list[str] = []

    async def remember(response: Any) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid:
            sessions.append(sid)

    http = httpx2.AsyncClient(headers={"X-Test-User": user}, timeout=30, event_hooks={"response": [remember]})
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert isinstance(result, types.CallToolResult)
    return sessions[0]


async def test_daphne_writes_the_records_itself_and_logs_each_call(live: LiveServer) -> None:
    alice_sid = await sdk_calls(
        live.url, "alice", [("add", {"a": 1, "b": 2}), ("echo", {"text": "hi"}), ("fail", {"kind": "tool"})]
    )
    bob_sid = await sdk_calls(live.url, "bob", [("echo", {"text": "secret", "password": "hunter2"})])
    found = wait_for_records(live, 4)  # written by the server's writer thread within its interval
    by_user = {(r["username"], r["target"]): r for r in found}
    assert len(found) == 4, found
    add = by_user[("alice", "add")]
    assert (add["transport"], add["outcome"], add["session"]) == ("http", "ok", alice_sid[:8])
    assert add["arguments"] == {"a": 1, "b": 2} and add["request_bytes"] > 0 and add["response_bytes"] > 0
    assert by_user[("alice", "fail")]["outcome"] == "tool_error"
    bobs = by_user[("bob", "echo")]
    assert bobs["session"] == bob_sid[:8] and bobs["arguments"] == {
        "text": "secret",
        "password": "********************",
    }
    assert bobs["outcome"] == "tool_error"  # an unknown argument; still recorded, still masked
    log = live.log.read_text()
    assert "tools/call add ok " in log and f"session={alice_sid[:8]} transport=http" in log
    assert "tools/call fail tool_error " in log
    assert "hunter2" not in log


async def test_sigterm_writes_what_is_still_buffered(tmp_path: Path) -> None:
    """A writer that would wait ten minutes: the records reach the database only because of the exit drain."""
    live = start(tmp_path, MCP_AUDIT_FLUSH_INTERVAL="600")
    try:
        await sdk_calls(live.url, "alice", [("add", {"a": n, "b": 0}) for n in range(5)])
        time.sleep(1)
        assert records(live) == []  # still in the server's buffer
        live.process.send_signal(signal.SIGTERM)
        live.process.wait(30)
        found = records(live)
        assert [r["arguments"]["a"] for r in found] == [0, 1, 2, 3, 4]
        assert {r["username"] for r in found} == {"alice"}
    finally:
        stop(live)


def test_a_task_run_in_db_worker_is_recorded_and_logged_with_its_tool_and_id(tmp_path: Path) -> None:
    live = start(tmp_path)
    worker = start_task_worker(live.env, tmp_path / "worker.log")
    try:
        client = Modern(live.url, headers={"X-Test-User": "bob"})
        task_id = client.start("task_sleep", seconds=0.2)
        assert client.wait(task_id)["status"] == "completed"
        found = wait_for_records(live, 2)
        made = [r for r in found if r["transport"] == "http"]
        ran = [r for r in found if r["transport"] == "task"]
        assert [(r["outcome"], r["task_id"], r["username"]) for r in made] == [("task", task_id, "bob")]
        assert [(r["outcome"], r["task_id"], r["target"], r["username"]) for r in ran] == [
            ("ok", task_id, "task_sleep", "bob")
        ]
        deadline = time.monotonic() + 15
        while "completed after" not in worker.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        log = worker.log.read_text()
        assert f"MCP task {task_id}: tool task_sleep starts (run 1, Tasks framework id " in log, log
        assert f"MCP task {task_id}: tool task_sleep completed after " in log, log
    finally:
        worker.stop()
        stop(live)


MODERN = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


@pytest.mark.own_config  # it names each server's database itself (both); the layer plays no part
@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_every_call_is_recorded_whatever_its_numbers(tmp_path: Path, db: str) -> None:
    """1e999 is valid JSON that no float holds (infinity): the call runs and its record is kept, the number
    stored as text. NaN and Infinity are not JSON at all: a parse error, as for any other non-JSON body."""
    if db == "postgres":
        from tests.support.servers import need_service

        need_service("PostgreSQL", 5432)
    live = start(tmp_path, db=db)
    try:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "x-test-user": "alice", **MODERN, "mcp-name": "echo"}  # fmt: skip
        body = (
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", '
            '"arguments": {"text": "big", "huge": 1e999, "small": -1e999}, "_meta": ' + json.dumps(MODERN_META) + "}}"
        )
        r = httpx2.post(live.url, content=body, headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        for literal in ("NaN", "Infinity", "-Infinity"):
            bad = body.replace("1e999", literal, 1)
            r = httpx2.post(live.url, content=bad, headers=headers, timeout=30)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32700, (literal, r.text)
        (found,) = wait_for_records(live, 1)
        assert found["target"] == "echo" and found["arguments"] == {
            "text": "big", "huge": "Infinity", "small": "-Infinity",
        }, found  # fmt: skip
    finally:
        stop(live)
