"""Streamable HTTP on a Channels ``AsyncHttpConsumer``: both eras on one URL.

POST carries JSON-RPC. A request is answered with ``application/json`` unless
its handler emits something first (progress, a log, a server->client request):
then the response turns into an SSE stream whose last event is the result.
GET opens a session's standalone SSE stream or resumes one with
``Last-Event-ID``; DELETE ends a session. Requests carrying
``MCP-Protocol-Version: 2026-07-28`` are stateless and need no session.

The consumer reads the body itself (to refuse oversized bodies before buffering
them) and watches for the client going away while a request runs; it touches the
channel layer only for work that crosses requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from channels.generic.http import AsyncHttpConsumer

from .. import dispatch
from ..auth.challenge import Challenge
from ..conf import mcp_settings
from ..dispatch import Caller, Rejected
from ..drain import HEADERS as DRAIN_HEADERS
from ..drain import drain, shutdown_error
from ..engine import engine
from ..events import (
    REPLAYABLE,
    event_id,
    events,
    get_event_id,
    new_stream_id,
    parse_event_id,
    parse_get_event_id,
)
from ..later import Later
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..protocol.versions import ALL_REVISIONS, HANDSHAKE_REVISIONS, STATELESS_REVISIONS
from ..routing import BROADCAST, hub, session_group
from ..server import MCPServer
from ..sessions import SessionState, store
from ..unavailable import Unavailable
from . import checks
from .base import (
    JSON_CT,
    SSE_CT,
    SSE_HEADERS,
    HTTPError,
    challenge_error,
    pump,
    sse_event,
    stream_slot,
)
from .stateless import StatelessMixin

logger = logging.getLogger("django_mcp")

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
#: Requests still running after 10 ms start watching for the client going away.
_slow = Later(0.01)


def _uncancel(task: asyncio.Task[Any]) -> None:
    """Python 3.11+: forget a cancellation the request handled, so later timeouts in this task behave."""
    cancelling = getattr(task, "cancelling", None)
    if cancelling is not None and cancelling():
        task.uncancel()  # type: ignore[attr-defined]  # 3.11+, like cancelling()


def _broadcast_message(session: SessionState, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The notification a broadcast becomes on this session's GET stream, or None if not for it."""
    kind = payload.get("kind")
    if kind == "list_changed":
        return jsonrpc.notification_message(f"notifications/{payload['list']}/list_changed")
    if kind == "resource_updated" and payload.get("uri") in (store.peek(session.id) or session).subscriptions:
        return jsonrpc.notification_message("notifications/resources/updated", {"uri": payload["uri"]})
    return None


class ResponseStream:
    """The outlet of one POST: JSON until something is emitted early, SSE after that."""

    def __init__(self, consumer: MCPConsumer, session_id: str | None, request_id: Any = None) -> None:
        self.consumer = consumer
        self.session_id = session_id
        self.request_id = request_id
        self._renewer: asyncio.Task[None] | None = None
        self._keep_lease = False
        self.stream_id: str | None = None
        self.seq = 0
        self.started = False
        self.detached = False
        self._lock_: asyncio.Lock | None = None

    @property
    def _lock(self) -> asyncio.Lock:
        """Made on first use: a plain JSON reply never takes it."""
        if self._lock_ is None:
            self._lock_ = asyncio.Lock()
        return self._lock_

    async def start(self) -> None:
        self.started = True
        headers = list(SSE_HEADERS)
        if self.session_id:
            headers.append((b"mcp-session-id", self.session_id.encode()))
            self.stream_id = new_stream_id()
        await self.consumer.send_headers(status=200, headers=headers)
        if self.stream_id is not None and self.session_id is not None:
            # A priming event with an id and no data lets the client resume even before the first message.
            await events.open(self.session_id, self.stream_id, self.request_id)  # and its writer lease
            self._renewer = asyncio.get_running_loop().create_task(self._renew(self.session_id, self.stream_id))
            await self.consumer.safe_body(f"id: {event_id(self.stream_id, 0)}\ndata: \n\n".encode(), more=True)

    async def _renew(self, session_id: str, stream_id: str) -> None:
        """Keep the writer lease alive while the request runs: a resumed stream trusts it."""
        while True:
            await asyncio.sleep(mcp_settings.WRITER_LEASE_TTL / 3)
            await events.lease(session_id, stream_id)

    async def finish(self) -> None:
        """The request is over (answered or not): stop renewing and drop the lease."""
        if self._renewer is not None:
            self._renewer.cancel()
            self._renewer = None
            assert self.session_id is not None and self.stream_id is not None
            if not self._keep_lease:
                await events.release(self.session_id, self.stream_id)

    async def close(self) -> None:
        """End the HTTP response now, with a ``retry`` hint; the client resumes with ``Last-Event-ID``.

        Later events still go to the event store and to any resumed stream (SEP-1699 polling).
        Without a session there is nothing to resume, so the stream stays open.
        """
        async with self._lock:
            if self.session_id is None or not self.consumer.connected:
                return
            if not self.started:
                await self.start()
            await self.consumer.safe_body(f"retry: {mcp_settings.SSE_RETRY_MS}\n\n".encode())
            self.consumer.connected = False

    async def send(self, message: dict[str, Any], final: bool = False) -> None:
        async with self._lock:
            if not self.started:
                await self.start()
            data = jsonrpc.dumps(message)
            eid = None
            if self.stream_id is not None and self.session_id is not None:
                self.seq += 1
                eid = event_id(self.stream_id, self.seq)
                stored = await events.append(self.session_id, self.stream_id, self.seq, data, done=final)
                if final and not stored:
                    # Keep the lease: dropping it now would tell a resumer the writer died before
                    # answering (and invite a retry of a call that ran); it lapses on its own.
                    self._keep_lease = True
            if self.consumer.connected:
                await self.consumer.safe_body(sse_event(data, eid), more=not final)
            elif self.session_id is not None and self.stream_id is not None:
                with contextlib.suppress(Unavailable):  # stored already: a resumed stream polls the store
                    await hub.publish(
                        session_group(self.session_id),
                        {
                            "kind": "event",
                            "stream": self.stream_id,
                            "seq": self.seq,
                            "data": data.decode(),
                            "final": final,
                        },
                    )
            if final:
                await self.finish()


class MCPConsumer(StatelessMixin, AsyncHttpConsumer):  # type: ignore[misc]  # channels ships no type hints
    """The MCP endpoint. ``MCPConsumer.as_asgi(server=my_server)`` mounts another server."""

    server: MCPServer | None = None

    def __init__(self, *args: Any, server: MCPServer | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if server is not None:
            self.server = server
        self.connected = True
        self.responded = False
        self._headers: dict[bytes, bytes] = {}

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
        except Rejected as exc:
            await self.error_response(exc)
        except Challenge as challenge:
            await self.error_response(challenge_error(challenge))
        except asyncio.CancelledError:
            # Shutdown cancelled work that had not answered yet (a batch): a retryable 503, not silence.
            if not drain.draining or self.responded or not self.connected:
                raise
            _uncancel(asyncio.current_task())  # type: ignore[arg-type]  # we are inside a task
            await self.json_response(503, shutdown_error(), DRAIN_HEADERS)
        except Exception as exc:  # noqa: BLE001 - logged by checks.failure, answered 503 or 500
            error = checks.failure(exc)  # 503 + Retry-After for an unavailable backend, else 500
            with contextlib.suppress(Exception):
                await self.error_response(error)

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

    async def json_response(self, status: int, payload: Any, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        headers = [(b"content-type", JSON_CT), *extra] if extra else [(b"content-type", JSON_CT)]
        body = jsonrpc.dumps(payload)
        # What send_headers/send_body do, minus a layer of coroutines each.
        await self.send({"type": "http.response.start", "status": status, "headers": headers})
        if self.connected:
            try:
                await self.send({"type": "http.response.body", "body": body})
            except Exception:  # noqa: BLE001 - the connection went away under us, as in safe_body
                self.connected = False

    async def error_response(self, exc: Rejected) -> None:
        await self.json_response(exc.status, exc.message(), getattr(exc, "headers", None))

    async def empty_response(self, status: int, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        await self.send_headers(status=status, headers=extra or [])
        await self.safe_body(b"")

    # -- routing by HTTP method ---------------------------------------------------------
    async def dispatch_http(self, method: str) -> None:
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
            raise checks.method_not_allowed(method)

    def check_origin(self) -> None:
        checks.check_origin(self.scope, self._headers)

    async def authenticate(self) -> None:
        """With ``AUTH = "oauth"``: a valid bearer token or a 401/403 challenge (django_mcp.auth)."""
        await checks.authenticate(self.scope, self._headers)

    def caller(self) -> Caller:
        """Who sends this request: what ``authenticate`` recorded in the scope, and the language."""
        auth = self.scope.get("mcp_auth")
        return Caller(
            self.scope.get("user"),
            auth,
            auth.client_id if auth is not None else "",
            self.header(b"accept-language"),
        )

    async def find_session(self, request_id: Any = None, version: str | None = None) -> SessionState:
        """The caller's session named by ``Mcp-Session-Id`` (400 without one, 404 if not the caller's)."""
        return await dispatch.find_session(self.header(b"mcp-session-id"), self.caller(), request_id, version)

    def accepts(self, *types: bytes) -> bool:
        return checks.accepts(self._headers, *types)

    async def read_body(self) -> bytes:
        limit = mcp_settings.MAX_BODY_SIZE
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.connected = False
                raise asyncio.CancelledError()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise checks.too_large()
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
        checks.check_post(self._headers)  # 415, 406, and 413 for a declared length over the limit
        payload = dispatch.parse(await self.read_body())
        if drain.draining and dispatch.has_request(payload):
            await self.json_response(503, shutdown_error(jsonrpc.id_of(payload)), DRAIN_HEADERS)
            return
        version = self.header(VERSION_HEADER)
        # A version header that is not a handshake revision (2026-07-28, or one we don't know) takes the
        # stateless path, where an unknown version gets -32022 with the supported list.
        modern = version is not None and version.strip() not in HANDSHAKE_REVISIONS
        if modern or (version is None and self.looks_stateless(payload)):
            await self.handle_stateless_post(payload, version)
            return
        await self.handle_handshake_post(payload, version)

    async def handle_handshake_post(self, payload: Any, version: str | None) -> None:
        if isinstance(payload, dict) and payload.get("method") == "initialize" and "id" in payload:
            request = dispatch.classify(payload)
            assert isinstance(request, jsonrpc.Request)
            session, response = await dispatch.initialize(self.get_server(), request, self.caller())
            await self.json_response(200, response, [(b"mcp-session-id", session.id.encode())])
            return
        session = await self.find_session(jsonrpc.id_of(payload), version)
        if isinstance(payload, list):
            responses = await dispatch.batch(payload, session, lambda r: self.run_batched(r, session))
            if responses:
                await self.json_response(200, responses, [(b"mcp-session-id", session.id.encode())])
            else:
                await self.empty_response(202)
            return
        message = dispatch.classify(payload)
        if isinstance(message, jsonrpc.Request):
            if message.method == "initialize":
                raise HTTPError(400, jsonrpc.INVALID_REQUEST, "Session already initialized", request_id=message.id)
            await self.run_request(message, session)
        else:
            await dispatch.absorb(message, session, session.revision)
            await self.empty_response(202)

    async def run_batched(self, request: jsonrpc.Request, session: SessionState) -> dict[str, Any] | None:
        """One request of a batch: answered inside the batch's JSON array, never streamed."""
        return await dispatch.handle(self.get_server(), request, session.revision, session, self.caller())

    async def run_request(
        self,
        request: jsonrpc.Request,
        session: SessionState | None,
        revision: str | None = None,
        cancel_on_close: bool = False,
        target: Any = dispatch.UNSET,
    ) -> None:
        """Run one request; answer JSON, or SSE if the handler emitted something first.

        The handler runs in this consumer's own task (no task per request); a client's
        cancellation cancels this task while the handler runs, and the engine turns that
        into a None response. A cancellation by the server (shutdown) answers a retryable
        error instead: 503 before anything was sent, an error event on a started stream.
        """
        auth = self.scope.get("mcp_auth")
        server = self.get_server()
        if target is dispatch.UNSET:
            target = server.target(request.method, request.params or {})
        if auth is not None:
            checks.check_scopes(self.scope, server, request, target)
        stream = ResponseStream(self, session.id if session else None, request.id)
        rev = revision or (session.revision if session else ALL_REVISIONS[-1])
        sid = session.id if session else None
        task = asyncio.current_task()
        assert task is not None
        handling = True

        def closed() -> None:
            if cancel_on_close and handling:
                engine.cancel_task(task)

        # Most requests finish within a few milliseconds: watch for the client going away only
        # once a request has outlived that, saving a task (and a timer) on the hot path.
        watchers: list[asyncio.Task[None]] = []

        def watch() -> None:
            if handling:
                watchers.append(asyncio.get_running_loop().create_task(self.watch_disconnect(closed)))

        _slow.add(self, watch)
        engine.track(self, sid)
        interrupted = False
        try:
            try:
                response = await dispatch.handle(server, request, rev, session, self.caller(), stream, target)
            except asyncio.CancelledError:
                # The engine answers a client's cancellation with None itself; a raised cancellation
                # is the server's (shutdown): the client gets an error it can retry, never silence.
                response, interrupted = None, True
            finally:
                handling = False
                _slow.discard(self)
                engine.untrack(self, sid)
            if response is None:
                _uncancel(task)
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
                extra = [(b"mcp-session-id", session.id.encode())] if session else []
                status = 200 if session else dispatch.status_for(response)
                await self.json_response(status, response, extra)
        finally:
            for watcher in watchers:
                watcher.cancel()
            await stream.finish()

    async def _interrupted(self, request: jsonrpc.Request, stream: ResponseStream) -> None:
        """A call the server stopped: a retryable error event on its stream, or 503 before anything was sent."""
        if stream.started:
            await stream.send(shutdown_error(request.id), final=True)
        elif self.connected and not self.responded:
            await self.json_response(503, shutdown_error(request.id), DRAIN_HEADERS)

    # -- GET --------------------------------------------------------------------------------
    async def handle_get(self) -> None:
        if drain.draining:
            await self.json_response(503, shutdown_error(), DRAIN_HEADERS)
            return
        version = self.header(VERSION_HEADER)
        if version in STATELESS_REVISIONS:
            raise HTTPError(405, jsonrpc.INVALID_REQUEST, "Method Not Allowed: 2026-07-28 has no GET stream")
        if not self.accepts(SSE_CT):
            raise HTTPError(406, jsonrpc.INVALID_REQUEST, "Not Acceptable: Accept must include text/event-stream")
        session = await self.find_session(version=version)
        last = self.header(b"last-event-id")
        if last:
            await self.resume(session, last)
        else:
            await self.standalone_stream(session)

    async def _open_sse(self, session: SessionState) -> None:
        await self.send_headers(status=200, headers=[*SSE_HEADERS, (b"mcp-session-id", session.id.encode())])

    def _session_listener(self, session: SessionState, queue: asyncio.Queue[Any]) -> Any:
        """The 2024-11-05 transport's stream: every message as it comes (no resumption there)."""

        def on_message(payload: dict[str, Any]) -> None:
            kind = payload.get("kind")
            if kind == "session_ended" and payload.get("session", session.id) == session.id:
                queue.put_nowait(None)
            elif kind == "notify":
                queue.put_nowait(("message", payload["message"]))
            elif kind in REPLAYABLE:
                message = _broadcast_message(session, payload)
                if message is not None:
                    queue.put_nowait(("message", message))

        return on_message

    # -- the session's GET stream ----------------------------------------------------------
    #
    # Items on its queue: ("s", session seq, message) for a session notification, ("b", broadcast
    # seq, payload) for a broadcast, ("resync", None, None) after a channel-layer outage, None to end.
    # The stream keeps both positions and writes each into every event id, so replay after a
    # reconnect starts exactly after what the client saw; a number already passed is a duplicate.

    def _get_listener(self, session: SessionState, queue: asyncio.Queue[Any]) -> Any:
        def on_message(payload: dict[str, Any]) -> None:
            kind = payload.get("kind")
            if kind == "session_ended" and payload.get("session", session.id) == session.id:
                queue.put_nowait(None)
            elif kind == "notify":
                queue.put_nowait(("s", payload.get("sseq"), payload["message"]))
            elif kind in REPLAYABLE:
                queue.put_nowait(("b", payload.get("bseq"), payload))
            elif kind == "resync":
                queue.put_nowait(("resync", None, None))

        return on_message

    async def _stored_after(
        self, session: SessionState, s: int, b: int, upto_s: int | None = None, upto_b: int | None = None
    ) -> list[tuple[str, int, Any]]:
        """What the store holds after positions ``s`` and ``b``, oldest first (the two logs merged by time)."""
        items: list[tuple[float, str, int, Any]] = []
        if upto_s is None or upto_s > s:
            items += [(ts, "s", n, data) for n, ts, data in await events.session_after(session.id, s, upto_s)]
        if upto_b is None or upto_b > b:
            items += [(ts, "b", n, payload) for n, ts, payload in await events.broadcasts_after(b, upto_b)]
        items.sort(key=lambda item: (item[0], item[1], item[2]))
        return [(kind, n, body) for _ts, kind, n, body in items]

    async def _emit_get(
        self, session: SessionState, stream_id: str, pos: list[int], item: tuple[str, Any, Any]
    ) -> None:
        kind, n, body = item
        slot = 0 if kind == "s" else 1
        if n is not None:
            if n <= pos[slot]:
                return  # replayed already, or delivered twice
            pos[slot] = n
        if kind == "s":
            data = body if isinstance(body, bytes) else jsonrpc.dumps(body)
        else:
            message = _broadcast_message(session, body)
            if message is None:
                return  # not for this session (a resource it did not subscribe to)
            data = jsonrpc.dumps(message)
        await self.safe_body(sse_event(data, get_event_id(stream_id, pos[0], pos[1])), more=True)

    async def _catch_up(self, session: SessionState, stream_id: str, pos: list[int], item: Any = None) -> None:
        """Emit what the store holds before a live item that skipped numbers (or everything, on resync)."""
        kind, n, _body = item if item is not None else ("resync", None, None)
        try:
            if kind == "s" and n is not None and n > pos[0] + 1:
                missed = await self._stored_after(session, pos[0], pos[1], upto_s=n - 1, upto_b=pos[1])
            elif kind == "b" and n is not None and n > pos[1] + 1:
                missed = await self._stored_after(session, pos[0], pos[1], upto_s=pos[0], upto_b=n - 1)
            elif kind == "resync":
                missed = await self._stored_after(session, pos[0], pos[1])
            else:
                missed = []
        except Unavailable as exc:
            logger.warning("django_mcp: GET stream cannot catch up (%s)", exc)
            missed = []
        for stored in missed:
            await self._emit_get(session, stream_id, pos, stored)

    async def get_stream(self, session: SessionState, stream_id: str | None, s: int = 0, b: int = 0) -> None:
        """Open (``stream_id`` None) or resume a session's GET stream.

        Joins the groups first, then replays from the store, then pumps live events: whatever
        arrives live while replaying is queued and dropped if replay already sent it.
        """
        with stream_slot():
            queue: asyncio.Queue[Any] = asyncio.Queue()
            listener = self._get_listener(session, queue)
            group = session_group(session.id)
            try:
                await hub.join(group, listener)
                await hub.join(BROADCAST, listener)
                now_s, now_b = await events.positions(session.id)
                if stream_id is None:
                    stream_id, s, b = "g" + new_stream_id(), now_s, now_b
                    replay: list[tuple[str, int, Any]] = []
                else:
                    # Numbers beyond the store's (an expired counter) would hide every new event.
                    s, b = min(s, now_s), min(b, now_b)
                    replay = await self._stored_after(session, s, b)
                await self._open_sse(session)
                pos = [s, b]
                await self.safe_body(f"id: {get_event_id(stream_id, s, b)}\ndata: \n\n".encode(), more=True)
                for item in replay:
                    await self._emit_get(session, stream_id, pos, item)
                await self._pump_get(session, queue, stream_id, pos)
            finally:
                try:
                    await hub.leave(group, listener)
                finally:
                    await hub.leave(BROADCAST, listener)

    async def _pump_get(self, session: SessionState, queue: asyncio.Queue[Any], stream_id: str, pos: list[int]) -> None:
        """Write queued events until the session ends or the client leaves."""

        async def emit(item: Any) -> bool:
            await self._catch_up(session, stream_id, pos, item)
            if item[0] != "resync":
                await self._emit_get(session, stream_id, pos, item)
            return False

        await pump(self, queue, emit)

    async def standalone_stream(self, session: SessionState) -> None:
        await self.get_stream(session, None)

    async def resume(self, session: SessionState, last: str) -> None:
        if last.startswith("g"):
            parsed_get = parse_get_event_id(last)
            if parsed_get is not None:
                await self.get_stream(session, *parsed_get)
                return
            if parse_event_id(last) is None:
                raise HTTPError(400, jsonrpc.INVALID_REQUEST, "Bad Request: malformed Last-Event-ID")
            await self.get_stream(session, None)  # an id from before positions were kept: start afresh
            return
        parsed = parse_event_id(last)
        if parsed is None:
            raise HTTPError(400, jsonrpc.INVALID_REQUEST, "Bad Request: malformed Last-Event-ID")
        await self.resume_post(session, *parsed)

    # -- a POST's response stream, resumed ------------------------------------------------------
    async def resume_post(self, session: SessionState, stream_id: str, after: int) -> None:
        """Replay a POST's response stream, then follow it live until its last event.

        Listens first, then replays, so nothing falls in between. The writer (the worker running
        the request) renews a lease; if it lapses before the last event, the stream ends with a
        JSON-RPC error for the request that says it may be retried.
        """
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def on_event(payload: dict[str, Any]) -> None:
            if payload.get("kind") == "event" and payload.get("stream") == stream_id:
                queue.put_nowait((int(payload["seq"]), payload["data"].encode(), bool(payload["final"])))
            elif payload.get("kind") == "session_ended":
                queue.put_nowait(None)

        group = session_group(session.id)
        with stream_slot():
            try:
                await hub.join(group, on_event)
                replay = await events.replay(session.id, stream_id, after)
                if replay is None:
                    raise HTTPError(404, jsonrpc.INVALID_REQUEST, "Unknown or expired event stream")
                await self._open_sse(session)
                last = [after]
                if await self._post_events(stream_id, last, replay) or await self._post_check(session, stream_id, last):
                    return
                await self._pump_post(session, queue, stream_id, last)
            finally:
                await hub.leave(group, on_event)

    async def _post_events(
        self, stream_id: str, last: list[int], stored: tuple[list[tuple[int, bytes]], bool] | None
    ) -> bool:
        """Write stored events past ``last``; True when the stream has ended."""
        if stored is None:
            return False
        for seq, data in stored[0]:
            if seq > last[0]:
                last[0] = seq
                await self.safe_body(sse_event(data, event_id(stream_id, seq)), more=True)
        if stored[1]:
            await self.safe_body(b"")
            return True
        return False

    async def _post_check(self, session: SessionState, stream_id: str, last: list[int]) -> bool:
        """Poll the store: events the live path missed, the end, or a writer whose lease lapsed."""
        try:
            if await self._post_events(stream_id, last, await events.replay(session.id, stream_id, last[0])):
                return True
            if await events.leased(session.id, stream_id):
                return False
            # The lease is gone: the last event may have been stored just before its release.
            if await self._post_events(stream_id, last, await events.replay(session.id, stream_id, last[0])):
                return True
            rid = await events.request_id(session.id, stream_id)
        except Unavailable as exc:
            logger.warning("django_mcp: resumed stream cannot poll the store (%s)", exc)
            return False
        error = ProtocolError(
            jsonrpc.INTERNAL_ERROR,
            "The worker running this request stopped before answering; the request may be retried",
            {"retryable": True},
        )
        data = jsonrpc.dumps(jsonrpc.error_message(rid, error))
        last[0] += 1
        await events.append(session.id, stream_id, last[0], data, done=True)  # every resumer agrees
        await self.safe_body(sse_event(data, event_id(stream_id, last[0])))
        return True

    async def _pump_post(
        self, session: SessionState, queue: asyncio.Queue[Any], stream_id: str, last: list[int]
    ) -> None:
        """Follow a resumed POST stream live, polling the store each tick (the client resumes again on a drain)."""

        async def emit(item: tuple[int, bytes, bool]) -> bool:
            seq, data, final = item
            if seq <= last[0]:
                return False
            last[0] = seq
            await self.safe_body(sse_event(data, event_id(stream_id, seq)), more=not final)
            return final

        tick = max(0.2, min(mcp_settings.SSE_KEEPALIVE, mcp_settings.WRITER_LEASE_TTL / 3))
        await pump(self, queue, emit, tick=tick, on_tick=lambda: self._post_check(session, stream_id, last))

    # -- DELETE -------------------------------------------------------------------------------
    async def handle_delete(self) -> None:
        if self.header(VERSION_HEADER) in STATELESS_REVISIONS:
            raise HTTPError(405, jsonrpc.INVALID_REQUEST, "Method Not Allowed: 2026-07-28 has no sessions")
        session = await self.find_session()
        await store.end(session.id)
        await self.empty_response(200)


__all__ = ["HTTPError", "MCPConsumer"]
