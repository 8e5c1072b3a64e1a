"""One log line per audited call on the ``django_mcp.calls`` logger, its facts also as ``extra``.

The message reads well in a console (``tools/call add ok 2.1 ms user=3 client=- session=1a2b3c4d
transport=http``); the same facts ride on the ``LogRecord`` as flat ``mcp_*`` attributes, so a JSON
formatter (python-json-logger, structlog's stdlib bridge, ...) emits them as fields and a plain
``Formatter`` can name them (``%(mcp_target)s``). Nothing is built while the logger is off for INFO,
which is the default (Django configures no ``django_mcp`` logger).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .audit import Entry

logger = logging.getLogger("django_mcp.calls")

#: The ``extra`` attributes each line carries (documented in docs/operations.md).
FIELDS = (
    "mcp_method",
    "mcp_target",
    "mcp_outcome",
    "mcp_error_code",
    "mcp_http_status",
    "mcp_duration_ms",
    "mcp_user_id",
    "mcp_client_id",
    "mcp_session",
    "mcp_transport",
    "mcp_revision",
    "mcp_task_id",
    "mcp_request_bytes",
    "mcp_response_bytes",
)


def enabled() -> bool:
    return logger.isEnabledFor(logging.INFO)


def extra(entry: Entry) -> dict[str, Any]:
    """The line's facts as ``LogRecord`` attributes; absent ones are None (JSON null), never ""."""
    return {
        "mcp_method": entry.method,
        "mcp_target": entry.target or None,
        "mcp_outcome": entry.outcome,
        "mcp_error_code": entry.error_code,
        "mcp_http_status": entry.http_status,
        "mcp_duration_ms": round(entry.duration_ms, 3),
        "mcp_user_id": entry.user_id,
        "mcp_client_id": entry.client_id or None,
        "mcp_session": entry.session or None,
        "mcp_transport": entry.transport,
        "mcp_revision": entry.revision or None,
        "mcp_task_id": entry.task_id or None,
        "mcp_request_bytes": entry.request_bytes,
        "mcp_response_bytes": entry.response_bytes,
    }


def emit(entry: Entry) -> None:
    outcome = entry.outcome if entry.error_code is None else f"{entry.outcome} {entry.error_code}"
    logger.info(
        "%s %s %s %.1f ms user=%s client=%s session=%s transport=%s%s",
        entry.method,
        entry.target or "-",
        outcome,
        entry.duration_ms,
        entry.user_id if entry.user_id is not None else "-",
        entry.client_id or "-",
        entry.session or "-",
        entry.transport,
        f" task={entry.task_id}" if entry.task_id else "",
        extra=extra(entry),
    )


__all__ = ["FIELDS", "emit", "enabled", "extra", "logger"]
