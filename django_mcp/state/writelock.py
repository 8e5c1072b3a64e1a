"""``write_transaction()``: ``transaction.atomic()`` for a short read-then-write, safe on SQLite.

Why: SQLite has one writer. A transaction that reads first holds a shared lock; its first write
must then upgrade it, and if another connection wrote meanwhile (this package's audit writer, a
session, a task's heartbeat) SQLite refuses at once with "database is locked", without waiting
for the busy timeout (waiting could deadlock). ``BEGIN IMMEDIATE`` takes the write lock at the
start instead, waiting for it up to the ``timeout`` option. Only this package's own short
bookkeeping uses it. On other databases, and inside an atomic block, it is ``atomic()``.

Within one process, the package's own writes on SQLite (``write_transaction()``, ``serialized_write()``:
sessions, the audit writer) also take turns on a lock (``sqlite_writer()``): SQLite makes a writer that
finds the database locked sleep and retry (1, 2, 5, ... up to 100 ms a try), so threads of one process
writing at once waited far longer than the writes took (``initialize``'s p99 was 0.6 to 1.3 s at 16
connections); on a lock the next one starts as soon as the last ends.

``tool_transaction()`` is a sync tool's ``ATOMIC_TOOL_CALLS`` transaction: on SQLite it begins
at the tool's first query, ``IMMEDIATE`` unless the tool is read-only, so a tool that reads then
writes waits for the other writers instead of failing, and a tool that never queries takes no lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, transaction

R = TypeVar("R")

_locks: dict[str, threading.RLock] = {}
_locks_guard = threading.Lock()


def _writer_lock(alias: str) -> threading.RLock:
    lock = _locks.get(alias)
    if lock is None:
        with _locks_guard:
            lock = _locks.setdefault(alias, threading.RLock())
    return lock


@contextmanager
def sqlite_writer(using: str | None = None) -> Iterator[None]:
    """On SQLite, hold this process's write turn for database ``using``; elsewhere, nothing.

    Reentrant (a write inside another on the same thread). Not taken inside a transaction (a sync
    tool's reaching back into the loop for a session write runs on the tool's thread): that
    thread may hold SQLite's lock already, and waiting here for a writer that waits for it would
    stall both until a timeout. Waits at most the database's ``timeout`` option (Python's
    default, 5 s), then goes on without it: SQLite's own lock still decides, as before.
    """
    alias = using or DEFAULT_DB_ALIAS
    connection = connections[alias]
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        yield
        return
    lock = _writer_lock(alias)
    acquired = lock.acquire(timeout=float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 5)))
    try:
        yield
    finally:
        if acquired:
            lock.release()


def serialized_write(fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """``fn(*args, **kwargs)``, a single write statement of the package's (autocommit), in its SQLite turn."""
    with sqlite_writer():
        return fn(*args, **kwargs)


@contextmanager
def write_transaction(using: str | None = None) -> Iterator[None]:
    """``transaction.atomic(using)``, begun ``IMMEDIATE`` on SQLite when it is the outermost block."""
    connection = transaction.get_connection(using)
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        with transaction.atomic(using=using):
            yield
        return
    connection.ensure_connection()  # the mode is read from the connection's settings when it connects
    configured = connection.transaction_mode
    with sqlite_writer(using):
        connection.transaction_mode = "IMMEDIATE"
        try:
            with transaction.atomic(using=using):
                connection.transaction_mode = configured
                yield
        finally:
            connection.transaction_mode = configured


class _BeginAtFirstQuery:
    """An execute wrapper holding back ``atomic()``'s ``BEGIN`` until the first statement, then ``BEGIN IMMEDIATE``.

    Why not ``BEGIN IMMEDIATE`` at once: it takes SQLite's one write lock for the whole call, so
    sync tools that never query (or only read, unannotated) would run one at a time. Until the
    first statement nothing is open on the database; ``atomic()``'s commit or rollback of an
    empty transaction is a no-op for the driver.
    """

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = 0  # 0: atomic()'s BEGIN not seen yet, 1: held back, 2: begun (or not ours to hold)

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if self.state == 0 and sql == "BEGIN":  # anything else first: a Django that begins otherwise; run as it is
            self.state = 1
            return None
        if self.state == 1:
            execute("BEGIN IMMEDIATE", None, False, context)  # waits for the lock up to the ``timeout`` option
        self.state = 2
        return execute(sql, params, many, context)


@contextmanager
def tool_transaction(*, read_only: bool, using: str | None = None) -> Iterator[None]:
    """``transaction.atomic(using)`` for one sync tool call (``ATOMIC_TOOL_CALLS``: the default database).

    On SQLite, as the outermost block and with no ``transaction_mode`` in the database's
    ``OPTIONS`` (a project that sets one keeps it: ``"DEFERRED"`` opts out), the transaction
    begins at the tool's first query: ``IMMEDIATE`` for a tool not annotated ``readOnlyHint``,
    deferred for one that is (it never needs the write lock).
    """
    connection = transaction.get_connection(using)
    held_back = connection.vendor == "sqlite" and not read_only and not connection.in_atomic_block
    if held_back:
        connection.ensure_connection()  # the mode is read from the connection's settings when it connects
        held_back = connection.transaction_mode is None
    if not held_back:
        with transaction.atomic(using=using):
            yield
        return
    with connection.execute_wrapper(_BeginAtFirstQuery()), transaction.atomic(using=using):
        yield


__all__ = ["serialized_write", "sqlite_writer", "tool_transaction", "write_transaction"]
