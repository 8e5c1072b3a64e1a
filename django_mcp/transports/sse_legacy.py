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

from ..engine import engine, negotiate_initialize
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..routing import BROADCAST, hub, session_group
from ..sessions import SessionState, store
from .http import SSE_CT, HTTPError, MCPConsumer, sse_event


class SessionOutlet:
    """Sends everything belonging to a request onto the session's SSE stream, wherever it is."""

    def __init__(self, session_id: str) -> None:
        self.group = session_group(session_id)

    async def send(self, message: dict[str, Any]) -> None:
        await hub.publish(self.group, {"kind": "notify", "message": message})


class LegacySSEConsumer(MCPConsumer):
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
        listener = self._session_listener(session, queue)
        try:
            # Inside the try: a join the layer refuses (503) leaves no listener behind.
            await hub.join(session_group(session.id), listener)
            await hub.join(BROADCAST, listener)
            await self.send_headers(
                status=200,
                headers=[(b"content-type", SSE_CT), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")],
            )
            root = self.scope.get("root_path", "") + self.scope.get("path", "")
            endpoint = root.rstrip("/")[: -len("sse")] + f"messages/?session_id={session.id}"
            await self.safe_body(sse_event(endpoint.encode(), event="endpoint"), more=True)
            await self._pump_legacy(session, queue)
        finally:
            await hub.leave(session_group(session.id), listener)
            await hub.leave(BROADCAST, listener)
            # Closing the stream ends the session in this transport.
            await store.end(session.id)

    async def _pump_legacy(self, session: SessionState, queue: asyncio.Queue[Any]) -> None:
        from ..conf import mcp_settings

        watcher = asyncio.ensure_future(self._watch_disconnect(lambda: queue.put_nowait(None)))
        try:
            while self.connected:
                try:
                    item = await asyncio.wait_for(queue.get(), mcp_settings.SSE_KEEPALIVE)
                except asyncio.TimeoutError:
                    await self.safe_body(b": keep-alive\n\n", more=True)
                    continue
                if item is None:
                    break
                _kind, payload = item
                await self.safe_body(sse_event(jsonrpc.dumps(payload)), more=True)
        finally:
            watcher.cancel()
            await self.safe_body(b"")

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
        session = await self.load_session(sid)
        if session is None:
            raise HTTPError(404, jsonrpc.INVALID_REQUEST, "Session not found")
        body = await self.read_body()
        try:
            payload = jsonrpc.loads(body)
            message = jsonrpc.classify(payload)
        except ProtocolError as exc:
            raise HTTPError(400, exc.code, exc.message) from None
        await self.empty_response(202)
        outlet = SessionOutlet(session.id)
        if isinstance(message, jsonrpc.Request):
            response: dict[str, Any] | None
            if message.method == "initialize":
                response = await self.legacy_initialize(message, session)
            else:
                response = await engine.handle_request(
                    self.get_server(),
                    message,
                    session.revision,
                    session,
                    self.scope.get("user"),
                    outlet,
                    locale=self.header(b"accept-language"),
                    auth=self.scope.get("mcp_auth"),
                )
            if response is not None:
                await outlet.send(response)
        else:
            await self.absorb(message, session)

    async def legacy_initialize(self, message: jsonrpc.Request, session: SessionState) -> dict[str, Any]:
        try:
            revision, params = negotiate_initialize(message)
        except ProtocolError as exc:
            return jsonrpc.error_message(message.id, exc)
        session.revision = revision
        session.client_info = params.get("clientInfo") or {}
        session.client_capabilities = params.get("capabilities") or {}
        await store.update(
            session,
            protocol_version=revision,
            client_info=session.client_info,
            client_capabilities=session.client_capabilities,
        )
        server = self.get_server()
        return jsonrpc.result_message(
            message.id, engine.finalize("initialize", revision, server.initialize_result(revision))
        )


__all__ = ["LegacySSEConsumer"]
