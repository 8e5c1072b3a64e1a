"""What the HTTP transports share: the HTTP error, SSE framing, stream slots and one keep-alive pump.

Streamable HTTP (GET streams, resumed POST streams, ``subscriptions/listen``) and the
2024-11-05 HTTP+SSE transport all hold an SSE response open and feed it from a queue;
``pump`` is that loop, written once: keep-alive comments while idle, the end on ``None``
(the session ended, the client left, the worker drains), and the closing empty body.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

from ..conf import mcp_settings
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..runtime.dispatch import Rejected
from ..runtime.drain import drain

JSON_CT = b"application/json"
SSE_CT = b"text/event-stream"
SSE_HEADERS = [(b"content-type", SSE_CT), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]
KEEP_ALIVE = b": keep-alive\n\n"
#: Statuses whose replies carry no body and so no ``Content-Length`` (RFC 9110): every other buffered reply
#: says its length, so that the server writes it in one piece rather than chunked (docs/performance.md).
BODILESS = frozenset({204, 304})

#: Long-lived streams (GET, resumed POST, listen) this worker process holds open (``MAX_STREAMS``).
_open_streams = 0


class HTTPError(Rejected):
    """Ends the exchange with an HTTP status, a JSON-RPC error body and optional headers."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        data: Any = None,
        request_id: Any = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(status, ProtocolError(code, message, data), request_id, headers)


def sse_event(data: bytes, eid: str | None = None, event: str = "message") -> bytes:
    head = f"id: {eid}\nevent: {event}\n" if eid else f"event: {event}\n"
    return head.encode() + b"data: " + data + b"\n\n"


def open_streams() -> int:
    """What the health endpoint reports as this worker's open streams."""
    return _open_streams


@contextlib.contextmanager
def stream_slot() -> Iterator[None]:
    """Hold one of this worker's ``MAX_STREAMS`` long-lived streams (GET, resumed POST, listen).

    Over the limit: 503 with ``Retry-After`` before anything is sent. The slot is given back
    first on the way out, so a cancellation during cleanup cannot leak it.
    """
    global _open_streams
    if _open_streams >= mcp_settings.MAX_STREAMS:
        retry_after = [(b"retry-after", str(mcp_settings.UNAVAILABLE_RETRY_AFTER).encode())]
        raise HTTPError(503, jsonrpc.INTERNAL_ERROR, "Service Unavailable: too many open streams", headers=retry_after)
    _open_streams += 1
    try:
        yield
    finally:
        _open_streams -= 1


def ended_by_drain(queue: asyncio.Queue[Any]) -> Callable[[], None]:
    """Register a stream's queue to end when the worker drains (at once if it already does)."""

    def drained() -> None:  # shutting down: end the stream; the client resumes on another worker
        queue.put_nowait(None)

    drain.on_drain(drained)
    if drain.draining:  # the drain began while the stream was opening
        drained()
    return drained


class StreamWriter(Protocol):
    """The side of a consumer a pump writes to."""

    connected: bool

    async def safe_body(self, body: bytes, more: bool = False) -> None: ...

    async def watch_disconnect(self, on_disconnect: Callable[[], None] | None = None) -> None: ...


async def pump(
    writer: StreamWriter,
    queue: asyncio.Queue[Any],
    emit: Callable[[Any], Awaitable[bool | None]],
    *,
    tick: float | None = None,
    on_tick: Callable[[], Awaitable[bool]] | None = None,
    drains: bool = True,
) -> None:
    """Feed an open SSE response from ``queue`` until it ends, then close the body.

    ``emit`` writes one item and returns True when that was the stream's last. ``None`` on the
    queue ends the stream (the session ended, the client left, or, with ``drains``, the worker
    shuts down and the client resumes elsewhere). Idle, a keep-alive comment goes out every
    ``SSE_KEEPALIVE`` seconds; with ``tick``, ``on_tick`` is asked that often whether the stream
    has ended by other means (a resumed POST stream polling its store).
    """
    keepalive = mcp_settings.SSE_KEEPALIVE
    wait = keepalive if tick is None else tick
    quiet = 0.0
    watcher = asyncio.ensure_future(writer.watch_disconnect(lambda: queue.put_nowait(None)))
    drained = ended_by_drain(queue) if drains else None
    try:
        while writer.connected:
            try:
                item = await asyncio.wait_for(queue.get(), wait)
            except asyncio.TimeoutError:
                if on_tick is not None and await on_tick():
                    return
                quiet += wait
                if quiet >= keepalive:
                    quiet = 0.0
                    await writer.safe_body(KEEP_ALIVE, more=True)
                continue
            if item is None or await emit(item):
                return
    finally:
        if drained is not None:
            drain.discard(drained)
        watcher.cancel()
        await writer.safe_body(b"")


__all__ = [
    "JSON_CT",
    "SSE_CT",
    "SSE_HEADERS",
    "HTTPError",
    "StreamWriter",
    "ended_by_drain",
    "open_streams",
    "pump",
    "sse_event",
    "stream_slot",
]
