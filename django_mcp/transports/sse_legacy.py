"""The 2024-11-05 HTTP+SSE transport, for clients that predate Streamable HTTP.

GET ``<endpoint>sse/`` opens the stream; its first event, ``endpoint``, names the
URL to POST messages to (``<endpoint>messages/?session_id=…``). Each POST is
answered ``202 Accepted``; responses and notifications travel on the stream. The
stream and the POSTs may reach different workers: everything for the stream is
published to the session's group on the channel layer.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..runtime import dispatch
from ..runtime.drain import release
from ..state.hub import BROADCAST, Listener, hub, session_group
from ..state.notifications import session_notification
from ..state.sessions import SessionState, store
from .base import SSE_CT, SSE_HEADERS, HTTPError, pump, sse_event
from .http import MCPConsumer


class LegacyStreamOutlet:
    """Carries a request's messages, its response included, to the session's 2024-11-05 SSE stream.

    Published to the session's group: the stream may be held by another worker.
    """

    def __init__(self, session_id: str) -> None:
        self.group = session_group(session_id)

    async def send(self, message: dict[str, Any]) -> None:
        await hub.publish(self.group, {"kind": "notify", "message": message})


def _stream_listener(session: SessionState, queue: asyncio.Queue[Any]) -> Listener:
    """What the stream carries: every message for the session as it comes (no resumption here)."""

    def on_message(payload: dict[str, Any]) -> None:
        if payload.get("kind") == "session_ended" and payload.get("session", session.id) == session.id:
            queue.put_nowait(None)
            return
        message = session_notification(session, payload)
        if message is not None:
            queue.put_nowait(("message", message))

    return on_message


class LegacySSEConsumer(MCPConsumer):
    transport = "sse"

    async def dispatch_http(self, method: str) -> None:
        self.check_origin()
        await self.authenticate()
        path = self.scope.get("path", "")
        if method == "GET" and path.rstrip("/").endswith("/sse"):
            await self.open_stream()
        elif method == "POST" and path.rstrip("/").endswith("/messages"):
            await self.post_message()
        else:
            await self.json_response(
                405,
                jsonrpc.error_message(None, ProtocolError(jsonrpc.INVALID_REQUEST, f"Method {method} not allowed")),
                [(b"allow", b"GET" if path.rstrip("/").endswith("/sse") else b"POST")],
            )

    async def open_stream(self) -> None:
        if not self.accepts(SSE_CT):
            raise HTTPError(406, jsonrpc.INVALID_REQUEST, "Not Acceptable: Accept must include text/event-stream")
        # The session exists from the moment the stream opens; initialize fills in the revision.
        auth = self.scope.get("mcp_auth")
        session = await store.create(
            "2024-11-05", {}, {}, self.scope.get("user"), auth.client_id if auth is not None else ""
        )
        queue: asyncio.Queue[Any] = asyncio.Queue()
        listener = _stream_listener(session, queue)
        try:
            # Inside the try: a join the layer refuses (503) leaves no listener behind.
            await hub.join(session_group(session.id), listener)
            await hub.join(BROADCAST, listener)
            await self.send_headers(status=200, headers=SSE_HEADERS)
            root = self.scope.get("root_path", "") + self.scope.get("path", "")
            endpoint = root.rstrip("/")[: -len("sse")] + f"messages/?session_id={session.id}"
            await self.safe_body(sse_event(endpoint.encode(), event="endpoint"), more=True)
            await self._pump_legacy(session, queue)
        finally:
            await hub.leave(session_group(session.id), listener)
            await hub.leave(BROADCAST, listener)
            # Closing the stream ends the session in this transport.
            await store.end(session.id, self.transport)

    async def _pump_legacy(self, session: SessionState, queue: asyncio.Queue[Any]) -> None:
        async def emit(item: tuple[str, dict[str, Any]]) -> bool:
            await self.safe_body(sse_event(jsonrpc.dumps(item[1])), more=True)
            return False

        # Not ended by a drain: this transport cannot resume, and closing the stream ends the session.
        # So it does not hold the drain either: it lasts until the server itself stops.
        release(self.scope)
        await pump(self, queue, emit, drains=False)

    async def post_message(self) -> None:
        ctype = (self.header(b"content-type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise HTTPError(
                415, jsonrpc.INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"
            )
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        sid = (query.get("session_id") or query.get("sessionId") or [None])[0]
        if not sid:
            raise HTTPError(400, jsonrpc.INVALID_REQUEST, "Bad Request: session_id is required")
        caller = self.caller()
        session = await dispatch.find_session(sid, caller)
        message = dispatch.classify(dispatch.parse(await self.read_body()))
        await self.empty_response(202)
        outlet = LegacyStreamOutlet(session.id)
        if isinstance(message, jsonrpc.Request):
            response: dict[str, Any] | None
            if message.method == "initialize":
                try:
                    response = (await dispatch.initialize(self.get_server(), message, caller, session))[1]
                except dispatch.Rejected as exc:
                    response = exc.message()
            else:
                try:
                    response = await dispatch.handle(
                        self.get_server(), message, session.revision, session, caller, outlet
                    )
                except dispatch.Rejected as exc:  # answered 202 already: the refusal goes on the stream
                    response = exc.message()
            if response is not None:
                await outlet.send(response)
        else:
            await dispatch.absorb(message, session, session.revision)


__all__ = ["LegacySSEConsumer"]
