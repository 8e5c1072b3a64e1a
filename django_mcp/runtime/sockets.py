"""Stop this worker process accepting connections, so that a proxy sends new requests elsewhere.

A draining worker that still accepts connections keeps getting its share of new requests
from a proxy without active health checks (open-source nginx), and can only refuse them:
the client sees the 503. A worker that has stopped listening makes the proxy's connect
fail (refused); nginx then sends the request to another worker, even a POST, since
nothing of it was sent. Requests on connections already open are still served.

Closing a listening socket resets the connections the kernel has completed but the server
not yet accepted, and a proxy may have sent a request on one: nginx answers that POST 502.
So on Linux the socket first stops completing new handshakes (a socket filter drops
incoming SYNs: the client's kernel sends its SYN again a second later, and finds the port
closed), the server accepts what is queued, and only then is the socket closed. The filter
is taken off just before, in case another process (gunicorn's master) shares the socket.

The server is the one whose SIGTERM handler the drain chains in front of: uvicorn's
``Server.handle_exit`` (also under gunicorn's ``uvicorn_worker``) owns the asyncio servers
it listens with, and daphne's Twisted reactor (``reactor.sigTerm``) its listening ports.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("django_mcp")

#: Socket options of Linux: a classic BPF filter on a socket.
_SO_ATTACH_FILTER, _SO_DETACH_FILTER = 26, 27
#: Drop a segment with SYN set and ACK clear (a new connection); let everything else through.
#: Offsets are from the TCP header, where a socket filter of a TCP socket starts.
_SYN_DROP = ctypes.create_string_buffer(
    b"".join(
        struct.pack("HBBI", *insn)
        for insn in (
            (0x30, 0, 0, 13),  # ldb [13]            the flags byte
            (0x45, 2, 0, 0x10),  # jset #ACK         -> accept
            (0x45, 0, 1, 0x02),  # jset #SYN         -> drop, else accept
            (0x06, 0, 0, 0),  # ret #0               drop
            (0x06, 0, 0, 0xFFFFFFFF),  # ret #-1     accept
        )
    )
)
_PROGRAM = struct.pack("HP", 5, ctypes.addressof(_SYN_DROP))
#: How long the server gets to accept the connections already queued.
SETTLE = 1.0


@dataclass
class Listener:
    """One listening socket of the server, and how the server itself stops listening on it."""

    socket: Any
    close: Callable[[], None]


def listeners_of(handler: Any) -> list[Listener]:
    """The listening sockets of the server that installed ``handler`` (empty for a server not known here)."""
    owner = getattr(handler, "__self__", None)
    if owner is None:
        return []
    servers = getattr(owner, "servers", None)  # uvicorn.Server: the asyncio servers it serves on
    if isinstance(servers, list) and servers and all(callable(getattr(s, "close", None)) for s in servers):
        return [Listener(sock, server.close) for server in servers for sock in (server.sockets or ())]
    readers = getattr(owner, "getReaders", None)  # a Twisted reactor (daphne)
    if not callable(readers):
        return []
    try:
        from twisted.internet.interfaces import IListeningPort  # reason: only under a Twisted server
    except ImportError:  # pragma: no cover - a reactor without Twisted cannot be
        return []
    return [Listener(port.socket, _twisted_close(port)) for port in readers() if IListeningPort.providedBy(port)]


def _twisted_close(port: Any) -> Callable[[], None]:
    def close() -> None:
        port.stopListening()  # Twisted closes the socket on its next turn: close it now, not a turn later
        port.socket.close()

    return close


async def stop_listening(listeners: list[Listener]) -> None:
    """Stop completing handshakes, let the server accept what is queued, then close each socket."""
    held = [listener for listener in listeners if _hold(listener.socket)]
    deadline = time.monotonic() + SETTLE
    empty = 0
    while held and empty < 2 and time.monotonic() < deadline:  # twice empty, 10 ms apart: no handshake under way
        empty = 0 if any(_queued(listener.socket) for listener in held) else empty + 1
        await asyncio.sleep(0.01)
    for listener in listeners:
        if listener in held:
            _release(listener.socket)
        try:
            listener.close()
        except Exception:  # the server's own shutdown closes it in the end
            logger.exception("django_mcp: could not close a listening socket")


def _hold(sock: Any) -> bool:
    """Drop new SYNs on ``sock`` (Linux, TCP); whether it could."""
    if sys.platform != "linux" or getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, _PROGRAM)
    except (OSError, TypeError, ValueError):
        return False
    return True


def _queued(sock: Any) -> int:
    """Connections completed and not yet accepted (``tcpi_unacked`` of a listening socket's ``TCP_INFO``)."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    except (OSError, AttributeError):
        return 0
    return int(struct.unpack_from("I", info, 24)[0])


def _release(sock: Any) -> None:
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_DETACH_FILTER, 0)
    except OSError:
        pass


__all__ = ["SETTLE", "Listener", "listeners_of", "stop_listening"]
