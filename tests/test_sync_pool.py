"""Sync tools run in a bounded pool (``SYNC_WORKERS``), through a real daphne worker.

A 3 s sync tool no longer stalls the worker: another sync tool and ``initialize``
answer at once. With a pool of one thread kept busy, session bookkeeping still
answers at once (its own pool) and a queued call is refused as busy after
``SYNC_QUEUE_TIMEOUT`` with a retryable JSON-RPC error, never a 500. What asgiref
carried before still arrives in the pool thread: the caller's language and
``async_to_sync`` back into the server's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.rawasync import AsyncRaw
from tests.support.servers import LiveServer, server_env, start_server


def _no_500(server: LiveServer) -> None:
    log = server.log.read_text(errors="replace")
    assert " 500 " not in log and "Traceback" not in log, log[-3000:]


@pytest.fixture(scope="module")
def pool_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("sync_pool")
    server = start_server(server_env(tmp), tmp / "daphne.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def one_thread_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("sync_one")
    env = server_env(tmp, MCP_SYNC_WORKERS="1", MCP_SYNC_QUEUE_TIMEOUT="0.5")
    server = start_server(env, tmp / "daphne.log")
    yield server
    server.stop()


async def test_slow_sync_tool_does_not_stall_the_worker(pool_server: LiveServer) -> None:
    async with AsyncRaw(pool_server.url) as raw:
        sid = await raw.session()
        slow = asyncio.ensure_future(raw.call(sid, "sync_sleep", {"seconds": 3}))
        await asyncio.sleep(0.3)  # the slow call holds its thread now
        assert not slow.done()
        other = await raw.call(sid, "sync_db")
        add = await raw.call(sid, "add", {"a": 2, "b": 3})
        init = await raw.initialize()
        fresh = await raw.session()
        ping = await raw.ping(fresh)
        assert other.status == 200 and isinstance(other.result["structuredContent"]["result"], int), other
        assert add.status == 200 and add.result["structuredContent"]["total"] == 5, add
        assert init.status == 200 and "mcp-session-id" in init.headers, init
        for reply, what in ((other, "sync tool"), (add, "sync tool"), (init, "initialize"), (ping, "ping")):
            assert reply.seconds < 0.8, f"{what} waited {reply.seconds:.2f}s behind a 3 s sync tool"
        done = await slow
        assert done.status == 200 and done.result["content"][0]["text"] == "slept 3.0", done
        assert 2.9 < done.seconds < 4.5, done
    _no_500(pool_server)


async def test_sync_tools_run_concurrently(pool_server: LiveServer) -> None:
    """Eight 1 s sync tools at once take about one second, not eight."""
    async with AsyncRaw(pool_server.url) as raw:
        sid = await raw.session()
        start = asyncio.get_running_loop().time()
        replies = await asyncio.gather(*(raw.call(sid, "sync_sleep", {"seconds": 1}) for _ in range(8)))
        took = asyncio.get_running_loop().time() - start
    assert all(r.status == 200 and not r.result.get("isError") for r in replies), replies
    assert took < 2.5, f"8 concurrent 1 s sync tools took {took:.2f}s"


async def test_full_pool_queues_then_refuses_as_busy(one_thread_server: LiveServer) -> None:
    async with AsyncRaw(one_thread_server.url) as raw:
        sid = await raw.session()
        slow = asyncio.ensure_future(raw.call(sid, "sync_sleep", {"seconds": 2}))
        await asyncio.sleep(0.3)
        init = await raw.initialize()  # bookkeeping pool: not behind the busy thread
        queued = await raw.call(sid, "add", {"a": 1, "b": 1})  # waits SYNC_QUEUE_TIMEOUT = 0.5 s, then busy
        assert init.status == 200 and init.seconds < 0.8, init
        assert queued.status == 200, queued
        assert queued.error is not None, queued
        assert queued.error["data"]["reason"] == "busy" and queued.error["data"]["retryable"] is True, queued
        assert 0.4 < queued.seconds < 1.5, queued
        assert (await slow).status == 200
        # A short wait in the queue is just a wait: a call behind a 0.3 s one succeeds.
        short = asyncio.ensure_future(raw.call(sid, "sync_sleep", {"seconds": 0.3}))
        await asyncio.sleep(0.1)
        after = await raw.call(sid, "add", {"a": 1, "b": 1})
        assert after.status == 200 and after.result["structuredContent"]["total"] == 2, after
        assert (await short).status == 200
    _no_500(one_thread_server)


async def test_a_cancelled_sync_call_keeps_its_thread_until_it_returns(one_thread_server: LiveServer) -> None:
    """Cancelling a call cannot stop its thread: the slot stays taken until the thread is done, so the
    next call is bounded by ``SYNC_QUEUE_TIMEOUT`` (busy) instead of waiting unboundedly behind it."""
    async with AsyncRaw(one_thread_server.url) as raw:
        sid = await raw.session()
        body = {
            "jsonrpc": "2.0",
            "id": "slow-1",
            "method": "tools/call",
            "params": {"name": "sync_sleep", "arguments": {"seconds": 2.5}},
        }
        slow = asyncio.ensure_future(raw.post(body, raw.headers(sid)))
        await asyncio.sleep(0.3)
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow-1"}}
        assert (await raw.post(note, raw.headers(sid))).status == 202
        cancelled = await slow
        assert cancelled.status == 202 and cancelled.text == "", cancelled  # no response for a cancelled request
        queued = await raw.call(sid, "add", {"a": 1, "b": 1})  # the thread still sleeps: busy after 0.5 s
        assert queued.error is not None and queued.error["data"]["reason"] == "busy", queued
        assert queued.seconds < 1.5, queued
        await asyncio.sleep(2.2)  # the thread is done: its slot is free again
        after = await raw.call(sid, "add", {"a": 1, "b": 1})
        assert after.status == 200 and after.result["structuredContent"]["total"] == 2, after
    _no_500(one_thread_server)


async def test_language_reaches_the_pool_thread(pool_server: LiveServer) -> None:
    async with AsyncRaw(pool_server.url) as raw:
        sid = await raw.session()
        de = await raw.request(sid, "tools/call", {"name": "sync_language", "arguments": {}}, {"accept-language": "de"})
        plain = await raw.call(sid, "sync_language")
    assert de.result["content"][0]["text"] == "de", de
    assert plain.result["content"][0]["text"] == "en-us", plain


async def test_async_to_sync_from_a_sync_tool_reaches_the_event_loop(pool_server: LiveServer) -> None:
    async with AsyncRaw(pool_server.url) as raw:
        sid = await raw.session()
        reply = await raw.call(sid, "sync_progress", _meta={"progressToken": "p1"})
    progress = [m["params"]["progress"] for m in reply.messages if m.get("method") == "notifications/progress"]
    assert progress == [1, 2], reply
    assert reply.result["content"][0]["text"] == "reported", reply


async def test_a_caller_that_stops_waiting_cancels_what_its_call_reached_back_for() -> None:
    """A sync call blocked in ``async_to_sync`` on the caller's loop: cancelling the caller cancels that
    coroutine too, so the thread comes free at once instead of when the coroutine would have ended."""
    from asgiref.sync import async_to_sync

    from django_mcp.runtime.sync_pool import run_sync

    reached = asyncio.Event()
    seen: list[str] = []
    outcome: list[str] = []
    loop = asyncio.get_running_loop()

    async def forever() -> None:
        loop.call_soon(reached.set)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    def blocked() -> None:
        try:
            async_to_sync(forever)()
        except asyncio.CancelledError:
            outcome.append("freed")
        else:
            outcome.append("ran out")

    call = asyncio.ensure_future(run_sync(blocked))
    await asyncio.wait_for(reached.wait(), 5)
    started = loop.time()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(100):
        if seen and outcome:
            break
        await asyncio.sleep(0.02)
    assert seen == ["cancelled"] and outcome == ["freed"], (seen, outcome)
    assert loop.time() - started < 2


# -- connections between calls -----------------------------------------------------------------------------
def test_a_healthy_sqlite_connection_is_kept_a_failed_or_unfinished_one_closed(
    tmp_path: Path, django_db_blocker: Any
) -> None:
    """``recycle_connections`` (around every pool call) on an SQLite file with ``CONN_MAX_AGE = 0``: kept
    between calls (Django's ``close_old_connections`` would close it: opening one cost ~1.5 ms a call), but
    closed after an error or when left inside a transaction."""
    from django.db.utils import ConnectionHandler

    handler = ConnectionHandler(
        {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "db.sqlite3"), "CONN_MAX_AGE": 0}}
    )
    conn = handler["default"]
    with django_db_blocker.unblock():  # a database of this test's own, not the test database
        _recycle_an_sqlite_file(conn)


def _recycle_an_sqlite_file(conn: Any) -> None:
    from django_mcp.runtime.sync_pool import recycle_connections

    try:
        conn.ensure_connection()
        raw = conn.connection
        conn.close_if_unusable_or_obsolete()  # what Django does after a request: closed at once
        assert conn.connection is None
        conn.ensure_connection()
        raw = conn.connection
        recycle_connections([conn])
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1")
        recycle_connections([conn])
        assert conn.connection is raw, "the SQLite connection was closed between two calls"

        conn.errors_occurred = True  # a query failed on it
        recycle_connections([conn])
        assert conn.connection is None, "a connection with errors was kept"

        conn.ensure_connection()
        conn.set_autocommit(False)  # left inside a transaction
        recycle_connections([conn])
        assert conn.connection is None, "a connection left in a transaction was kept"
    finally:
        conn.close()


def _connection_state() -> tuple[bool, int, str]:
    """In a pool thread: was a connection open when the call began; which thread; the backend."""
    import threading

    from django.db import connections

    conn = connections["default"]
    was_open = conn.connection is not None
    with conn.cursor() as cursor:
        cursor.execute("SELECT 1")
    return was_open, threading.get_ident(), conn.vendor


@pytest.mark.django_db(transaction=True)
async def test_a_pool_thread_honours_conn_max_age_except_on_sqlite() -> None:
    """With ``CONN_MAX_AGE = 0`` (the tests' setting, Django's default) a PostgreSQL connection closes after each
    pool call, as Django closes it after a request; an SQLite one stays open for the thread's next call."""
    from django.conf import settings
    from django.test import override_settings

    from django_mcp.runtime.sync_pool import run_bookkeeping

    assert settings.DATABASES["default"].get("CONN_MAX_AGE", 0) == 0
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "SYNC_BOOKKEEPING_WORKERS": 1}):  # one thread
        await run_bookkeeping(_connection_state)
        kept, thread, vendor = await run_bookkeeping(_connection_state)
        _, same_thread, _ = await run_bookkeeping(_connection_state)
    assert same_thread == thread
    if vendor == "sqlite":
        assert kept, "the SQLite connection was closed between two calls"
    else:
        assert not kept, f"a {vendor} connection outlived its call with CONN_MAX_AGE = 0"


def _unreachable() -> None:
    from django.db import OperationalError

    raise OperationalError("connection refused")


@pytest.mark.django_db(transaction=True)
async def test_a_pool_call_sees_the_callers_contextvars_and_keeps_its_own() -> None:
    """A pool call runs in a copy of the caller's context: it reads what the caller set, and what it sets
    stays in the call (asgiref's ``sync_to_async`` copied it back); one thread, its kept or closed
    connection, and a database that cannot serve reported as ``DatabaseUnavailable`` (503), not a 500."""
    import contextvars

    from django.conf import settings
    from django.test import override_settings

    from django_mcp.runtime.sync_pool import run_bookkeeping
    from django_mcp.runtime.unavailable import DatabaseUnavailable

    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="")
    marker.set("from the caller")
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "SYNC_BOOKKEEPING_WORKERS": 1}):  # one thread
        await run_bookkeeping(_connection_state)
        kept, thread, vendor = await run_bookkeeping(_connection_state)
        _, same_thread, _ = await run_bookkeeping(_connection_state)
        assert await run_bookkeeping(marker.get) == "from the caller"
        await run_bookkeeping(marker.set, "from the call")
        assert marker.get() == "from the caller"
        with pytest.raises(DatabaseUnavailable):
            await run_bookkeeping(_unreachable)
    assert same_thread == thread
    assert kept == (vendor == "sqlite"), (kept, vendor)


async def test_waiting_callers_get_a_freed_thread_in_turn_and_one_that_left_takes_none() -> None:
    """Two threads, five callers: three wait. A waiter that stops waiting takes no thread, the others
    get one in the order they came, each as soon as a thread returns, and past ``SYNC_QUEUE_TIMEOUT``
    a waiter is refused as busy. Exceptions reach the caller that waited for them."""
    import threading

    from django.conf import settings
    from django.test import override_settings

    from django_mcp.runtime.sync_pool import Pool
    from django_mcp.runtime.unavailable import Busy

    release = {name: threading.Event() for name in "abcde"}
    order: list[str] = []

    def work(name: str) -> str:
        order.append(name)
        if not release[name].wait(5):
            raise TimeoutError(name)
        if name == "e":
            raise ValueError("from e")
        return name

    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "SYNC_WORKERS": 2, "SYNC_QUEUE_TIMEOUT": 5}):
        pool = Pool("gate-test", "SYNC_WORKERS", gated=True)
        calls = {}
        for name in "abcde":
            calls[name] = asyncio.ensure_future(pool.run(work, name))
            await asyncio.sleep(0.05)
        assert order == ["a", "b"], order  # two threads: c, d and e wait
        calls["c"].cancel()  # c leaves the queue before a thread comes free
        release["a"].set()
        assert await calls["a"] == "a"
        for _ in range(100):
            if len(order) == 3:
                break
            await asyncio.sleep(0.02)
        assert order == ["a", "b", "d"], order  # a's thread went to d, the first still waiting
        release["b"].set()
        release["d"].set()
        release["e"].set()
        assert await calls["b"] == "b" and await calls["d"] == "d"
        with pytest.raises(ValueError, match="from e"):
            await calls["e"]
        with pytest.raises(asyncio.CancelledError):
            await calls["c"]
        assert order == ["a", "b", "d", "e"], order  # c never ran
        gate = pool._gate()
        assert gate.free == 2 and not gate.waiters, (gate.free, gate.waiters)  # every slot came back
        pool.reset()  # its two threads end here, not when the test process does

    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "SYNC_WORKERS": 1, "SYNC_QUEUE_TIMEOUT": 0.2}):
        pool = Pool("busy-test", "SYNC_WORKERS", gated=True)
        hold = threading.Event()
        first = asyncio.ensure_future(pool.run(hold.wait, 5))
        await asyncio.sleep(0.05)
        started = asyncio.get_running_loop().time()
        with pytest.raises(Busy):
            await pool.run(order.append, "late")
        assert 0.15 < asyncio.get_running_loop().time() - started < 2
        hold.set()
        assert await first is True
        assert await pool.run(order.append, "then") is None and order[-1] == "then"
        pool.reset()


async def test_a_slot_handed_to_a_caller_that_just_stopped_waiting_goes_to_the_next() -> None:
    from django_mcp.runtime.sync_pool import _Gate

    gate = _Gate(1)
    assert gate.try_enter() and not gate.try_enter()
    first = asyncio.ensure_future(gate.enter(5))
    second = asyncio.ensure_future(gate.enter(5))
    await asyncio.sleep(0)
    gate.leave()  # the slot goes to ``first``...
    first.cancel()  # ...which stops waiting before it could run on
    with pytest.raises(asyncio.CancelledError):
        await first
    await asyncio.wait_for(second, 1)  # passed on, not lost
    assert gate.free == 0 and not gate.waiters
    gate.leave()
    assert gate.free == 1
