"""``write_transaction``, ``tool_transaction``: a read-then-write on SQLite waits for the other writer.

Real SQLite files and two real connections (two threads): one holds the write lock for a while,
the other reads and then writes. Plain ``atomic()`` fails with "database is locked" (what the
OAuth registration view answered as a 500 while the audit writer was inserting); the package's
``write_transaction()`` waits and writes. A sync tool's ``tool_transaction()`` (``ATOMIC_TOOL_CALLS``)
does the same from its first query, and takes no lock before it (a tool that never queries, or a
read-only one, runs beside a writer).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connections, transaction

from django_mcp import MCPServer
from django_mcp.state.writelock import _locks, serialized_write, sqlite_writer, tool_transaction, write_transaction

ALIAS = "writelock"


@pytest.fixture
def sqlite_file(tmp_path: Path, django_db_blocker: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """An alias of its own on a SQLite file, outside any test transaction (two connections must really meet)."""
    django_db_blocker.unblock()
    settings = connections.settings
    options = {"timeout": 10, **getattr(request, "param", {})}
    own = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "lock.sqlite3"), "OPTIONS": options}
    settings[ALIAS] = connections.configure_settings({"default": settings["default"], ALIAS: own})[ALIAS]
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("CREATE TABLE t (n integer)")
    yield ALIAS
    connections[ALIAS].close()
    del connections[ALIAS]
    del settings[ALIAS]
    django_db_blocker.restore()


def hold_the_write_lock(held: threading.Event, seconds: float) -> threading.Thread:
    """Another connection (its own thread) that writes and keeps its transaction open for ``seconds``."""

    def run() -> None:
        with transaction.atomic(using=ALIAS), connections[ALIAS].cursor() as cursor:
            cursor.execute("INSERT INTO t VALUES (1)")
            held.set()
            time.sleep(seconds)
        connections[ALIAS].close()

    thread = threading.Thread(target=run)
    thread.start()
    assert held.wait(5)
    return thread


def read_then_write(block: AbstractContextManager[Any]) -> None:
    with block, connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM t")
        time.sleep(0.2)  # the other connection is still in its transaction
        cursor.execute("INSERT INTO t VALUES (2)")


def fails_while_another_writes(block: AbstractContextManager[Any]) -> None:
    """``read_then_write`` in ``block`` fails with "database is locked" while another connection writes."""
    held = threading.Event()
    other = hold_the_write_lock(held, 0.8)
    try:
        with pytest.raises(OperationalError, match="locked"):
            read_then_write(block)
    finally:
        other.join()


@pytest.mark.usefixtures("sqlite_file")
def test_plain_atomic_fails_and_write_transaction_waits() -> None:
    fails_while_another_writes(transaction.atomic(using=ALIAS))

    held = threading.Event()
    other = hold_the_write_lock(held, 0.8)
    started = time.monotonic()
    read_then_write(write_transaction(using=ALIAS))
    waited = time.monotonic() - started
    other.join()
    assert waited >= 0.5  # it waited for the other writer's commit
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT n FROM t ORDER BY rowid")
        assert [n for (n,) in cursor.fetchall()] == [1, 1, 2]
    assert connections[ALIAS].transaction_mode is None  # the connection's own mode is back


@pytest.mark.django_db
def test_inside_an_atomic_block_it_is_a_savepoint() -> None:
    with transaction.atomic(), write_transaction():
        assert connections["default"].in_atomic_block


def rows() -> list[int]:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT n FROM t ORDER BY rowid")
        return [n for (n,) in cursor.fetchall()]


def timed(fn: Any) -> float:
    started = time.monotonic()
    fn()
    return time.monotonic() - started


@pytest.mark.usefixtures("sqlite_file")
def test_a_writing_tool_waits_from_its_first_query() -> None:
    held = threading.Event()
    other = hold_the_write_lock(held, 0.8)
    waited = timed(lambda: read_then_write(tool_transaction(read_only=False, using=ALIAS)))
    other.join()
    assert waited >= 0.5 and rows() == [1, 2]

    def nested() -> None:  # the tool's own atomic() before its first query: a savepoint inside the held-back BEGIN
        with tool_transaction(read_only=False, using=ALIAS):
            read_then_write(transaction.atomic(using=ALIAS))

    held.clear()
    other = hold_the_write_lock(held, 0.8)
    waited = timed(nested)
    other.join()
    assert waited >= 0.5 and rows() == [1, 2, 1, 2]


@pytest.mark.usefixtures("sqlite_file")
def test_no_lock_before_the_first_query_nor_for_a_read_only_tool() -> None:
    held = threading.Event()
    other = hold_the_write_lock(held, 1.5)
    try:

        def no_query() -> None:
            with tool_transaction(read_only=False, using=ALIAS):
                time.sleep(0.01)

        def read_only() -> None:
            with tool_transaction(read_only=True, using=ALIAS), connections[ALIAS].cursor() as cursor:
                cursor.execute("SELECT count(*) FROM t")
                assert cursor.fetchone() == (0,)  # the other's insert is not committed

        assert timed(no_query) < 0.5
        assert timed(read_only) < 0.5
    finally:
        other.join()


@pytest.mark.usefixtures("sqlite_file")
def test_a_failing_tool_rolls_back_begun_or_not() -> None:
    class Refused(Exception):
        pass

    with pytest.raises(Refused), tool_transaction(read_only=False, using=ALIAS):
        raise Refused
    with pytest.raises(Refused), tool_transaction(read_only=False, using=ALIAS), connections[ALIAS].cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (3)")
        raise Refused
    assert rows() == []
    with tool_transaction(read_only=False, using=ALIAS), connections[ALIAS].cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (4)")
    assert rows() == [4] and not connections[ALIAS].in_atomic_block


@pytest.mark.parametrize("sqlite_file", [{"transaction_mode": "DEFERRED"}], indirect=True)
@pytest.mark.usefixtures("sqlite_file")
def test_a_configured_transaction_mode_is_kept() -> None:
    fails_while_another_writes(tool_transaction(read_only=False, using=ALIAS))


def test_a_tool_is_read_only_by_its_annotation() -> None:
    site = MCPServer("writelock")

    @site.tool(annotations={"readOnlyHint": True})
    def look() -> str:
        return ""

    @site.tool(annotations={"readOnlyHint": False, "destructiveHint": False})
    def change() -> str:
        return ""

    @site.tool
    def unsaid() -> str:
        return ""

    assert [site.tools[name].read_only for name in ("look", "change", "unsaid")] == [True, False, False]


@pytest.mark.usefixtures("sqlite_file")
def test_the_process_writers_take_turns_and_the_next_starts_at_once() -> None:
    """Two of this process's threads: the second writer waits on the turn, not in SQLite's sleep-and-retry."""
    held, events = threading.Event(), []

    def first() -> None:
        with write_transaction(using=ALIAS), connections[ALIAS].cursor() as cursor:
            cursor.execute("INSERT INTO t VALUES (1)")
            held.set()
            time.sleep(0.5)
            events.append(("first done", time.monotonic()))
        # The turn is given back only now, after the commit: its fsync may take long on a busy disk (283 ms seen).
        events.append(("first released", time.monotonic()))
        connections[ALIAS].close()

    def insert(n: int) -> None:
        with connections[ALIAS].cursor() as cursor:
            cursor.execute("INSERT INTO t VALUES (%s)", [n])

    thread = threading.Thread(target=first)
    thread.start()
    assert held.wait(5)
    with sqlite_writer(ALIAS):
        events.append(("second starts", time.monotonic()))
        serialized_write(insert, 2)  # reentrant: the same thread's turn again
    thread.join()
    times = dict(events)
    assert times["second starts"] >= times["first done"], events  # it waited for the first
    # ...and started as soon as the turn was given back (the first thread may note the moment after it)
    assert times["second starts"] - times["first released"] < 0.05, events
    assert rows() == [1, 2]


@pytest.mark.django_db(transaction=True)  # autocommit: inside the test's transaction no turn is taken
def test_only_sqlite_takes_a_turn() -> None:
    with sqlite_writer():
        lock = _locks.get("default")
        if connections["default"].vendor == "sqlite":
            assert lock is not None and lock._is_owned()  # type: ignore[attr-defined]
        else:
            assert lock is None  # PostgreSQL: nothing serialized in the process


@pytest.mark.usefixtures("sqlite_file")
def test_no_turn_is_taken_inside_a_transaction() -> None:
    """A thread inside a transaction (a sync tool's) never waits for the turn: it may hold SQLite's lock already."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with sqlite_writer(ALIAS):
            held.set()
            release.wait(1)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(5)

        def write_turn() -> None:
            with sqlite_writer(ALIAS):
                pass

        with transaction.atomic(using=ALIAS):
            assert timed(write_turn) < 0.5
        assert timed(write_turn) >= 0.5  # outside it, the turn is waited for (the holder keeps it for a second)
    finally:
        release.set()
        thread.join()
