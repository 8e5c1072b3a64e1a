"""Temporary unavailability: the database, the channel layer or the event store is gone, or a pool is full.

The exceptions live in ``django_mcp.exceptions`` with the other refusals (``Unavailable`` is a
``Refused``: 503 with ``Retry-After`` before a response starts, a JSON-RPC error inside a
request); this module keeps the import path, and ``database_error``, the one place that
decides which database exceptions mean "unavailable".
"""

from __future__ import annotations

from ..exceptions import (
    BackendUnavailable,
    Busy,
    DatabaseNotMigrated,
    DatabaseUnavailable,
    Unavailable,
    database_error,
    schema_missing,
    unavailable,
)

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
