"""The stdio transport: newline-delimited JSON-RPC on stdin/stdout, both eras.

A host (Claude Desktop, an IDE, the SDK's ``stdio_client``) spawns
``manage.py mcp_stdio`` and talks to it over its pipes, so stdout must carry
protocol messages and nothing else: ``protect_stdout`` moves file descriptor 1
to stderr before anything runs and keeps a private copy for the protocol.

The first request fixes the connection's era, as in the SDK's dual-era loop:
``initialize`` (or any request without the 2026 ``_meta`` envelope) makes it a
handshake connection with one ``MCPSession`` for the life of the process;
an enveloped request makes it a 2026-07-28 connection where each request
brings its own ``_meta``. Requests run concurrently, each in its own task, so a
slow tool never holds up ``ping`` or ``notifications/cancelled``.

Pipes are read and written by two daemon threads with raw ``os.read`` /
``os.write``: that works for pipes, files and terminals alike, never blocks
the event loop on a slow reader, and never blocks interpreter exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from django.contrib.auth.models import AnonymousUser

from ..auth.bearer import AuthInfo
from ..conf import mcp_settings
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..protocol.versions import LATEST_HANDSHAKE, STATELESS_REVISIONS
from ..runtime import dispatch
from ..runtime.dispatch import Caller, Rejected, has_envelope
from ..server import MCPServer, site
from ..state.hub import BROADCAST, hub, session_group
from ..state.notifications import session_notification
from ..state.sessions import SessionState, store

logger = logging.getLogger("django_mcp")

#: Seconds in-flight requests may still finish after stdin closes (``echo … | mcp_stdio`` gets its answer;
#: the SDK client itself sends SIGTERM 2 s after closing stdin).
SHUTDOWN_GRACE = 5.0
LEGACY = "legacy"
MODERN = "modern"


def protect_stdout() -> int:
    """Reserve stdout for the protocol and send everything else written there to stderr.

    Returns a private duplicate of the original stdout for protocol messages. File
    descriptor 1 is pointed at stderr, so ``print``, logging handlers bound to the
    old ``sys.stdout`` and child processes all land on stderr; output still sitting
    in ``sys.stdout``'s buffer (import-time prints) is flushed there too.
    """
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


def log_to_stderr(verbosity: int = 1) -> None:
    """Make sure warnings reach stderr even in a project without LOGGING (verbosity 2/3: info/debug)."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        if root.level == logging.NOTSET or root.level > logging.WARNING:
            root.setLevel(logging.WARNING)
    if verbosity >= 2:
        level = logging.DEBUG if verbosity >= 3 else logging.INFO
        logging.getLogger("django_mcp").setLevel(level)
        if root.level > level:
            root.setLevel(level)


def modern_revision(request: jsonrpc.Request) -> str:
    """A 2026-07-28 request's revision (stdio has no headers to check); ``initialize`` is refused (-32022)."""
    if request.method == "initialize":
        raise ProtocolError(
            jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
            "This connection serves the 2026-07-28 protocol; the initialize handshake is not accepted",
            {"supported": list(STATELESS_REVISIONS), "requested": (request.params or {}).get("protocolVersion")},
        )
    try:
        return dispatch.stateless_revision(request)
    except Rejected as exc:
        raise exc.error from None


class _Reader:
    """Feeds chunks of an input fd to the loop; b"" means end of input."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self.chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self._fd, self._loop = fd, loop
        threading.Thread(target=self._run, name="mcp-stdio-reader", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, 1 << 16)
            except OSError:
                chunk = b""
            try:
                self._loop.call_soon_threadsafe(self.chunks.put_nowait, chunk)
            except RuntimeError:  # the loop is gone: the process is exiting
                return
            if not chunk:
                return


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Writer:
    """Writes whole lines to an output fd in call order, off the event loop."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop, on_broken: Callable[[], None]) -> None:
        self._fd, self._loop, self._on_broken = fd, loop, on_broken
        self._queue: queue.SimpleQueue[tuple[bytes, asyncio.Future[None] | None] | None] = queue.SimpleQueue()
        self.broken = False
        self._thread = threading.Thread(target=self._run, name="mcp-stdio-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            data, future = item
            view = memoryview(data)
            try:
                while view and not self.broken:
                    view = view[os.write(self._fd, view) :]
            except OSError:
                self.broken = True
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._on_broken)
            if future is not None:
                try:
                    self._loop.call_soon_threadsafe(_settle, future)
                except RuntimeError:
                    return

    def put(self, message: Any) -> None:
        """Queue a message without waiting (for hub listeners, which are synchronous)."""
        self._queue.put((jsonrpc.dumps(message) + b"\n", None))

    async def write(self, message: Any) -> None:
        """Write a message and wait until it left, so a stalled client slows us down instead of filling memory."""
        future: asyncio.Future[None] = self._loop.create_future()
        self._queue.put((jsonrpc.dumps(message) + b"\n", future))
        await future

    async def close(self) -> None:
        future: asyncio.Future[None] = self._loop.create_future()
        self._queue.put((b"", future))
        self._queue.put(None)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(future, 2)


class StdoutOutlet:
    """Carries one request's notifications and server->client requests to stdout, as lines.

    Closed once the client cancels the request, so nothing more is written for it.
    """

    def __init__(self, writer: _Writer) -> None:
        self.writer = writer
        self.closed = False
        self.listen_id: jsonrpc.RequestId | None = None

    async def send(self, message: dict[str, Any]) -> None:
        if not self.closed:
            await self.writer.write(message)


class StdioTransport:
    """Serves one client on a pair of file descriptors until end of input or ``stop()``."""

    def __init__(
        self,
        server: MCPServer,
        user: Any,
        input_fd: int = 0,
        output_fd: int = 1,
        scopes: frozenset[str] | None = None,
        client_id: str = "",
        token: Any = None,
    ) -> None:
        self.server = server
        self.user = user
        # A token's scopes and client (``DJANGO_MCP_TOKEN``); None: the user's full rights (``--user``).
        self.client_id = client_id
        self.auth: Any = None
        if scopes is not None:
            self.auth = AuthInfo(user=user, client_id=client_id, scopes=scopes, token=token)
        self.caller = Caller(user, self.auth, client_id, transport="stdio")
        self.input_fd, self.output_fd = input_fd, output_fd
        self.era: str | None = None
        self.session: SessionState | None = None
        self.running: dict[jsonrpc.RequestId, tuple[asyncio.Task[Any], StdoutOutlet]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping: asyncio.Event | None = None
        self._writer: _Writer | None = None

    @property
    def writer(self) -> _Writer:
        assert self._writer is not None, "serve() is not running"
        return self._writer

    def stop(self) -> None:
        """End serving now: in-flight requests are cancelled (SIGTERM, broken stdout, session ended)."""
        if self._stopping is not None:
            self._stopping.set()

    # -- main loop -------------------------------------------------------------------
    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._writer = _Writer(self.output_fd, loop, self.stop)
        reading = loop.create_task(self._read_lines(_Reader(self.input_fd, loop)))
        stopping = loop.create_task(self._stopping.wait())
        try:
            await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if reading.done() and not reading.cancelled() and reading.exception() is not None:
                logger.error("MCP stdio: reading stdin failed", exc_info=reading.exception())
            elif reading.done() and not self._stopping.is_set():
                await self._drain()
        finally:
            reading.cancel()
            stopping.cancel()
            await self._shutdown()

    async def _read_lines(self, reader: _Reader) -> None:
        limit = mcp_settings.MAX_BODY_SIZE
        buf = bytearray()
        skipping = False  # inside an oversized line: drop bytes up to its newline
        while True:
            chunk = await reader.chunks.get()
            if not chunk:
                if buf and not skipping:
                    await self._line(bytes(buf))
                return
            buf += chunk
            while True:
                end = buf.find(b"\n")
                if end < 0:
                    break
                line = bytes(buf[:end])
                del buf[: end + 1]
                if skipping:
                    skipping = False
                elif len(line) > limit:
                    await self._too_large(limit)
                else:
                    await self._line(line)
            if len(buf) > limit and not skipping:
                skipping = True
                await self._too_large(limit)
            if skipping:
                buf.clear()

    async def _too_large(self, limit: int) -> None:
        err = ProtocolError(jsonrpc.INVALID_REQUEST, f"Message larger than {limit} bytes (MAX_BODY_SIZE)")
        await self.writer.write(jsonrpc.error_message(None, err))

    async def _line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            payload = jsonrpc.loads(line)
        except ProtocolError as exc:
            await self.writer.write(jsonrpc.error_message(None, exc))
            return
        if isinstance(payload, list):
            self._spawn(self._batch(payload))
            return
        try:
            message = jsonrpc.classify(payload)
        except ProtocolError as exc:
            await self.writer.write(jsonrpc.error_message(jsonrpc.id_of(payload), exc))
            return
        if isinstance(message, jsonrpc.Request):
            await self._request(message)
        else:
            await self._absorb(message)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- requests --------------------------------------------------------------------
    async def _request(self, request: jsonrpc.Request) -> None:
        if self.era is None:
            modern = request.method != "initialize" and has_envelope(request.params)
            self.era = MODERN if modern else LEGACY
        if request.id in self.running:
            err = ProtocolError(jsonrpc.INVALID_REQUEST, f"Request id {request.id!r} is already in flight")
            await self.writer.write(jsonrpc.error_message(request.id, err))
        elif self.era == LEGACY and request.method == "initialize":
            # Inline, not in a task: requests pipelined behind initialize must find the session.
            await self.writer.write(await self._initialize(request))
        else:
            self._start(request, reply=True)

    def _start(self, request: jsonrpc.Request, reply: bool) -> asyncio.Task[dict[str, Any] | None]:
        outlet = StdoutOutlet(self.writer)
        task = self._spawn(self._respond(request, outlet, reply))
        self.running[request.id] = (task, outlet)

        def done(_task: asyncio.Task[Any]) -> None:
            if self.running.get(request.id, (None,))[0] is task:
                del self.running[request.id]

        task.add_done_callback(done)
        return task

    async def _respond(self, request: jsonrpc.Request, outlet: StdoutOutlet, reply: bool) -> dict[str, Any] | None:
        try:
            response = await self._answer(request, outlet)
        except asyncio.CancelledError:
            return None  # cancelled by the client or by shutdown: no response
        except Exception:
            logger.exception("MCP stdio request %s failed", request.method)
            response = jsonrpc.error_message(request.id, ProtocolError(jsonrpc.INTERNAL_ERROR, "Internal error"))
        if response is None or outlet.closed:
            return None
        if reply:
            await self.writer.write(response)
        return response

    async def _answer(self, request: jsonrpc.Request, outlet: StdoutOutlet) -> dict[str, Any] | None:
        try:
            if self.era == MODERN:
                revision = modern_revision(request)
                if request.method == "subscriptions/listen":
                    await self._listen(request, outlet, revision)
                    return None
                return await dispatch.handle(self.server, request, revision, None, self.caller, outlet)
            if has_envelope(request.params):
                raise ProtocolError(
                    jsonrpc.INVALID_REQUEST,
                    "This connection serves the handshake protocol era; "
                    "requests carrying the 2026-07-28 envelope are not accepted on it",
                )
            if request.method == "initialize":  # only inside a batch
                raise ProtocolError(jsonrpc.INVALID_REQUEST, "initialize cannot be batched")
            if self.session is None:
                if request.method == "ping":  # the one request allowed before initialization
                    return jsonrpc.result_message(request.id, {})
                raise ProtocolError(jsonrpc.INVALID_REQUEST, "Server not initialized: send initialize first")
            session = self.session
            return await dispatch.handle(self.server, request, session.revision, session, self.caller, outlet)
        except ProtocolError as exc:
            return jsonrpc.error_message(request.id, exc)
        except Rejected as exc:  # refused at the door (a scope the token lacks): the error, without a status
            return exc.message()

    async def _initialize(self, request: jsonrpc.Request) -> dict[str, Any]:
        if self.session is not None:
            return jsonrpc.error_message(request.id, ProtocolError(jsonrpc.INVALID_REQUEST, "Already initialized"))
        try:
            session, response = await dispatch.initialize(self.server, request, self.caller)
        except Rejected as exc:
            return exc.message()
        except Exception:
            logger.exception("MCP stdio: could not create the session (is the database migrated?)")
            return jsonrpc.error_message(request.id, ProtocolError(jsonrpc.INTERNAL_ERROR, "Internal error"))
        self.session = session
        await hub.join(BROADCAST, self._on_hub)
        await hub.join(session_group(session.id), self._on_hub)
        return response

    async def _batch(self, items: list[Any]) -> None:
        """2025-03-26 batches: run the requests concurrently, answer them in one array."""
        try:
            responses = await dispatch.batch(items, self.session, self._run_batched, self.cancel)
        except Rejected as exc:
            await self.writer.write(exc.message())
            return
        if responses:
            await self.writer.write(responses)

    async def _run_batched(self, request: jsonrpc.Request) -> dict[str, Any] | None:
        if request.id in self.running:
            err = ProtocolError(jsonrpc.INVALID_REQUEST, f"Request id {request.id!r} is already in flight")
            return jsonrpc.error_message(request.id, err)
        task = self._start(request, reply=False)
        await asyncio.wait({task})  # a request the client cancels answers nothing; the batch goes on
        return task.result() if not task.cancelled() and task.exception() is None else None

    # -- notifications and responses from the client ----------------------------------
    async def _absorb(self, message: jsonrpc.Notification | jsonrpc.Response) -> None:
        if self.era == MODERN:
            revision = STATELESS_REVISIONS[-1]
        else:
            revision = self.session.revision if self.session else LATEST_HANDSHAKE
        await dispatch.absorb(message, self.session, revision, self.cancel)

    async def cancel(self, request_id: Any) -> None:
        """Cancel a running request: its task stops and nothing more is sent for it."""
        running = self.running.get(request_id)
        if running is None:
            return
        task, outlet = running
        outlet.closed = True
        if self.session is None or not await dispatch.cancel_here(self.session.id, request_id):
            task.cancel()

    # -- server-initiated messages -------------------------------------------------------
    def _on_hub(self, payload: dict[str, Any]) -> None:
        """Handshake era: list changes, subscribed resource updates and session pushes go to stdout."""
        session = self.session
        if session is None:
            return
        message = session_notification(session, payload)
        if message is not None:
            self.writer.put(message)
        elif payload.get("kind") == "session_ended" and payload.get("session", session.id) == session.id:
            logger.warning("MCP stdio: session %s was ended elsewhere; exiting", session.id[:8])
            self.stop()

    async def _listen(self, request: jsonrpc.Request, outlet: StdoutOutlet, revision: str) -> None:
        """2026-07-28 ``subscriptions/listen``: acknowledge, then forward opted-in changes until cancelled."""
        listening = await dispatch.listen_filter(self.server, request, revision, self.caller)
        outlet.listen_id = request.id
        await listening.listen(outlet.send)

    # -- shutdown --------------------------------------------------------------------------
    async def _drain(self) -> None:
        """End of input: let requests in flight finish for a while (listen streams never do)."""
        assert self._stopping is not None
        listening = {t for t, o in self.running.values() if o.listen_id is not None}
        pending = self._tasks - listening
        if not pending:
            return
        stopping = asyncio.get_running_loop().create_task(self._stopping.wait())
        try:
            await asyncio.wait({*pending, stopping}, timeout=SHUTDOWN_GRACE, return_when=asyncio.ALL_COMPLETED)
        finally:
            stopping.cancel()

    async def _shutdown(self) -> None:
        for task, outlet in list(self.running.values()):
            if outlet.listen_id is not None and not outlet.closed and not self.writer.broken:
                # On stdio the server ends a listen stream with notifications/cancelled (2026-07-28).
                self.writer.put(
                    jsonrpc.notification_message(
                        "notifications/cancelled", {"requestId": outlet.listen_id, "reason": "server shutting down"}
                    )
                )
            outlet.closed = True
            task.cancel()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        session = self.session
        if session is not None:
            await hub.leave(BROADCAST, self._on_hub)
            await hub.leave(session_group(session.id), self._on_hub)
            try:
                await store.end(session.id, "stdio")
            except Exception:
                logger.exception("MCP stdio: could not mark session %s ended", session.id[:8])
        await self.writer.close()
        # While the loop still runs: a Redis layer's receive cancelled by asyncio.run's teardown never ends,
        # and the process would hang after "exiting".
        await hub.stop()


def serve(
    server: MCPServer | None = None,
    user: Any = None,
    *,
    output_fd: int | None = None,
    scopes: frozenset[str] | None = None,
    client_id: str = "",
    token: Any = None,
) -> None:
    """Run the stdio transport in this process until the client closes stdin (or SIGTERM/SIGINT).

    ``user`` is who every request runs as (``AnonymousUser`` when None); ``scopes``,
    ``client_id`` and ``token`` (its stored row) are those of the access token it came
    with, if any: the tasks it creates follow that token's revocation. Pass the
    ``output_fd`` from ``protect_stdout`` if it was already called; otherwise it is
    called here.
    """
    if server is None:
        server = site
    if user is None:
        user = AnonymousUser()
    fd = protect_stdout() if output_fd is None else output_fd
    transport = StdioTransport(server, user, input_fd=0, output_fd=fd, scopes=scopes, client_id=client_id, token=token)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, transport.stop)
        try:
            await transport.serve()
        finally:
            # Before asyncio.run closes the loop: a Redis layer's receive cancelled by a closing loop never
            # ends, and the process would hang at the end of its input.
            await hub.stop()

    asyncio.run(main())


__all__ = ["SHUTDOWN_GRACE", "StdioTransport", "log_to_stderr", "protect_stdout", "serve"]
