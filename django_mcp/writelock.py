"""``write_transaction()``: ``transaction.atomic()`` for a short read-then-write, safe on SQLite.

Why: SQLite has one writer. A transaction that reads first holds a shared lock; its first write
must then upgrade it, and if another connection wrote meanwhile (this package's audit writer, a
session, a task's heartbeat) SQLite refuses at once with "database is locked", without waiting
for the busy timeout (waiting could deadlock). ``BEGIN IMMEDIATE`` takes the write lock at the
start instead, waiting for it up to the ``timeout`` option. Only this package's own short
bookkeeping uses it: a tool's transaction (``ATOMIC_TOOL_CALLS``) stays deferred, or sync tools
would run one at a time. On other databases, and inside an atomic block, it is ``atomic()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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


__all__ = ["write_transaction"]
