"""The telemetry middleware: OpenTelemetry for every request through the door, when ``TELEMETRY`` is on.

Listed first in ``DEFAULT_MIDDLEWARE`` so that its span covers the other middleware and every
refusal. Off (the default) it raises ``MiddlewareNotUsed``: it is left out of the chain and nothing
of OpenTelemetry is imported, so it costs nothing. On, the spans and metrics themselves are made by
``operations.otel``, the one module that imports ``opentelemetry`` (the ``otel`` extra). It also
records ``mcp.server.session.duration`` as sessions end (``sessions.session_ended``), and lets a new
task keep the creating span's context (``tasks.store.trace_carrier``) so its runs link to it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.core.exceptions import MiddlewareNotUsed

from ..conf import mcp_settings
from ..middleware import Call, CallNext
from ..models import MCPSession
from ..state.sessions import EndedSession, session_ended
from ..tasks import store as task_store

if TYPE_CHECKING:
    from .otel import Instruments

logger = logging.getLogger("django_mcp")

#: What to install when the ``TELEMETRY`` setting is on and OpenTelemetry is missing.
INSTALL_HINT = 'pip install "django-mcp-toolkit[otel]" (opentelemetry-api), or set DJANGO_MCP["TELEMETRY"] = False'


class Telemetry:
    """One ``SERVER`` span and one ``mcp.server.operation.duration`` measurement per request."""

    keeps_replies = True  # never edits a reply an inner middleware returned (Call.encode)

    def __init__(self, call_next: CallNext) -> None:
        if not mcp_settings.TELEMETRY:
            raise MiddlewareNotUsed
        instruments = install()
        if instruments is None:  # reported by check E186 too; serve without telemetry rather than fail
            logger.error("django_mcp: TELEMETRY is on but OpenTelemetry is not installed: %s", INSTALL_HINT)
            raise MiddlewareNotUsed
        self.call_next = call_next
        self.observe = instruments.observe

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        return await self.observe(call, self.call_next)


_instruments: Instruments | None = None


def instruments() -> Instruments | None:
    """The tracer, meter and histograms (made once), or None when ``opentelemetry`` cannot be imported."""
    global _instruments
    if _instruments is None:
        try:
            from . import otel  # reason: imports opentelemetry, which must stay unimported while telemetry is off
        except ImportError:
            return None
        _instruments = otel.Instruments()
    return _instruments


def install() -> Instruments | None:
    """Connect what telemetry records outside the chain (sessions ending, tasks created); idempotent.

    Called when the middleware is built and by ``DjangoMCPConfig.ready()`` when ``TELEMETRY`` is on,
    so processes that serve no request (``mcp_cleanup``, the admin) record session ends too.
    """
    found = instruments()
    if found is not None:
        session_ended.connect(_sessions_ended, sender=MCPSession, dispatch_uid="django_mcp.telemetry")
        task_store.trace_carrier = _carrier
    return found


def _sessions_ended(sender: Any, sessions: list[EndedSession], reason: str, transport: str | None, **kw: Any) -> None:
    found = instruments() if mcp_settings.TELEMETRY else None
    if found is not None:
        found.sessions_ended(sessions, reason, transport)


def _carrier() -> dict[str, str]:
    found = instruments() if mcp_settings.TELEMETRY else None
    return found.carrier() if found is not None else {}


__all__ = ["INSTALL_HINT", "Telemetry", "install", "instruments"]
