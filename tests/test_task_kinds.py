"""Each kind of tool runs as a task on a real ``db_worker``: async and sync functions, a view, a DRF view.

Also the development path: with ``ImmediateBackend`` the task runs inside the request
that creates it (W005), and the answer is already the ended task.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import override_settings

from django_mcp import Context
from tests.support.servers import LiveServer, TaskWorker, server_env, start_server, start_task_worker
from tests.support.taskwire import EXTENSION, until_ended
from tests.support.taskwire import post as wire_post


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("task-kinds")
    env = server_env(tmp, settings="tests.taskapp.settings")
    server = start_server(env, tmp / "daphne.log")
    worker: TaskWorker = start_task_worker(env, tmp / "worker.log")
    yield server
    worker.stop()
    server.stop()
    for log in (server.log, worker.log):
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text()


def post(server: LiveServer, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    return wire_post(server.url, method, params, name)


def test_sync_tool_task_reports_progress_as_status_message(live: LiveServer) -> None:
    created = post(live, "tools/call", {"name": "count_slowly", "arguments": {"steps": 4}}, "count_slowly")["result"]
    assert created["resultType"] == "task"
    seen: list[str] = []
    task = until_ended(live.url, created["taskId"], seen)
    assert task["status"] == "completed", task
    assert task["result"]["content"][0]["text"] == "counted to 4 in task True"
    assert set(seen) <= {f"step {i} of 4" for i in range(1, 5)} and seen, seen


def test_sync_tool_runs_as_a_task(live: LiveServer) -> None:
    created = post(live, "tools/call", {"name": "add_slowly", "arguments": {"a": 2, "b": 40}}, "add_slowly")["result"]
    task = until_ended(live.url, created["taskId"])
    assert task["status"] == "completed", task
    assert task["result"]["structuredContent"] == {"result": 42}


def test_view_tool_runs_as_a_task(live: LiveServer) -> None:
    created = post(live, "tools/call", {"name": "shout", "arguments": {"text": "quiet"}}, "shout")["result"]
    task = until_ended(live.url, created["taskId"])
    assert task["status"] == "completed", task
    assert "QUIET (anonymous)" in task["result"]["content"][0]["text"]


def test_drf_view_runs_as_a_task(live: LiveServer) -> None:
    created = post(live, "tools/call", {"name": "ping_task", "arguments": {}}, "ping_task")["result"]
    task = until_ended(live.url, created["taskId"])
    assert task["status"] == "completed", task
    assert '"user": "anonymous"' in task["result"]["content"][0]["text"], task


def test_tools_list_of_a_handshake_client_declares_task_support(live: LiveServer) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    h = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with httpx.Client(timeout=10) as http:
        r = http.post(live.url, json=init, headers=h)
        h = {**h, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        http.post(live.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
        r = http.post(live.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=h)
        text = r.text
        body = r.json() if text.lstrip().startswith("{") else __import__("json").loads(text.split("data:", 1)[1])
        tools = {t["name"]: t for t in body["result"]["tools"]}
    assert tools["count_slowly"]["execution"] == {"taskSupport": "optional"}
    assert tools["ping_task"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["tools_echo"] if "tools_echo" in tools else True


@pytest.mark.django_db(transaction=True)
def test_immediate_backend_runs_the_task_in_the_request() -> None:
    """Development: ImmediateBackend; the CreateTaskResult already shows the ended task."""
    from django_mcp import MCPServer
    from django_mcp.test import MCPTestClient

    server = MCPServer("immediate-tasks")

    @server.tool(task="optional")
    def double(ctx: Context, n: int) -> str:
        return f"{2 * n} in task {ctx.task_id is not None}"

    path = "django.tasks.backends.immediate.ImmediateBackend"
    try:
        import django.tasks  # noqa: F401
    except ImportError:
        path = "django_tasks.backends.immediate.ImmediateBackend"
    with override_settings(TASKS={"default": {"BACKEND": path}}):
        client = MCPTestClient(server, capabilities={"extensions": {EXTENSION: {}}})
        result = client.request("tools/call", {"name": "double", "arguments": {"n": 21}})
        assert result["resultType"] == "task" and result["status"] == "completed", result
        task = client.request("tasks/get", {"taskId": result["taskId"]})
        assert task["result"]["content"][0]["text"] == "42 in task True"
