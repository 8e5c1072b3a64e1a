"""ATOMIC_TOOL_CALLS: a sync tool call runs in a savepoint; an exception rolls back its writes.

Covers plain sync tools (ToolError and unexpected errors), DRF views answering 4xx after writing,
plain views answering 4xx after writing, the documented async-tool semantics, and the setting
turned off (a server of its own). Both eras; SQLite or PostgreSQL (``MCP_TEST_DB``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.callers import MODES, client, text, unique
from tests.support.servers import LiveServer, server_env, start_server


async def names(url: str, mode: str) -> list[str]:
    async with client(url, mode) as c:
        result = await c.call_tool("item_names", {})
    assert result.structured_content is not None
    return list(result.structured_content["result"])


@pytest.mark.parametrize("mode", MODES)
async def test_sync_tool_failure_rolls_back(users_server: LiveServer, mode: str) -> None:
    a, b, c_, d = (unique("atomic") for _ in range(4))
    async with client(users_server.url, mode) as c:
        failed = await c.call_tool("make_items", {"names": [a, b], "fail": True})
        assert failed.is_error and text(failed) == "failed after writing"
        crashed = await c.call_tool("crash_after_write", {"name": c_})
        assert crashed.is_error and "boom" not in text(crashed)
        ok = await c.call_tool("make_items", {"names": [d]})
        assert ok.structured_content == {"result": 1}
    present = await names(users_server.url, mode)
    assert d in present
    assert not {a, b, c_} & set(present)


@pytest.mark.parametrize("mode", MODES)
async def test_view_errors_roll_back(users_server: LiveServer, mode: str) -> None:
    good, bad = unique("good"), unique("bad")
    renamed = unique("bad")
    async with client(users_server.url, mode, "alice") as c:
        # The @api_view saves every item, then answers 400 for a bad name: the saved ones go too.
        refused = await c.call_tool("bulk_create", {"names": [good, bad]})
        assert refused.is_error and f"names: '{bad}' is a bad name." == text(refused)
        # A plain view that saves, then answers 400.
        original = unique("plate")
        pk = (await c.call_tool("item_create", {"name": original})).structured_content["id"]  # type: ignore[index]
        failed = await c.call_tool("rename_item", {"pk": pk, "name": renamed})
        assert failed.is_error
    present = set(await names(users_server.url, mode))
    assert not {good, bad, renamed} & present
    assert original in present


@pytest.mark.parametrize("mode", MODES)
async def test_async_tools_are_not_wrapped(users_server: LiveServer, mode: str) -> None:
    """Documented: an async tool's ORM calls each commit on their own (wrap them in transaction.atomic)."""
    name = unique("async")
    async with client(users_server.url, mode) as c:
        failed = await c.call_tool("make_item_async", {"name": name, "fail": True})
        assert failed.is_error
    assert name in await names(users_server.url, mode)


@pytest.fixture(scope="module")
def non_atomic_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("non_atomic")
    server = start_server(server_env(tmp, MCP_ATOMIC_TOOL_CALLS="0"), tmp / "daphne.log")
    yield server
    server.stop()


@pytest.mark.parametrize("mode", MODES)
async def test_setting_off_keeps_writes(non_atomic_server: LiveServer, mode: str) -> None:
    a = unique("kept")
    async with client(non_atomic_server.url, mode) as c:
        failed = await c.call_tool("make_items", {"names": [a], "fail": True})
        assert failed.is_error
    assert a in await names(non_atomic_server.url, mode)
