"""``write_transaction()``: ``transaction.atomic()`` for a short read-then-write, safe on SQLite.

Why: SQLite has one writer. A transaction that reads first holds a shared lock; its first write
must then upgrade it, and if another connection wrote meanwhile (this package's audit writer, a
session, a task's heartbeat) SQLite refuses at once with "database is locked", without waiting
for the busy timeout (waiting could deadlock). ``BEGIN IMMEDIATE`` takes the write lock at the
start instead, waiting for it up to the ``timeout`` option. Only this package's own short
bookkeeping uses it. On other databases, and inside an atomic block, it is ``atomic()``.

``tool_transaction()`` is a sync tool's ``ATOMIC_TOOL_CALLS`` transaction: on SQLite it begins
at the tool's first query, ``IMMEDIATE`` unless the tool is read-only, so a tool that reads then
writes waits for the other writers instead of failing, and a tool that never queries takes no lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction


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
        if self.state == 2:
            return execute(sql, params, many, context)
        if self.state == 0:
            self.state = 1 if sql == "BEGIN" else 2  # anything else: a Django that begins otherwise; run as it is
            if self.state == 1:
                return None
            return execute(sql, params, many, context)
        self.state = 2
        execute("BEGIN IMMEDIATE", None, False, context)  # waits for the lock up to the ``timeout`` option
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
    if connection.vendor != "sqlite" or read_only or connection.in_atomic_block:
        with transaction.atomic(using=using):
            yield
        return
    connection.ensure_connection()  # the mode is read from the connection's settings when it connects
    if connection.transaction_mode is not None:
        with transaction.atomic(using=using):
            yield
        return
    with connection.execute_wrapper(_BeginAtFirstQuery()), transaction.atomic(using=using):
        yield


__all__ = ["tool_transaction", "write_transaction"]
