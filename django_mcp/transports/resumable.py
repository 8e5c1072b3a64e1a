"""Resumable SSE streams of Streamable HTTP: the event store behind them, written and replayed.

Two kinds of stream can be resumed with ``Last-Event-ID``:

* a POST's response stream (``PostResponseStream``): its one writer stores every event and
  renews a lease while the request runs; a resumed copy (``ResumedPost``), on any worker,
  replays the store, follows the writer live, and when the lease lapses before the last
  event ends with a retryable JSON-RPC error instead of going silent;
* a session's GET stream (``GetStream``): its notifications and the broadcasts it carries are
  stored by whoever publishes them, whether or not a stream is attached; a stream joins its
  groups before it replays, so nothing falls between the store and the live feed.

The consumer keeps the HTTP (statuses, headers, the body); this module decides what the
stream carries and when it ends, through the writer it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

from ..conf import mcp_settings
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..runtime.unavailable import Unavailable
from ..state.event_store import (
    REPLAYABLE,
    event_id,
    events,
    get_event_id,
    new_stream_id,
    parse_event_id,
    parse_get_event_id,
)
from ..state.hub import BROADCAST, Listener, hub, session_group
from ..state.notifications import session_notification
from ..state.sessions import SessionState
from .base import SSE_HEADERS, HTTPError, StreamWriter, pump, sse_event, stream_slot

logger = logging.getLogger("django_mcp")


class SSEWriter(StreamWriter, Protocol):
    """The consumer as these streams use it: response headers, then body chunks."""

    async def send_headers(self, *, status: int = 200, headers: Any = None) -> None: ...


async def _open_sse(writer: SSEWriter, session_id: str) -> None:
    await writer.send_headers(status=200, headers=[*SSE_HEADERS, (b"mcp-session-id", session_id.encode())])


async def serve_get(writer: SSEWriter, session: SessionState, last_event_id: str | None) -> None:
    """A GET with the session: its standalone stream, or the stream ``last_event_id`` resumes.

    A ``g…`` id resumes the GET stream; any other id a POST's response stream. A malformed id
    is a 400, an unknown or expired POST stream a 404, both before anything is sent.
    """
    if not last_event_id:
        await GetStream(writer, session).run(None)
        return
    if last_event_id.startswith("g"):
        parsed_get = parse_get_event_id(last_event_id)
        if parsed_get is not None:
            await GetStream(writer, session).run(*parsed_get)
            return
        if parse_event_id(last_event_id) is None:
            raise HTTPError(400, jsonrpc.INVALID_REQUEST, "Bad Request: malformed Last-Event-ID")
        await GetStream(writer, session).run(None)  # an id from before positions were kept: start afresh
        return
    parsed = parse_event_id(last_event_id)
    if parsed is None:
        raise HTTPError(400, jsonrpc.INVALID_REQUEST, "Bad Request: malformed Last-Event-ID")
    stream_id, after = parsed
    await ResumedPost(writer, session, stream_id).run(after)


# -- a POST's response stream, written ---------------------------------------------------------
class PostResponseStream:
    """Carries one POST's answer: JSON until something is emitted early, SSE after that.

    With a session the SSE stream is resumable: each event is stored before it is written,
    and a lease, renewed while the request runs, tells a resumed copy on another worker
    that this writer is still alive. Once the client has gone, events are still stored and
    published to the session's group for any resumed copy.
    """

    def __init__(self, writer: SSEWriter, session_id: str | None, request_id: Any = None) -> None:
        self.writer = writer
        self.session_id = session_id
        self.request_id = request_id
        self._renewer: asyncio.Task[None] | None = None
        self._keep_lease = False
        self.stream_id: str | None = None
        self.seq = 0
        self.started = False
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
        await self.writer.send_headers(status=200, headers=headers)
        if self.stream_id is not None and self.session_id is not None:
            # A priming event with an id and no data lets the client resume even before the first message.
            await events.open(self.session_id, self.stream_id, self.request_id)  # and its writer lease
            self._renewer = asyncio.get_running_loop().create_task(self._renew(self.session_id, self.stream_id))
            await self.writer.safe_body(f"id: {event_id(self.stream_id, 0)}\ndata: \n\n".encode(), more=True)

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
            if self.session_id is None or not self.writer.connected:
                return
            if not self.started:
                await self.start()
            await self.writer.safe_body(f"retry: {mcp_settings.SSE_RETRY_MS}\n\n".encode())
            self.writer.connected = False

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
            if self.writer.connected:
                await self.writer.safe_body(sse_event(data, eid), more=not final)
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


# -- a POST's response stream, resumed -----------------------------------------------------------
class ResumedPost:
    """A POST's response stream resumed with ``Last-Event-ID``: replayed, then followed live to its end.

    Listens first, then replays, so nothing falls in between. The writer (the worker running
    the request) renews a lease; if it lapses before the last event, the stream ends with a
    JSON-RPC error for the request that says it may be retried.
    """

    def __init__(self, writer: SSEWriter, session: SessionState, stream_id: str) -> None:
        self.writer, self.session, self.stream_id = writer, session, stream_id
        self.last = 0  # the last event sequence number written

    async def run(self, after: int) -> None:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stream_id = self.stream_id

        def on_event(payload: dict[str, Any]) -> None:
            if payload.get("kind") == "event" and payload.get("stream") == stream_id:
                queue.put_nowait((int(payload["seq"]), payload["data"].encode(), bool(payload["final"])))
            elif payload.get("kind") == "session_ended":
                queue.put_nowait(None)

        group = session_group(self.session.id)
        with stream_slot():
            try:
                await hub.join(group, on_event)
                replay = await events.replay(self.session.id, stream_id, after)
                if replay is None:
                    raise HTTPError(404, jsonrpc.INVALID_REQUEST, "Unknown or expired event stream")
                await _open_sse(self.writer, self.session.id)
                self.last = after
                if await self._write_stored(replay) or await self._check():
                    return
                await self._follow(queue)
            finally:
                await hub.leave(group, on_event)

    async def _write_stored(self, stored: tuple[list[tuple[int, bytes]], bool] | None) -> bool:
        """Write stored events past the last one written; True when the stream has ended."""
        if stored is None:
            return False
        for seq, data in stored[0]:
            if seq > self.last:
                self.last = seq
                await self.writer.safe_body(sse_event(data, event_id(self.stream_id, seq)), more=True)
        if stored[1]:
            await self.writer.safe_body(b"")
            return True
        return False

    async def _check(self) -> bool:
        """Poll the store: events the live path missed, the end, or a writer whose lease lapsed."""
        sid, stream_id = self.session.id, self.stream_id
        try:
            if await self._write_stored(await events.replay(sid, stream_id, self.last)):
                return True
            if await events.leased(sid, stream_id):
                return False
            # The lease is gone: the last event may have been stored just before its release.
            if await self._write_stored(await events.replay(sid, stream_id, self.last)):
                return True
            rid = await events.request_id(sid, stream_id)
        except Unavailable as exc:
            logger.warning("django_mcp: resumed stream cannot poll the store (%s)", exc)
            return False
        error = ProtocolError(
            jsonrpc.INTERNAL_ERROR,
            "The worker running this request stopped before answering; the request may be retried",
            {"retryable": True},
        )
        data = jsonrpc.dumps(jsonrpc.error_message(rid, error))
        self.last += 1
        await events.append(sid, stream_id, self.last, data, done=True)  # every resumer agrees
        await self.writer.safe_body(sse_event(data, event_id(stream_id, self.last)))
        return True

    async def _follow(self, queue: asyncio.Queue[Any]) -> None:
        """Follow the stream live, polling the store each tick (the client resumes again on a drain)."""

        async def emit(item: tuple[int, bytes, bool]) -> bool:
            seq, data, final = item
            if seq <= self.last:
                return False
            self.last = seq
            await self.writer.safe_body(sse_event(data, event_id(self.stream_id, seq)), more=not final)
            return final

        tick = max(0.2, min(mcp_settings.SSE_KEEPALIVE, mcp_settings.WRITER_LEASE_TTL / 3))
        await pump(self.writer, queue, emit, tick=tick, on_tick=self._check)


# -- the session's GET stream --------------------------------------------------------------------
class GetStream:
    """A session's GET stream, opened afresh or resumed from the positions in its last event id.

    Items on its queue: ("s", session seq, message) for a session notification, ("b", broadcast
    seq, payload) for a broadcast, ("resync", None, None) after a channel-layer outage, None to end.
    The stream keeps both positions and writes each into every event id, so replay after a
    reconnect starts exactly after what the client saw; a number already passed is a duplicate.
    """

    def __init__(self, writer: SSEWriter, session: SessionState) -> None:
        self.writer, self.session = writer, session
        self.stream_id = ""
        self.pos = [0, 0]  # the session and broadcast positions written so far

    def _listener(self, queue: asyncio.Queue[Any]) -> Listener:
        session_id = self.session.id

        def on_message(payload: dict[str, Any]) -> None:
            kind = payload.get("kind")
            if kind == "session_ended" and payload.get("session", session_id) == session_id:
                queue.put_nowait(None)
            elif kind == "notify":
                queue.put_nowait(("s", payload.get("sseq"), payload["message"]))
            elif kind in REPLAYABLE:
                queue.put_nowait(("b", payload.get("bseq"), payload))
            elif kind == "resync":
                queue.put_nowait(("resync", None, None))

        return on_message

    async def run(self, stream_id: str | None, s: int = 0, b: int = 0) -> None:
        """Open (``stream_id`` None) or resume the stream.

        Joins the groups first, then replays from the store, then pumps live events: whatever
        arrives live while replaying is queued and dropped if replay already sent it.
        """
        session = self.session
        with stream_slot():
            queue: asyncio.Queue[Any] = asyncio.Queue()
            listener = self._listener(queue)
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
                    replay = await self._stored_after(s, b)
                await _open_sse(self.writer, session.id)
                self.stream_id, self.pos = stream_id, [s, b]
                await self.writer.safe_body(f"id: {get_event_id(stream_id, s, b)}\ndata: \n\n".encode(), more=True)
                for item in replay:
                    await self._emit(item)
                await pump(self.writer, queue, self._live)
            finally:
                try:
                    await hub.leave(group, listener)
                finally:
                    await hub.leave(BROADCAST, listener)

    async def _stored_after(
        self, s: int, b: int, upto_s: int | None = None, upto_b: int | None = None
    ) -> list[tuple[str, int, Any]]:
        """What the store holds after positions ``s`` and ``b``, oldest first (the two logs merged by time)."""
        items: list[tuple[float, str, int, Any]] = []
        if upto_s is None or upto_s > s:
            items += [(ts, "s", n, data) for n, ts, data in await events.session_after(self.session.id, s, upto_s)]
        if upto_b is None or upto_b > b:
            items += [(ts, "b", n, payload) for n, ts, payload in await events.broadcasts_after(b, upto_b)]
        items.sort(key=lambda item: (item[0], item[1], item[2]))
        return [(kind, n, body) for _ts, kind, n, body in items]

    async def _emit(self, item: tuple[str, Any, Any]) -> None:
        kind, n, body = item
        pos = self.pos
        slot = 0 if kind == "s" else 1
        if n is not None:
            if n <= pos[slot]:
                return  # replayed already, or delivered twice
            pos[slot] = n
        if kind == "s":
            data = body if isinstance(body, bytes) else jsonrpc.dumps(body)
        else:
            message = session_notification(self.session, body)
            if message is None:
                return  # not for this session (a resource it did not subscribe to)
            data = jsonrpc.dumps(message)
        await self.writer.safe_body(sse_event(data, get_event_id(self.stream_id, pos[0], pos[1])), more=True)

    async def _catch_up(self, item: Any) -> None:
        """Emit what the store holds before a live item that skipped numbers (or everything, on resync)."""
        kind, n, _body = item
        pos = self.pos
        try:
            if kind == "s" and n is not None and n > pos[0] + 1:
                missed = await self._stored_after(pos[0], pos[1], upto_s=n - 1, upto_b=pos[1])
            elif kind == "b" and n is not None and n > pos[1] + 1:
                missed = await self._stored_after(pos[0], pos[1], upto_s=pos[0], upto_b=n - 1)
            elif kind == "resync":
                missed = await self._stored_after(pos[0], pos[1])
            else:
                missed = []
        except Unavailable as exc:
            logger.warning("django_mcp: GET stream cannot catch up (%s)", exc)
            missed = []
        for stored in missed:
            await self._emit(stored)

    async def _live(self, item: Any) -> bool:
        """One live item: first what it skipped, then itself; the stream ends only from the queue."""
        await self._catch_up(item)
        if item[0] != "resync":
            await self._emit(item)
        return False


__all__ = ["GetStream", "PostResponseStream", "ResumedPost", "SSEWriter", "serve_get"]
