"""``write_transaction``: a read-then-write on SQLite waits for another writer instead of failing.

Real SQLite files and two real connections (two threads): one holds the write lock for a while,
the other reads and then writes. Plain ``atomic()`` fails with "database is locked" (what the
OAuth registration view answered as a 500 while the audit writer was inserting); the package's
``write_transaction()`` waits and writes.
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

from django_mcp.writelock import write_transaction

ALIAS = "writelock"


@pytest.fixture
def sqlite_file(tmp_path: Path, django_db_blocker: Any) -> Iterator[str]:
    """An alias of its own on a SQLite file, outside any test transaction (two connections must really meet)."""
    django_db_blocker.unblock()
    settings = connections.settings
    own = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "lock.sqlite3"), "OPTIONS": {"timeout": 10}}
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


@pytest.mark.usefixtures("sqlite_file")
def test_plain_atomic_fails_and_write_transaction_waits() -> None:
    held = threading.Event()
    other = hold_the_write_lock(held, 0.8)
    try:
        with pytest.raises(OperationalError, match="locked"):
            read_then_write(transaction.atomic(using=ALIAS))
    finally:
        other.join()

    held.clear()
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
