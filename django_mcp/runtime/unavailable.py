"""Temporary unavailability: the database, the channel layer or the event store is gone, or a pool is full.

Both are the server's trouble, not the request's: the client should simply try
again shortly. Before a response starts the transport answers HTTP 503 with
``Retry-After``; inside a request (a tool call, a read) they become a JSON-RPC
error that says so. ``database_error`` is the one place that decides which
database exceptions mean "unavailable".
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError, ProgrammingError

from ..conf import mcp_settings
from ..exceptions import MCPError
from ..protocol import jsonrpc

logger = logging.getLogger("django_mcp")


class Unavailable(MCPError):
    """Retry later: a JSON-RPC error inside a request, HTTP 503 with ``Retry-After`` before one."""

    code = jsonrpc.INTERNAL_ERROR
    default_message = "Service unavailable, retry shortly"
    reason = "unavailable"

    def __init__(self, message: str | None = None, retry_after: int | None = None) -> None:
        self.retry_after = int(retry_after if retry_after is not None else mcp_settings.UNAVAILABLE_RETRY_AFTER)
        super().__init__(message, {"reason": self.reason, "retryable": True, "retryAfter": self.retry_after})

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(b"retry-after", str(self.retry_after).encode())]


class DatabaseUnavailable(Unavailable):
    default_message = "Service unavailable: the database cannot be reached, retry shortly"
    reason = "database_unavailable"


class DatabaseNotMigrated(DatabaseUnavailable):
    """A table or column the code queries does not exist: ``migrate`` has not run, or not all of it.

    Still 503 (the server cannot serve), but retrying will not help until an operator migrates: no
    ``Retry-After``, ``retryable`` false. The missing table is logged, never told to the client.
    """

    default_message = "Service unavailable: the database is not migrated (run manage.py migrate)"
    reason = "database_not_migrated"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message)
        self.data = {"reason": self.reason, "retryable": False}

    def headers(self) -> list[tuple[bytes, bytes]]:
        return []


class BackendUnavailable(Unavailable):
    """The channel layer or the event store (Redis) is down, or its connection pool is exhausted."""

    default_message = "Service unavailable: a backend cannot be reached, retry shortly"
    reason = "backend_unavailable"


class Busy(Unavailable):
    """Every sync worker stayed busy for ``SYNC_QUEUE_TIMEOUT`` seconds."""

    default_message = "Service busy: no worker thread became free in time, retry shortly"
    reason = "busy"


#: What each backend says for a missing table or column: SQLite's message, PostgreSQL's SQLSTATE
#: (undefined_table, undefined_column), MySQL's error numbers (ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR).
_SQLITE_MISSING = ("no such table:", "no such column:")
_PG_MISSING = frozenset({"42P01", "42703"})
_MYSQL_MISSING = frozenset({1146, 1054})
#: The missing tables already logged by this process (bounded): one clear line each, not one per request.
_logged_missing: set[str] = set()


def schema_missing(exc: BaseException) -> bool:
    """Whether ``exc`` is the database saying a table or column does not exist (migrations not applied)."""
    if not isinstance(exc, (OperationalError, ProgrammingError)):
        return False
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) in _PG_MISSING or getattr(cause, "pgcode", None) in _PG_MISSING:
        return True
    args = getattr(cause, "args", None) or exc.args
    if args and isinstance(args[0], int) and args[0] in _MYSQL_MISSING:
        return True
    return str(exc).startswith(_SQLITE_MISSING)


def database_error(exc: BaseException) -> DatabaseUnavailable | None:
    """``DatabaseUnavailable`` for an exception that means the database cannot serve now, else None.

    ``OperationalError`` (connection refused or lost, server shutting down, lock or
    statement timeouts) and ``InterfaceError`` (a connection already closed) are
    transient by nature; integrity or programming errors are bugs and stay what they are,
    except a missing table or column: ``DatabaseNotMigrated``.
    """
    if isinstance(exc, DatabaseUnavailable):
        return exc
    if schema_missing(exc):
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        if detail not in _logged_missing and len(_logged_missing) < 100:
            _logged_missing.add(detail)
            logger.error("Database not migrated (%s): run manage.py migrate", detail)
        return DatabaseNotMigrated()
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("Database unavailable: %s: %s", type(exc).__name__, str(exc).strip()[:200])
        return DatabaseUnavailable()
    return None


def unavailable(exc: BaseException) -> Unavailable | None:
    """The ``Unavailable`` an exception stands for (itself, or a lost database), else None."""
    if isinstance(exc, Unavailable):
        return exc
    return database_error(exc)


__all__ = [
    "BackendUnavailable",
    "Busy",
    "DatabaseNotMigrated",
    "DatabaseUnavailable",
    "Unavailable",
    "database_error",
    "schema_missing",
    "unavailable",
]
