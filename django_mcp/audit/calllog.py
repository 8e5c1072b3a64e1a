"""One log line per audited call on the ``django_mcp.calls`` logger, its facts also as ``extra``.

The message reads well in a console (``tools/call add ok 2.1 ms user=3 client=- session=1a2b3c4d
transport=http``); the same facts ride on the ``LogRecord`` as flat ``mcp_*`` attributes, so a JSON
formatter (python-json-logger, structlog's stdlib bridge, ...) emits them as fields and a plain
``Formatter`` can name them (``%(mcp_target)s``). Nothing is built while the logger is off for INFO,
which is the default (Django configures no ``django_mcp`` logger).
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .middleware import Entry

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


#: Longest client-chosen value (a tool name, a URI, a client id) a line carries.
MAX_VALUE = 512
#: A value the message shows as it is: no space, quote, backslash or ``=`` that would blur its fields.
_PLAIN = re.compile(r"[^\s\"'\\=]+\Z")


def shown(value: str | None) -> str:
    """A client-chosen value in the message: as it is when plain, else JSON-quoted (a newline cannot forge a line)."""
    if not value:
        return "-"
    value = value[:MAX_VALUE]
    return value if value.isprintable() and _PLAIN.match(value) else json.dumps(value)


def safe(value: str | None) -> str | None:
    """A client-chosen value as an ``extra`` attribute: unprintable characters escaped, for plain formatters too."""
    if not value:
        return None
    value = value[:MAX_VALUE]
    return value if value.isprintable() else json.dumps(value)[1:-1]


def enabled() -> bool:
    return logger.isEnabledFor(logging.INFO)


def extra(entry: Entry) -> dict[str, Any]:
    """The line's facts as ``LogRecord`` attributes; absent ones are None (JSON null), never ""."""
    return {
        "mcp_method": safe(entry.method),
        "mcp_target": safe(entry.target),
        "mcp_outcome": entry.outcome,
        "mcp_error_code": entry.error_code,
        "mcp_http_status": entry.http_status,
        "mcp_duration_ms": round(entry.duration_ms, 3),
        "mcp_user_id": entry.user_id,
        "mcp_client_id": safe(entry.client_id),
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
        shown(entry.method),
        shown(entry.target),
        outcome,
        entry.duration_ms,
        entry.user_id if entry.user_id is not None else "-",
        shown(entry.client_id),
        entry.session or "-",
        entry.transport,
        f" task={entry.task_id}" if entry.task_id else "",
        extra=extra(entry),
    )


__all__ = ["FIELDS", "emit", "enabled", "extra", "logger", "safe", "shown"]
