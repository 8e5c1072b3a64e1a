"""Limits against real processes: daphne, ``db_worker``, ``mcp_stdio``; SQLite or PostgreSQL, memory or Redis.

- The task flood: Alice sends twenty task calls at once; three (her cap) are queued, the others get 429
  with ``Retry-After`` and the JSON-RPC error -32029, through either of her OAuth clients, while Bob's
  task runs on the worker to its end. Then Alice goes past her request rate and is refused; Bob is not.
- Two daphne workers sharing Redis count one budget: alternate requests admit exactly the limit.
- stdio has no HTTP status: the refusal is the JSON-RPC error, with the delay in its data.
- A sync tool past ``TOOL_TIMEOUT`` under daphne: the official SDK client gets the timed-out tool error at
  the deadline, and with one sync thread the next sync call waits until the stuck thread returns.

Run with ``MCP_TEST_DB=postgres MCP_TEST_LAYER=redis`` for PostgreSQL + Redis.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oauth.kit import OAuthServer, mint_two_users_two_clients, start_oauth_server, stop_oauth_server
from tests.support.servers import (
    ROOT,
    LiveServer,
    drop_pg_database,
    migrate_database,
    server_env,
    start_server,
    start_task_worker,
    stop_process,
)
from tests.support.task_client import ACCEPT, TASKS, Modern
from tests.support.windows import within_one_window

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "limits-tests", "version": "1"},
}


def own_redis_prefix() -> str:
    """Counters of this test's servers on the shared Redis, apart from every other run's."""
    return f"limits-{uuid.uuid4().hex[:12]}"


async def call_tool(
    http: httpx.AsyncClient, url: str, tool: str, token: str | None = None, **arguments: Any
) -> httpx.Response:
    """One stateless 2026-07-28 ``tools/call`` (declaring the tasks extension); the raw HTTP response."""
    params = {
        "name": tool,
        "arguments": arguments,
        "_meta": {**META, "io.modelcontextprotocol/clientCapabilities": TASKS},
    }
    headers = {
        "content-type": "application/json",
        "accept": ACCEPT,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    if token:
        headers["authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    return await http.post(url, json=body, headers=headers)


def assert_rate_limited(r: httpx.Response, limit: str) -> None:
    assert r.status_code == 429, (r.status_code, r.text)
    error = r.json()["error"]
    assert error["code"] == -32029 and error["data"]["limit"] == limit, error
    assert error["data"]["retryable"] is True and int(r.headers["retry-after"]) == error["data"]["retryAfter"] >= 1


# -- the task flood: two users, two OAuth clients, a real db_worker -------------------------------------------


@pytest.fixture
def oauth(tmp_path: Path) -> Iterator[tuple[OAuthServer, list[str]]]:
    server = start_oauth_server(
        tmp_path,
        settings="tests.settings.settings_tasks_oauth",
        MCP_RATE_LIMITS=json.dumps({"user": "40/hour"}),
        MCP_TASK_LIMITS=json.dumps({"active_per_user": 3}),
        MCP_REDIS_PREFIX=own_redis_prefix(),
    )
    worker = start_task_worker(server.live.env, tmp_path / "worker.log")
    try:
        yield server, mint_two_users_two_clients(server)
    finally:
        stop_process(worker.process, 5)
        stop_oauth_server(server)
    for log in (server.live.log, tmp_path / "worker.log"):
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text(errors="replace")


def test_a_task_flood_stops_at_alices_cap_while_bobs_task_runs(oauth: tuple[OAuthServer, list[str]]) -> None:
    server, (alice, alice_elsewhere, bob) = oauth

    async def flood() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=60) as http:
            calls = [call_tool(http, server.url, "task_ask", alice if i % 2 else alice_elsewhere) for i in range(20)]
            return list(await asyncio.gather(*calls))

    started = time.monotonic()
    responses = asyncio.run(flood())
    flood_seconds = time.monotonic() - started
    created = [r for r in responses if r.status_code == 200]
    refused = [r for r in responses if r.status_code != 200]
    # Never past the cap. In a burst a call may be refused though a place is about to free: calls being
    # admitted count at once, and also as rows once created, until they return (never too few counted).
    assert 1 <= len(created) <= 3, [r.text for r in created]  # task_ask waits for input: none ends meanwhile
    for r in refused:  # through either of her clients: the cap is hers
        assert_rate_limited(r, "tasks.active.user")

    # One at a time, the cap is exact: her calls are admitted up to three tasks, the next is refused.
    async def one_at_a_time() -> tuple[list[httpx.Response], httpx.Response]:
        async with httpx.AsyncClient(timeout=60) as http:
            more = [await call_tool(http, server.url, "task_ask", alice) for _ in range(3 - len(created))]
            return more, await call_tool(http, server.url, "task_ask", alice_elsewhere)

    more, fourth = asyncio.run(one_at_a_time())
    assert [r.status_code for r in more] == [200] * len(more), [r.text for r in more]
    created += more
    assert_rate_limited(fourth, "tasks.active.user")
    assert all(r.json()["result"]["resultType"] == "task" for r in created)
    spent = len(responses) + len(more) + 1

    # Bob's task still runs, on the worker, to its end (polled once a second: his polls count against his rate).
    his = Modern(server.url, headers={"Authorization": f"Bearer {bob}"})
    assert his.wait(his.start("task_sleep", seconds=0.2), timeout=30, every=1)["status"] == "completed"

    # Alice past her request rate (40 an hour, some spent by her task calls): refused; Bob goes on.
    async def spend() -> tuple[int, httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(timeout=60) as http:
            for n in range(40):
                r = await call_tool(http, server.url, "echo", alice, text="hi")
                if r.status_code != 200:
                    return n, r, await call_tool(http, server.url, "echo", bob, text="bob")
        raise AssertionError("never refused")

    admitted, over, bobs = asyncio.run(spend())
    assert admitted == 40 - spent  # 40 an hour: the task calls counted too, refused or not
    assert_rate_limited(over, "user")
    assert bobs.status_code == 200 and bobs.json()["result"]["content"][0]["text"] == "bob"
    print(f"flood of 20 task calls answered in {flood_seconds:.2f} s")


# -- counting across two daphne workers sharing Redis ---------------------------------------------------------


@pytest.fixture
def two_workers(tmp_path: Path, redis: None) -> Iterator[list[LiveServer]]:
    env = server_env(
        tmp_path,
        layer="redis",
        MCP_RATE_LIMITS=json.dumps({"anonymous": "10/hour"}),
        MCP_REDIS_PREFIX=own_redis_prefix(),
    )
    servers = [start_server(env, tmp_path / "a.log")]
    try:
        servers.append(start_server(env, tmp_path / "b.log", migrate=False))
        yield servers
    finally:
        for server in servers:
            server.stop()
        if env["MCP_TEST_DB"] == "postgres":
            drop_pg_database(env["MCP_PG_NAME"])


@pytest.mark.own_config  # the layer and cache it counts in are picked (Redis); anonymous calls touch no table
def test_two_daphne_workers_sharing_redis_count_one_budget(two_workers: list[LiveServer]) -> None:
    within_one_window(3600, 60)  # not across the hour: the count would start again

    async def alternate() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=60) as http:
            return [await call_tool(http, two_workers[n % 2].url, "echo", text=str(n)) for n in range(16)]

    responses = asyncio.run(alternate())
    statuses = [r.status_code for r in responses]
    assert statuses == [200] * 10 + [429] * 6, statuses  # ten in all, not ten per worker
    for r in responses[10:]:
        assert_rate_limited(r, "anonymous")


# -- stdio: the JSON-RPC error carries the delay ------------------------------------------------------------------


def test_stdio_answers_a_json_rpc_error_with_the_delay(tmp_path: Path) -> None:
    env = server_env(tmp_path, MCP_RATE_LIMITS=json.dumps({"user": "2/hour"}), MCP_REDIS_PREFIX=own_redis_prefix())
    try:
        migrate_database(env)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "django",
                "shell",
                "-c",
                "from django.contrib.auth.models import User; User.objects.create_user('alice')",
            ],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=60,
        )
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        lines = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *(
                {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": str(n)}},
                }
                for n in (1, 2, 3)
            ),
        ]
        out = subprocess.run(
            [sys.executable, "-m", "django", "mcp_stdio", "--user", "alice"],
            input="".join(json.dumps(line) + "\n" for line in lines),
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        if env["MCP_TEST_DB"] == "postgres":
            drop_pg_database(env["MCP_PG_NAME"])
    answers = [m for m in map(json.loads, out.stdout.splitlines()) if m.get("id") in (1, 2, 3)]
    results = [m for m in answers if "result" in m]
    errors = [m["error"] for m in answers if "error" in m]
    assert len(results) == 2 and len(errors) == 1, (out.stdout, out.stderr)  # the three may run concurrently
    (error,) = errors
    assert error["code"] == -32029 and error["data"]["limit"] == "user" and error["data"]["retryAfter"] >= 1
    assert error["data"] == {**error["data"], "reason": "rate_limited", "retryable": True}
    assert "Traceback" not in out.stderr


# -- timeouts under daphne, through the official SDK client ---------------------------------------------------------


async def test_a_sync_tool_past_its_deadline_answers_in_time_and_keeps_its_thread(tmp_path: Path) -> None:
    import mcp_types as types
    from mcp import Client as SDKClient

    env = server_env(tmp_path, MCP_TOOL_TIMEOUT="0.5", MCP_SYNC_WORKERS="1")
    live = start_server(env, tmp_path / "daphne.log")
    try:
        async with SDKClient(live.url, read_timeout_seconds=30, cache=None) as client:
            started = time.monotonic()
            result = await client.call_tool("sync_sleep", {"seconds": 3})
            answered = time.monotonic() - started
            texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
            assert result.is_error and texts == [
                "Tool 'sync_sleep' timed out after 0.5 s and was stopped; its result is lost."
            ]
            assert answered < 2.5, answered
            # The thread sleeps on and keeps the one slot: a call now waits for it, past its own deadline.
            queued = await client.call_tool("sync_sleep", {"seconds": 0.1})
            assert queued.is_error and time.monotonic() - started < 2.9
            while time.monotonic() - started < 3.3:  # the first thread returns at 3 s and frees its slot
                await asyncio.sleep(0.1)
            free = await client.call_tool("sync_sleep", {"seconds": 0.1})
            texts = [c.text for c in free.content if isinstance(c, types.TextContent)]
            assert not free.is_error and texts == ["slept 0.1"]
    finally:
        live.stop()
        if env["MCP_TEST_DB"] == "postgres":
            drop_pg_database(env["MCP_PG_NAME"])
    assert "Traceback" not in (tmp_path / "daphne.log").read_text(errors="replace")
