"""Graceful shutdown: a process-wide "draining" state entered on SIGTERM.

Left alone, daphne cancels every application task the moment Twisted's reactor
stops, and uvicorn cancels whatever outlives ``--timeout-graceful-shutdown``; a
cancelled call then ended in an empty ``202``. Instead, the first SIGTERM starts
draining: new requests and GET streams get ``503`` with ``Retry-After`` and
``Connection: close``, open GET streams end (the client reconnects elsewhere with
``Last-Event-ID``), calls in flight get up to ``SHUTDOWN_GRACE`` seconds to finish,
and whatever still runs then is cancelled and answers a retryable error (except a
sync tool, whose thread cannot be stopped: it keeps its real answer). Only then is
the server's own handler called, so the server stops as it always did. A second
SIGTERM goes straight to the server's handler.

The handler is chained in front of the server's on the first request (servers install
theirs when they start, after the application is imported).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from .conf import mcp_settings
from .protocol import jsonrpc
from .protocol.jsonrpc import ProtocolError

logger = logging.getLogger("django_mcp")

#: Seconds a client is asked to wait before retrying elsewhere (another worker can serve it now).
RETRY_AFTER = 1
#: ``Retry-After`` and ``Connection: close`` for answers given while draining.
HEADERS: list[tuple[bytes, bytes]] = [(b"retry-after", str(RETRY_AFTER).encode()), (b"connection", b"close")]
#: How long cancelled calls get to write their retryable error before the server stops.
_ANSWER_WINDOW = 2.0


def _sync_tool(exchange: Any) -> bool:
    """Whether a call in flight runs a sync tool (in a thread, which cancelling the task does not stop)."""
    if exchange.method != "tools/call":
        return False
    tool = exchange.target
    return tool is not None and not tool.is_async


def shutdown_error(request_id: Any = None) -> dict[str, Any]:
    """The JSON-RPC error for a call the server did not complete because it is shutting down."""
    error = ProtocolError(
        jsonrpc.INTERNAL_ERROR,
        "Server shutting down: the request was not completed, retry it",
        {"reason": "shutdown", "retryable": True, "retryAfter": RETRY_AFTER},
    )
    return jsonrpc.error_message(request_id, error)


class Drain:
    """The draining state of this worker process and the SIGTERM handler that enters it."""

    def __init__(self) -> None:
        self.draining = False
        self.since = 0.0
        self._installed = False
        self._previous: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_drain: set[Callable[[], None]] = set()
        self._task: asyncio.Task[None] | None = None

    # -- installation -----------------------------------------------------------------
    def install(self) -> None:
        """Chain the SIGTERM handler in front of the server's (once; needs the main thread's loop)."""
        if self._installed:
            return
        self._installed = True
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread (e.g. a test's server thread)
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, self._signal)

    def _signal(self, signum: int, frame: FrameType | None) -> None:
        if self.draining or self._loop is None or self._loop.is_closed():
            self._chain(signum, frame)  # a second signal: the server's own (forced) shutdown
            return
        self._loop.call_soon_threadsafe(self.start, signum)

    def _chain(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL or previous is None:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    # -- draining ---------------------------------------------------------------------
    def start(self, signum: int | None = None) -> None:
        """Enter the draining state; with ``signum``, hand over to the server once drained."""
        if self.draining:
            return
        self.draining = True
        self.since = time.monotonic()
        logger.info("django_mcp: draining (%s requests in flight)", self.in_flight())
        for callback in list(self._on_drain):
            try:
                callback()
            except Exception:
                logger.exception("django_mcp: drain callback failed")
        if signum is not None:
            self._task = asyncio.get_running_loop().create_task(self._drain(signum))

    def on_drain(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when draining starts (an open stream ends itself); ``discard`` when done."""
        self._on_drain.add(callback)

    def discard(self, callback: Callable[[], None]) -> None:
        self._on_drain.discard(callback)

    def in_flight(self) -> int:
        from .engine import engine

        return len(engine.running)

    async def _drain(self, signum: int) -> None:
        from .engine import engine

        deadline = self.since + float(mcp_settings.SHUTDOWN_GRACE)
        while engine.running and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        left = [task for task, ex in engine.running.items() if not _sync_tool(ex)]
        if left:
            logger.warning("django_mcp: %d calls outlived SHUTDOWN_GRACE; answering them retryable", len(left))
            for task in left:
                task.cancel()
            until = time.monotonic() + _ANSWER_WINDOW
            while any(task in engine.running for task in left) and time.monotonic() < until:
                await asyncio.sleep(0.02)
        if engine.running:
            # A sync tool cannot be stopped: its thread runs on (and the process waits for it at exit
            # anyway). Answering "not completed" while it may still commit would invite a duplicate,
            # so it keeps its real answer; the process manager's kill timeout is the bound.
            logger.warning("django_mcp: waiting for %d sync tool calls past SHUTDOWN_GRACE", len(engine.running))
            while engine.running:
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)  # let the last answers reach the sockets
        logger.info("django_mcp: drained; handing over to the server")
        self._chain(signum, None)

    def reset(self) -> None:
        """Leave the draining state (tests running several servers in one process)."""
        self.draining = False
        self.since = 0.0


drain = Drain()

__all__ = ["HEADERS", "RETRY_AFTER", "Drain", "drain", "shutdown_error"]
