"""Streamable HTTP on a Channels ``AsyncHttpConsumer``: both eras on one URL.

POST carries JSON-RPC. A request is answered with ``application/json`` unless
its handler emits something first (progress, a log, a server->client request):
then the response turns into an SSE stream whose last event is the result.
GET opens a session's standalone SSE stream or resumes one with
``Last-Event-ID``; DELETE ends a session. Requests carrying
``MCP-Protocol-Version: 2026-07-28`` are stateless and need no session.

The consumer moves bytes and runs streams: what a request comes to (status, headers,
body, or a request to run) is ``transports.streamable``'s, shared with the WSGI view;
what a resumable stream carries and when it ends is ``transports.resumable``'s. It
reads the body itself (to refuse oversized bodies before buffering them) and watches
for the client going away while a request runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from channels.generic.http import AsyncHttpConsumer

from ..conf import mcp_settings
from ..protocol import jsonrpc
from ..runtime import dispatch
from ..runtime.dispatch import Caller, Rejected
from ..runtime.drain import drain, shutdown_error
from ..runtime.timers import Later, uncancel
from ..server import MCPServer
from ..state.sessions import SessionState
from . import browsable, guards, resumable, streamable
from .base import SSE_CT, HTTPError
from .stateless import StatelessMixin
from .streamable import VERSION_HEADER, Answer, Run

#: Requests still running after 10 ms start watching for the client going away.
_slow = Later(0.01)


class ClientGone(Exception):
    """The client hung up before its request body arrived: nothing to answer, nothing to log."""


class MCPConsumer(StatelessMixin, AsyncHttpConsumer):  # type: ignore[misc]  # channels ships no type hints
    """The MCP endpoint. ``MCPConsumer.as_asgi(server=my_server)`` mounts another server."""

    server: MCPServer | None = None
    #: ``Call.transport`` of this consumer's requests.
    transport = "http"

    def __init__(self, *args: Any, server: MCPServer | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if server is not None:
            self.server = server
        self.connected = True
        self.responded = False
        self._headers: dict[bytes, bytes] = {}
        self._caller: Caller | None = None

    def get_server(self) -> MCPServer:
        if self.server is None:
            return dispatch.default_site()
        return self.server

    # -- ASGI entry -------------------------------------------------------------------
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope = scope
        self.base_send = send
        self._receive = receive
        raw = scope.get("headers", ())
        headers = {k.lower(): v for k, v in raw}
        if len(headers) != len(raw):  # a repeated header: several Accept lines count together
            headers = {}
            for k, v in raw:
                k = k.lower()
                headers[k] = headers[k] + b", " + v if k in headers and k in (b"accept",) else v
        self._headers = headers
        drain.install()
        try:
            await self.dispatch_http(scope["method"])
        except ClientGone:
            # Not an error of ours or the client's (wrk ending a run, a host timing out): raised into the
            # server, it would log "Exception in ASGI application" with a traceback for each one.
            return
        except asyncio.CancelledError:
            # Shutdown cancelled work that had not answered yet (a batch): a retryable 503, not silence.
            if not drain.draining or self.responded or not self.connected:
                raise
            uncancel(asyncio.current_task())
            await self.write(streamable.draining())
        except Exception as exc:  # noqa: BLE001 - a refusal, a challenge, or logged by guards.failure (503/500)
            answer = streamable.failed(exc)
            with contextlib.suppress(Exception):
                await self.write(answer)

    def header(self, name: bytes) -> str | None:
        value = self._headers.get(name)
        if value is None:
            return None
        try:
            return value.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes any byte
            return None

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.responded = True
        await self.base_send(message)

    async def safe_body(self, body: bytes, more: bool = False) -> None:
        if not self.connected:
            return
        try:
            await self.send_body(body, more_body=more)
        except Exception:  # noqa: BLE001 - the connection went away under us, whatever the server raised
            self.connected = False

    async def write(self, answer: Answer) -> None:
        """A whole reply from ``streamable``, with its Content-Length: the server writes it in one piece."""
        # What send_headers/send_body do, minus a layer of coroutines each.
        await self.send({"type": "http.response.start", "status": answer.status, "headers": answer.headers})
        if self.connected:
            try:
                await self.send({"type": "http.response.body", "body": answer.body})
            except Exception:  # noqa: BLE001 - the connection went away under us, as in safe_body
                self.connected = False

    async def json_response(self, status: int, payload: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        await self.write(streamable.json_answer(status, payload, extra))

    async def error_response(self, exc: Rejected) -> None:
        await self.write(streamable.refused(exc))

    async def empty_response(self, status: int, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        await self.write(streamable.empty_answer(status, extra))

    # -- routing by HTTP method ---------------------------------------------------------
    async def dispatch_http(self, method: str) -> None:
        if browsable.wants_page(method, self._headers):  # a browser's GET or form POST: the project's page
            await browsable.handler(self.get_server())(self.scope, self._receive, self.base_send)
            return
        self.check_origin()
        if method != "OPTIONS":
            await self.authenticate()
        if method == "POST":
            await self.handle_post()
        elif method == "GET":
            await self.handle_get()
        elif method == "DELETE":
            await self.handle_delete()
        elif method == "OPTIONS":
            await self.empty_response(204, [(b"allow", b"GET, POST, DELETE, OPTIONS")])
        else:
            raise guards.method_not_allowed(method)

    def check_origin(self) -> None:
        guards.check_origin(self.scope, self._headers)

    async def authenticate(self) -> None:
        """With ``AUTH = "oauth"``: a valid bearer token or a 401/403 challenge (django_mcp.auth)."""
        await guards.authenticate(self.scope, self._headers)

    def caller(self) -> Caller:
        """Who sends this request: what ``authenticate`` recorded in the scope, and the language (made once per
        request, after ``authenticate``: the core and the run both ask)."""
        caller = self._caller
        if caller is None:
            auth = self.scope.get("mcp_auth")
            language = self.header(b"accept-language")
            caller = Caller.authenticated(self.scope.get("user"), auth, language, self.scope, self.transport)
            self._caller = caller
        return caller

    def accepts(self, *types: bytes) -> bool:
        return guards.accepts(self._headers, *types)

    async def read_body(self) -> bytes:
        limit = mcp_settings.MAX_BODY_SIZE
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.connected = False
                raise ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise guards.too_large()
            if not message.get("more_body"):
                return chunk if not chunks else b"".join((*chunks, chunk))
            chunks.append(chunk)

    async def watch_disconnect(self, on_disconnect: Any = None) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.connected = False
                if on_disconnect is not None:
                    on_disconnect()
                return

    # -- POST -----------------------------------------------------------------------------
    async def handle_post(self) -> None:
        guards.check_post(self._headers)  # 415, 406, and 413 for a declared length over the limit
        body = await self.read_body()
        outcome = await streamable.post(self.get_server(), self._headers, body, self.caller(), self.run_batched)
        if isinstance(outcome, Answer):
            await self.write(outcome)
        elif outcome.stateless and outcome.request.method == "subscriptions/listen":
            await self.listen(outcome.request, outcome.revision)
        else:
            await self.run_request(outcome)

    async def run_batched(self, request: jsonrpc.Request, session: SessionState) -> dict[str, Any] | None:
        """One request of a batch: answered inside the batch's JSON array, never streamed."""
        return await dispatch.handle(self.get_server(), request, session.revision, session, self.caller())

    async def run_request(self, run: Run) -> None:
        """Run one request; answer JSON, or SSE if the handler emitted something first.

        The handler runs in this consumer's own task (no task per request); a client's
        cancellation cancels this task while the handler runs, and the engine turns that
        into a None response. A cancellation by the server (shutdown) answers a retryable
        error instead: 503 before anything was sent, an error event on a started stream.
        In the stateless era, the client going away cancels the call.
        """
        server = self.get_server()
        request, session, cancel_on_close = run.request, run.session, run.stateless
        sid = session.id if session else None
        stream = resumable.PostResponseStream(self, sid, request.id)
        task = asyncio.current_task()
        assert task is not None
        handling = True

        def closed() -> None:
            if cancel_on_close and handling:
                dispatch.cancel_task(task)

        # Most requests finish within a few milliseconds: watch for the client going away only
        # once a request has outlived that, saving a task (and a timer) on the hot path.
        watchers: list[asyncio.Task[None]] = []

        def watch() -> None:
            if handling:
                watchers.append(asyncio.get_running_loop().create_task(self.watch_disconnect(closed)))

        _slow.add(self, watch)
        dispatch.track(self, sid)
        interrupted = False
        try:
            try:
                response = await dispatch.handle(
                    server, request, run.revision, session, self.caller(), stream, run.target
                )
            except asyncio.CancelledError:
                # The engine answers a client's cancellation with None itself; a raised cancellation
                # is the server's (shutdown): the client gets an error it can retry, never silence.
                response, interrupted = None, True
            finally:
                handling = False
                _slow.discard(self)
                dispatch.untrack(self, sid)
            if response is None:
                uncancel(task)
                if interrupted:
                    await self._interrupted(request, stream)
                    return
                if stream.started:
                    await self.safe_body(b"")
                elif self.connected:
                    await self.empty_response(202)
                return
            if stream.started:
                await stream.send(response, final=True)
            else:
                await self.write(streamable.reply(run, response))
        finally:
            for watcher in watchers:
                watcher.cancel()
            await stream.finish()

    async def _interrupted(self, request: jsonrpc.Request, stream: resumable.PostResponseStream) -> None:
        """A call the server stopped: a retryable error event on its stream, or 503 before anything was sent."""
        if stream.started:
            await stream.send(shutdown_error(request.id), final=True)
        elif self.connected and not self.responded:
            await self.write(streamable.draining(request.id))

    # -- GET --------------------------------------------------------------------------------
    async def handle_get(self) -> None:
        refusal = streamable.check_get(self._headers)
        if refusal is not None:
            await self.write(refusal)
            return
        if not self.accepts(SSE_CT):
            raise HTTPError(406, jsonrpc.INVALID_REQUEST, "Not Acceptable: Accept must include text/event-stream")
        version = self.header(VERSION_HEADER)
        session = await streamable.find_session(self._headers, self.caller(), version=version)
        await resumable.serve_get(self, session, self.header(b"last-event-id"))

    # -- DELETE -------------------------------------------------------------------------------
    async def handle_delete(self) -> None:
        await self.write(await streamable.delete(self._headers, self.caller()))


__all__ = ["HTTPError", "MCPConsumer"]
