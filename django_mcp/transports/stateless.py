"""The 2026-07-28 (stateless) side of the HTTP endpoint, mixed into ``MCPConsumer``.

Every request carries its own ``_meta`` envelope and mirrors method, name and
version into headers; there is no session. The envelope and header checks are
the dispatch path's (``dispatch.stateless_revision``); what is left here is HTTP:
a single message per body, 202 for notifications, and ``subscriptions/listen``,
a long-lived SSE stream fed from the hub.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import dispatch
from ..engine import Exchange
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..routing import hub
from ..subscriptions import ListenFilter
from .base import SSE_CT, SSE_HEADERS, HTTPError, pump, sse_event, stream_slot

if TYPE_CHECKING:
    from ..server import MCPServer
    from ..sessions import SessionState


class StatelessMixin:
    """``MCPConsumer``'s methods for requests that carry ``MCP-Protocol-Version: 2026-07-28``."""

    if TYPE_CHECKING:  # what the consumer provides
        scope: dict[str, Any]
        connected: bool

        def header(self, name: bytes) -> str | None: ...
        def accepts(self, *types: bytes) -> bool: ...
        def get_server(self) -> MCPServer: ...
        async def empty_response(self, status: int, extra: list[tuple[bytes, bytes]] | None = None) -> None: ...
        async def send_headers(self, *, status: int = 200, headers: Any = None) -> None: ...
        async def safe_body(self, body: bytes, more: bool = False) -> None: ...
        async def watch_disconnect(self, on_disconnect: Callable[[], None] | None = None) -> None: ...
        async def run_request(
            self,
            request: jsonrpc.Request,
            session: SessionState | None,
            revision: str | None = None,
            cancel_on_close: bool = False,
            target: Any = dispatch.UNSET,
        ) -> None: ...

    def looks_stateless(self, payload: Any) -> bool:
        """No version header: modern only if the body carries the modern envelope and no session."""
        if self.header(b"mcp-session-id") is not None or not isinstance(payload, dict):
            return False
        return dispatch.has_envelope(payload.get("params"))

    async def handle_stateless_post(self, payload: Any, version: str | None) -> None:
        header = self.header
        incoming = dispatch.stateless_request(payload, version, lambda name: header(name.encode()), self.get_server())
        if incoming is None:
            await self.empty_response(202)
            return
        message, revision, target = incoming
        if message.method == "subscriptions/listen":
            await self.listen(message, revision)
            return
        await self.run_request(message, None, revision=revision, cancel_on_close=True, target=target)

    async def listen(self, request: jsonrpc.Request, revision: str) -> None:
        """A ``subscriptions/listen`` stream: acknowledgement first, then the opted-in notifications."""
        if not self.accepts(SSE_CT):
            raise HTTPError(
                406, jsonrpc.INVALID_REQUEST, "Not Acceptable: subscriptions/listen needs text/event-stream"
            )
        listen_filter = ListenFilter(request)
        server = self.get_server()
        user, auth = self.scope.get("user"), self.scope.get("mcp_auth")
        try:
            await listen_filter.restrict(server, Exchange(server, request, revision, None, user, None, auth=auth))
        except ProtocolError as exc:  # task ids from a client without the tasks extension: -32021
            status = dispatch.status_for({"error": {"code": exc.code}})
            raise HTTPError(status, exc.code, exc.message, exc.data, request.id) from None
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def on_broadcast(payload: dict[str, Any]) -> None:
            message = listen_filter.notification_for(payload)
            if message is not None:
                queue.put_nowait(message)

        async def emit(item: dict[str, Any]) -> bool:
            await self.safe_body(sse_event(jsonrpc.dumps(item)), more=True)
            return False

        with stream_slot():
            joined: list[str] = []
            try:
                for group in listen_filter.groups:
                    await hub.join(group, on_broadcast)
                    joined.append(group)
                await self.send_headers(status=200, headers=SSE_HEADERS)
                await self.safe_body(sse_event(jsonrpc.dumps(listen_filter.acknowledgement())), more=True)
                await pump(self, queue, emit)  # a drain ends it: the client listens again on another worker
            finally:
                for group in joined:
                    await hub.leave(group, on_broadcast)


__all__ = ["StatelessMixin"]
