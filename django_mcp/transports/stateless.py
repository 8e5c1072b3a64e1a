"""The 2026-07-28 (stateless) side of the HTTP endpoint, mixed into ``MCPConsumer``.

Every request carries its own ``_meta`` envelope and mirrors method, name and
version into headers; there is no session. The envelope and header checks are
the dispatch path's (``dispatch.stateless_revision``), the era choice and the 202
for notifications ``transports.streamable``'s; what is left here is
``subscriptions/listen``, a long-lived SSE stream fed from the hub.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..runtime import dispatch
from .base import SSE_CT, SSE_HEADERS, HTTPError, pump, sse_event, stream_slot

if TYPE_CHECKING:
    from ..server import MCPServer


class StatelessMixin:
    """``MCPConsumer``'s methods for requests that carry ``MCP-Protocol-Version: 2026-07-28``."""

    if TYPE_CHECKING:  # what the consumer provides
        scope: dict[str, Any]
        connected: bool

        def header(self, name: bytes) -> str | None: ...
        def accepts(self, *types: bytes) -> bool: ...
        def get_server(self) -> MCPServer: ...
        def caller(self) -> dispatch.Caller: ...
        async def empty_response(self, status: int, extra: list[tuple[bytes, bytes]] | None = None) -> None: ...
        async def send_headers(self, *, status: int = 200, headers: Any = None) -> None: ...
        async def safe_body(self, body: bytes, more: bool = False) -> None: ...
        async def watch_disconnect(self, on_disconnect: Callable[[], None] | None = None) -> None: ...

    async def listen(self, request: jsonrpc.Request, revision: str) -> None:
        """A ``subscriptions/listen`` stream: acknowledgement first, then the opted-in notifications."""
        if not self.accepts(SSE_CT):
            raise HTTPError(
                406, jsonrpc.INVALID_REQUEST, "Not Acceptable: subscriptions/listen needs text/event-stream"
            )
        try:
            listening = await dispatch.listen_filter(self.get_server(), request, revision, self.caller())
        except ProtocolError as exc:  # task ids from a client without the tasks extension: -32021
            status = dispatch.status_for({"error": {"code": exc.code}})
            raise HTTPError(status, exc.code, exc.message, exc.data, request.id) from None
        opened = False

        async def emit(message: dict[str, Any]) -> bool:
            nonlocal opened
            if not opened:  # the acknowledgement: the groups are joined, the response starts
                opened = True
                await self.send_headers(status=200, headers=SSE_HEADERS)
            await self.safe_body(sse_event(jsonrpc.dumps(message)), more=True)
            return False

        with stream_slot():
            # A drain ends the stream: the client listens again on another worker.
            await listening.listen(emit, lambda queue: pump(self, queue, emit))


__all__ = ["StatelessMixin"]
