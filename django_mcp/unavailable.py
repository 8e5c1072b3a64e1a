"""Temporary unavailability: the database, the channel layer or the event store is gone, or a pool is full.

Both are the server's trouble, not the request's: the client should simply try
again shortly. Before a response starts the transport answers HTTP 503 with
``Retry-After``; inside a request (a tool call, a read) they become a JSON-RPC
error that says so. ``database_error`` is the one place that decides which
database exceptions mean "unavailable".
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError

from .conf import mcp_settings
from .exceptions import MCPError
from .protocol import jsonrpc

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


class BackendUnavailable(Unavailable):
    """The channel layer or the event store (Redis) is down, or its connection pool is exhausted."""

    default_message = "Service unavailable: a backend cannot be reached, retry shortly"
    reason = "backend_unavailable"


class Busy(Unavailable):
    """Every sync worker stayed busy for ``SYNC_QUEUE_TIMEOUT`` seconds."""

    default_message = "Service busy: no worker thread became free in time, retry shortly"
    reason = "busy"


def database_error(exc: BaseException) -> DatabaseUnavailable | None:
    """``DatabaseUnavailable`` for an exception that means the database cannot serve now, else None.

    ``OperationalError`` (connection refused or lost, server shutting down, lock or
    statement timeouts) and ``InterfaceError`` (a connection already closed) are
    transient by nature; integrity or programming errors are bugs and stay what they are.
    """
    if isinstance(exc, DatabaseUnavailable):
        return exc
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("Database unavailable: %s: %s", type(exc).__name__, str(exc).strip()[:200])
        return DatabaseUnavailable()
    return None


def unavailable(exc: BaseException) -> Unavailable | None:
    """The ``Unavailable`` an exception stands for (itself, or a lost database), else None."""
    if isinstance(exc, Unavailable):
        return exc
    return database_error(exc)


__all__ = ["BackendUnavailable", "Busy", "DatabaseUnavailable", "Unavailable", "database_error", "unavailable"]
