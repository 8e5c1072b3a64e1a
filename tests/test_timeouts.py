"""Timeouts and result size caps (``django_mcp.limits.timeouts``, ``.sizes``), in process through the door.

An async tool is cancelled at its deadline; a sync tool's caller gets the answer at the deadline while
the thread runs on, its pool slot still taken (a second call waits for it) and ``ctx.cancelled`` true;
the answer is a tool error the model can read. Task runs have their own deadline. A result over
``MAX_RESULT_BYTES`` becomes an error giving its size and the cap, never a truncated result.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from django_mcp import Context, MCPServer
from django_mcp.tasks import EXTENSION
from django_mcp.test import AsyncMCPTestClient, MCPClientError, MCPTestClient

server = MCPServer("timeout-tests")
SEEN: dict[str, Any] = {}


@server.tool(timeout=0.3)
async def slow_async(seconds: float = 5) -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        SEEN["async cancelled"] = True
        raise
    return "finished"


@server.tool(timeout=0.4)
def slow_sync(ctx: Context, seconds: float = 5) -> str:
    """Stops early once it sees ``ctx.cancelled``."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if ctx.cancelled:
            SEEN["sync saw cancelled after"] = time.monotonic() - started
            return "stopped"
        time.sleep(0.02)
    return "finished"


@server.tool(timeout=0.3)
def stuck_sync(seconds: float = 1.5) -> str:
    """Ignores cancellation: its thread runs to the end."""
    time.sleep(seconds)
    SEEN["stuck ended"] = time.monotonic()
    return "finished"


@server.tool
def quick_sync() -> str:
    SEEN["quick ran"] = time.monotonic()
    return "quick"


@server.tool
async def default_deadline(seconds: float = 5) -> str:
    await asyncio.sleep(seconds)
    return "finished"


@server.tool(task="optional", timeout=0.3)
async def slow_task(seconds: float = 5) -> str:
    await asyncio.sleep(seconds)
    return "finished"


@server.tool(task="optional")
async def task_without_own_deadline(seconds: float = 0.6) -> str:
    await asyncio.sleep(seconds)
    return "finished"


@server.tool(task="optional")
async def big(size: int = 5000) -> str:
    return "x" * size


@server.resource("big://blob")
def big_resource() -> str:
    return "y" * 5000


def configured(**mcp: Any) -> Any:
    return override_settings(DJANGO_MCP={**settings.DJANGO_MCP, **mcp})


def immediate_tasks() -> Any:
    try:
        import django.tasks  # noqa: F401

        backend = "django.tasks.backends.immediate.ImmediateBackend"
    except ImportError:
        backend = "django_tasks.backends.immediate.ImmediateBackend"
    return override_settings(TASKS={"default": {"BACKEND": backend}})


def text(result: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in result["content"])


@pytest.fixture(autouse=True)
def seen() -> Any:
    SEEN.clear()
    yield SEEN


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
@pytest.mark.django_db(transaction=True)
def test_an_async_tool_is_cancelled_at_its_deadline(revision: str) -> None:
    client = MCPTestClient(server, protocol_version=revision)
    started = time.monotonic()
    result = client.request("tools/call", {"name": "slow_async", "arguments": {}})
    assert time.monotonic() - started < 3
    assert result["isError"] is True and text(result) == (
        "Tool 'slow_async' timed out after 0.3 s and was stopped; its result is lost."
    )
    assert SEEN["async cancelled"] is True
    assert client.request("tools/call", {"name": "slow_async", "arguments": {"seconds": 0}})["content"][0]["text"] == (
        "finished"
    )


@pytest.mark.django_db(transaction=True)
async def test_a_sync_tool_answers_at_the_deadline_and_sees_ctx_cancelled() -> None:
    client = AsyncMCPTestClient(server)
    started = time.monotonic()
    result = await client.request("tools/call", {"name": "slow_sync", "arguments": {}})
    assert time.monotonic() - started < 2.5 and result["isError"] is True and "after 0.4 s" in text(result)
    for _ in range(100):  # the thread notices on its next look
        if "sync saw cancelled after" in SEEN:
            break
        await asyncio.sleep(0.02)
    assert 0.3 < SEEN["sync saw cancelled after"] < 2.5


@pytest.mark.django_db(transaction=True)
async def test_a_timed_out_sync_tool_keeps_its_pool_slot_until_its_thread_ends() -> None:
    """One sync thread: the caller is answered at 0.3 s, the next sync call runs only after 1.5 s."""
    with configured(SYNC_WORKERS=1):
        client = AsyncMCPTestClient(server)
        started = time.monotonic()
        result = await client.request("tools/call", {"name": "stuck_sync", "arguments": {}})
        answered = time.monotonic() - started
        assert result["isError"] is True and answered < 1.2
        quick = await client.request("tools/call", {"name": "quick_sync", "arguments": {}})
        assert quick["content"][0]["text"] == "quick"
        assert SEEN["quick ran"] >= SEEN["stuck ended"]  # it waited for the thread, not for the answer


@pytest.mark.django_db(transaction=True)
def test_tool_timeout_is_the_default_and_a_tools_own_wins() -> None:
    with configured(TOOL_TIMEOUT=0.2):
        client = MCPTestClient(server)
        result = client.request("tools/call", {"name": "default_deadline", "arguments": {}})
        assert result["isError"] is True and "after 0.2 s" in text(result)
        result = client.request("tools/call", {"name": "slow_async", "arguments": {}})
        assert "after 0.3 s" in text(result)
    with configured(TOOL_TIMEOUT=None):
        result = MCPTestClient(server).request(
            "tools/call", {"name": "default_deadline", "arguments": {"seconds": 0.4}}
        )
        assert text(result) == "finished"


@pytest.mark.django_db(transaction=True)
def test_a_task_run_has_its_own_deadline() -> None:
    """A tool's timeout= stops its task run; TOOL_TIMEOUT does not (a task is for long work), TASK_TIMEOUT does."""
    client = MCPTestClient(server, capabilities={"extensions": {EXTENSION: {}}})

    def run(name: str) -> dict[str, Any]:
        created = client.request("tools/call", {"name": name, "arguments": {}})
        task = client.request("tasks/get", {"taskId": created["taskId"]})
        assert task["status"] == "completed", task
        return dict(task["result"])

    with immediate_tasks(), configured(TOOL_TIMEOUT=0.2):
        timed_out = run("slow_task")
        assert timed_out["isError"] is True and "'slow_task' timed out after 0.3 s" in text(timed_out)
        assert text(run("task_without_own_deadline")) == "finished"  # 0.6 s: TOOL_TIMEOUT is not a task's
    with immediate_tasks(), configured(TASK_TIMEOUT=0.2):
        assert "timed out after 0.2 s" in text(run("task_without_own_deadline"))


@pytest.mark.django_db(transaction=True)
def test_a_result_over_max_result_bytes_is_an_error_that_says_so() -> None:
    with configured(MAX_RESULT_BYTES=1000):
        client = MCPTestClient(server)
        result = client.request("tools/call", {"name": "big", "arguments": {}})
        assert result["isError"] is True and "x" * 100 not in text(result)  # replaced, not truncated
        message = text(result)
        assert "is 5" in message and "bytes, over the server's limit of 1000 bytes (MAX_RESULT_BYTES)" in message
        assert text(client.request("tools/call", {"name": "big", "arguments": {"size": 10}})) == "x" * 10
        with pytest.raises(MCPClientError) as info:
            client.request("resources/read", {"uri": "big://blob"})
        assert info.value.code == -32603 and info.value.data["reason"] == "result_too_large"
        assert info.value.data["limit"] == 1000 and info.value.data["size"] > 5000


@pytest.mark.django_db(transaction=True)
def test_an_oversized_task_result_is_never_stored() -> None:
    from django_mcp.models import MCPTask

    client = MCPTestClient(server, capabilities={"extensions": {EXTENSION: {}}})
    with immediate_tasks(), configured(MAX_RESULT_BYTES=1000):
        created = client.request("tools/call", {"name": "big", "arguments": {"size": 100_000}})
        task = client.request("tasks/get", {"taskId": created["taskId"]})
    assert task["status"] == "completed" and task["result"]["isError"] is True
    stored = MCPTask.objects.get(pk=created["taskId"]).result
    assert "MAX_RESULT_BYTES" in stored["content"][0]["text"] and len(str(stored)) < 1000


def test_declarations_are_checked() -> None:
    other = MCPServer("declarations")
    with pytest.raises(TypeError, match="rate_limit"):
        other.tool(rate_limit="often")(lambda: None)
    with pytest.raises(TypeError, match="timeout"):
        other.tool(timeout=0)(lambda: None)
    with pytest.raises(TypeError, match="timeout"):
        other.tool(timeout="30")(lambda: None)
