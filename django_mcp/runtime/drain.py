"""Graceful shutdown: a process-wide "draining" state entered on SIGTERM.

Left alone, daphne cancels every application task the moment Twisted's reactor
stops, and uvicorn cancels whatever outlives ``--timeout-graceful-shutdown``; a
cancelled call then ended in an empty ``202``. Instead, the first SIGTERM starts
draining. The worker stops listening (``django_mcp.runtime.sockets``): a proxy's next
connection is refused and goes to another worker, with nothing sent, so nginx may
resend even a POST. Requests that still arrive on connections already open are
served, answered with ``Connection: close`` so the proxy opens no more of them here.
Open GET streams end (the client reconnects elsewhere with ``Last-Event-ID``), calls in
flight get up to ``SHUTDOWN_GRACE`` seconds to finish, and whatever still runs then is
cancelled and answers a retryable error (except a sync tool, whose thread cannot be
stopped: it keeps its real answer). The worker hands over to the server's own handler
once nothing is in flight and no request has come for ``SHUTDOWN_QUIET`` seconds: by
then the proxy has closed its idle connections to this worker itself, so the server
closing them cannot cross a request on its way in. A second SIGTERM goes straight to
the server's handler.

Under a server whose listening sockets cannot be reached, the worker refuses new
requests and GET streams with ``503``, ``Retry-After`` and ``Connection: close``
instead, and hands over as soon as the calls in flight are done.

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

from ..conf import mcp_settings
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from .engine import engine
from .sockets import listeners_of, stop_listening

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
        #: The server's listening sockets are closed: new connections go to other workers.
        self.stopped_listening = False
        #: HTTP requests this process is serving (``DrainMiddleware``) and when the last one came.
        self.requests = 0
        self.last_request = 0.0
        self._installed = False
        self._previous: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_drain: set[Callable[[], None]] = set()
        self._task: asyncio.Task[None] | None = None
        self._closing: asyncio.Task[None] | None = None  # the server's listening sockets being closed

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
        self.since = self.last_request = time.monotonic()
        if signum is not None:
            try:
                found = listeners_of(self._previous)
            except Exception:
                logger.exception("django_mcp: could not find the server's sockets; refusing new requests instead")
                found = []
            if found:
                self.stopped_listening = True
                self._closing = asyncio.get_running_loop().create_task(stop_listening(found))
        logger.info(
            "django_mcp: draining (%s requests in flight, %s)",
            self.in_flight(),
            "stopped listening" if self.stopped_listening else "refusing new requests",
        )
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

    @property
    def refusing(self) -> bool:
        """Whether new requests are refused (503): draining while the server still accepts connections."""
        return self.draining and not self.stopped_listening

    def in_flight(self) -> int:
        return len(engine.running)

    # -- HTTP requests (DrainMiddleware) ------------------------------------------------------
    def request_started(self) -> None:
        self.requests += 1
        self.last_request = time.monotonic()

    def request_finished(self) -> None:
        self.requests -= 1

    def _settled(self) -> bool:
        """Nothing left to wait for: no call, no HTTP request, and (listening stopped) a quiet spell.

        The quiet spell outlasts the proxy's keep-alive to this worker: the proxy closes its idle
        connections here first, so the server closing them at the hand-over meets no request.
        """
        if engine.running or self.requests > 0:
            return False
        if not self.stopped_listening:
            return True
        if self._closing is not None and not self._closing.done():
            return False
        return time.monotonic() - self.last_request >= float(mcp_settings.SHUTDOWN_QUIET)

    async def _drain(self, signum: int) -> None:
        deadline = self.since + float(mcp_settings.SHUTDOWN_GRACE)
        while not self._settled() and time.monotonic() < deadline:
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
        self.stopped_listening = False
        self._closing = None


drain = Drain()


class DrainMiddleware:
    """ASGI middleware around the whole application: what the drain must know of every HTTP request.

    Counts the requests in flight (the project's own views too) and when the last one came;
    a request arriving while the worker drains is answered with ``Connection: close``, so the
    proxy that sent it does not reuse the connection. ``django_mcp.asgi.get_asgi_application``
    puts it outermost; wrap your own router with it if you build one.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        drain.install()
        drain.request_started()
        held = _Held()
        try:
            if drain.draining:
                send = _closing(send)
            await self.inner({**scope, "django_mcp.runtime.drain": held}, receive, send)
        finally:
            held.release()


class _Held:
    """One request counted in flight, released once (at its end, or earlier by a stream that outlives drains)."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            drain.request_finished()


def release(scope: dict[str, Any]) -> None:
    """Stop counting this request: a stream that stays open until the server stops must not hold the drain."""
    held = scope.get("django_mcp.runtime.drain")
    if isinstance(held, _Held):
        held.release()


def _closing(send: Any) -> Any:
    async def send_closing(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(k.lower() == b"connection" for k, _v in headers):
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await send(message)

    return send_closing


__all__ = ["HEADERS", "RETRY_AFTER", "Drain", "DrainMiddleware", "drain", "release", "shutdown_error"]
