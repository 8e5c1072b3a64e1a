"""Handshake-era sessions: stored in the database, cached per worker process.

The hot path never queries the database for a known session: each worker keeps
a small ``SessionState`` per session and revalidates it against the database at
most every ``SESSION_REVALIDATE_INTERVAL`` seconds, with one ``UPDATE`` that also
refreshes ``last_seen`` and fails for an ended or idle-expired session. Ending a
session (DELETE, the admin action, expiry) is broadcast over the channel layer
so every worker drops it at once; idle expiry (``mcp_cleanup``) broadcasts the ended
ids in batches. The per-worker cache is bounded (``SESSION_CACHE_SIZE``,
``SESSION_CACHE_MAX_AGE``): an evicted session is reloaded from the database on its
next request. Whoever wants to know when sessions end (telemetry's
``mcp.server.session.duration``) connects to ``session_ended``.

Every query runs in ``django_mcp.runtime.sync_pool``'s bookkeeping pool, between two
``close_old_connections()`` as in a Django request: never queued behind a tool,
and a connection broken by a database restart is dropped, not kept.
"""

from __future__ import annotations

import logging
import secrets
import time
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.db import connections, router
from django.db.models import F
from django.dispatch import Signal
from django.utils import timezone

from ..conf import mcp_settings
from ..models import MCPSession
from ..runtime.sync_pool import run_bookkeeping
from ..runtime.unavailable import Unavailable
from .hub import hub, long_lived, session_group
from .lru import LRU
from .session_read import live_session
from .writelock import serialized_write, write_transaction

logger = logging.getLogger("django_mcp")

#: Ended session ids per broadcast message (channels_redis drops messages past a channel's capacity).
END_BATCH = 500

#: Sent (``sender``: ``MCPSession``) when handshake-era sessions end, with ``sessions``, a list of
#: ``EndedSession``; ``reason``: "closed" (DELETE, or the transport's own end: a legacy SSE stream closed,
#: stdio's input ended), "ended" (the admin, a disabled OAuth client) or "expired" (idle past
#: ``SESSION_IDLE_TIMEOUT``); and ``transport``, the ``Call.transport`` that ended it (None for the others).
#: Only with a receiver connected does ending a session cost the query that fills ``sessions``.
session_ended = Signal()


@dataclass(frozen=True)
class EndedSession:
    """A session that has just ended, as ``session_ended`` reports it."""

    id: str
    revision: str
    created: datetime
    ended: datetime

    @property
    def duration(self) -> float:
        """Seconds from ``initialize`` to the end."""
        return max(0.0, (self.ended - self.created).total_seconds())


def _ended(ids: list[str], ended: datetime | None = None) -> list[EndedSession]:
    rows = MCPSession.objects.filter(id__in=ids, ended__isnull=False)
    if ended is not None:  # those this very UPDATE ended, not one ended before by other means
        rows = rows.filter(ended=ended)
    return [EndedSession(*row) for row in rows.values_list("id", "protocol_version", "created", "ended")]


def _report_sync(sessions: list[EndedSession], reason: str, transport: str | None = None) -> None:
    if not sessions:
        return
    for receiver, outcome in session_ended.send_robust(
        MCPSession, sessions=sessions, reason=reason, transport=transport
    ):
        if isinstance(outcome, Exception):
            logger.error("django_mcp: session_ended receiver %r failed", receiver, exc_info=outcome)


class SessionState:
    """What a worker knows about a session. Kept small: thousands may sit idle."""

    __slots__ = (
        "checked",
        "client_capabilities",
        "client_id",
        "client_info",
        "id",
        "initialized",
        "log_level",
        "revision",
        "seen",
        "subscriptions",
        "subscriptions_version",
        "user_id",
    )

    def __init__(
        self,
        id: str,
        revision: str,
        client_info: dict[str, Any],
        client_capabilities: dict[str, Any],
        user_id: Any,
        log_level: str | None = None,
        subscriptions: set[str] | None = None,
        initialized: bool = False,
        client_id: str = "",
    ) -> None:
        self.id = id
        self.revision = revision
        self.client_info = client_info
        self.client_capabilities = client_capabilities
        self.user_id = user_id
        self.client_id = client_id  # the OAuth client whose token opened the session ("" without OAuth)
        self.log_level = log_level
        self.subscriptions = subscriptions or set()
        self.subscriptions_version = 0  # when the set was read under the row lock (ns): newer wins
        self.initialized = initialized
        self.checked = time.monotonic()
        self.seen = self.checked


_FIELD_ATTRS = {
    "protocol_version": "revision",
    "client_info": "client_info",
    "client_capabilities": "client_capabilities",
    "log_level": "log_level",
    "initialized": "initialized",
}


def _apply(state: SessionState, fields: dict[str, Any], version: int = 0) -> None:
    """Bring a cached session up to date with a change made on another worker.

    Two workers' subscription changes are serialized by the row lock but their broadcasts
    may arrive in either order: a set older than the one already applied is ignored.
    """
    for name, value in fields.items():
        if name == "subscriptions":
            if version >= state.subscriptions_version:
                state.subscriptions = set(value)
                state.subscriptions_version = version
        elif name in _FIELD_ATTRS:
            setattr(state, _FIELD_ATTRS[name], value)


def owner_id(user: Any) -> Any:
    """The primary key a session records for ``user`` (None for anonymous callers)."""
    return getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None


def new_session_id() -> str:
    """256 random bits, URL-safe base64: visible ASCII as the transport spec requires."""
    return secrets.token_urlsafe(32)


class SessionStore:
    def __init__(self) -> None:
        self._local: LRU[SessionState] = LRU(
            lambda: int(mcp_settings.SESSION_CACHE_SIZE), lambda: float(mcp_settings.SESSION_CACHE_MAX_AGE)
        )
        hub.on_broadcast(self._on_broadcast)

    def _on_broadcast(self, payload: dict[str, Any]) -> None:
        kind, sid = payload.get("kind"), payload.get("session", "")
        if kind == "session_ended":
            self._local.pop(sid, None)
        elif kind == "sessions_ended":
            for ended in payload.get("sessions") or ():
                self._local.pop(ended, None)
                group = session_group(ended)
                if hub.has_local(group):  # its GET stream (or a resumed one) is open here: end it
                    hub.deliver_local(group, {"kind": "session_ended", "session": ended})
        elif kind == "session_changed":
            state = self._local.get(sid)
            if state is not None:
                _apply(state, payload.get("fields") or {}, int(payload.get("version") or 0))

    async def create(
        self,
        revision: str,
        client_info: dict[str, Any],
        capabilities: dict[str, Any],
        user: Any,
        client_id: str = "",
    ) -> SessionState:
        user_id = owner_id(user)
        sid = new_session_id()
        await run_bookkeeping(
            serialized_write,
            MCPSession.objects.create,
            id=sid,
            protocol_version=revision,
            client_info=client_info,
            client_capabilities=capabilities,
            user_id=user_id,
            oauth_client=client_id,
            last_seen=timezone.now(),
        )
        state = SessionState(sid, revision, client_info, capabilities, user_id, client_id=client_id)
        await self._cache(state)
        return state

    async def _cache(self, state: SessionState) -> None:
        """Keep ``state`` in this worker's cache, listening for other workers changing or ending it.

        Not in WSGI mode (``routing.long_lived`` false): no hub hears the changes there, so every
        request reads its session from the database.
        """
        if not long_lived.get():
            return
        try:
            await hub.start()  # cached from now on: hear other workers change or end it
        except Unavailable as exc:  # the layer is down: revalidation still catches an ended session
            logger.warning("django_mcp: not listening for session changes (%s)", exc)
        self._local[state.id] = state

    async def get_owned(self, sid: str, user: Any, client_id: str = "") -> SessionState | None:
        """``get``, and None as well when the session belongs to another user or OAuth client.

        A session id is a bearer secret only together with the token that opened it:
        presented with another user's (or client's) token it does not exist.
        """
        state = await self.get(sid)
        if state is None or state.user_id != owner_id(user) or state.client_id != client_id:
            return None
        return state

    async def get(self, sid: str) -> SessionState | None:
        """The live session named ``sid``, or None when unknown, ended or expired."""
        if not long_lived.get():
            return await self._read(sid)
        now = time.monotonic()
        state = self._local.get(sid)
        if state is not None:
            if now - state.checked < mcp_settings.SESSION_REVALIDATE_INTERVAL:
                state.seen = now
                return state
            if not await self._touch(sid):
                self._local.pop(sid, None)
                return None
            state.checked = state.seen = now
            return state
        if len(sid) > 64 or not await self._touch(sid):
            return None
        return await self._load(sid)

    async def _touch(self, sid: str) -> bool:
        now = timezone.now()
        idle = now - timedelta(seconds=mcp_settings.SESSION_IDLE_TIMEOUT)
        updated = await run_bookkeeping(
            serialized_write,
            MCPSession.objects.filter(id=sid, ended__isnull=True, last_seen__gte=idle).update,
            last_seen=now,
        )
        return bool(updated == 1)

    async def _load(self, sid: str) -> SessionState | None:
        row = await run_bookkeeping(MCPSession.objects.filter(id=sid, ended__isnull=True).first)
        if row is None:
            return None
        state = self._state(row)
        await self._cache(state)
        return state

    async def _read(self, sid: str) -> SessionState | None:
        """WSGI mode: the session from the database on every request, one SELECT (compiled once: ``session_read``).

        ``last_seen`` is written only once it is ``SESSION_REVALIDATE_INTERVAL`` old, as a
        worker with a cache writes it, so concurrent requests of one session do not queue
        on a row lock (or on SQLite's one writer).
        """
        if len(sid) > 64:
            return None
        early = prefetched.get()
        if early is not None and early.sid == sid:
            prefetched.set(None)  # once: a later read in this request sees what the request changed
            now, row = early.now, early.row
        else:
            now = timezone.now()
            idle = now - timedelta(seconds=mcp_settings.SESSION_IDLE_TIMEOUT)
            row = await run_bookkeeping(live_session, sid, idle)
        if row is None:
            return None
        if now - row.last_seen >= timedelta(seconds=mcp_settings.SESSION_REVALIDATE_INTERVAL) and not await self._touch(
            sid
        ):
            return None
        return self._state(row)

    @staticmethod
    def _state(row: Any) -> SessionState:
        return SessionState(
            row.id,
            row.protocol_version,
            row.client_info or {},
            row.client_capabilities or {},
            row.user_id,
            row.log_level or None,
            set(row.subscriptions or ()),
            row.initialized,
            row.oauth_client,
        )

    async def update(self, state: SessionState, **fields: Any) -> None:
        """Persist a change of session state (rare: initialized, log level, subscriptions)."""
        updated = await run_bookkeeping(
            serialized_write, MCPSession.objects.filter(id=state.id, ended__isnull=True).update, **fields
        )
        if not updated:  # ended meanwhile (DELETE, the admin, expiry): never cache it again
            self._local.pop(state.id, None)
            return
        if long_lived.get():
            self._local[state.id] = state
        # Saved: without the layer, other workers catch up when they revalidate or reload it.
        await hub.broadcast_or_log({"kind": "session_changed", "session": state.id, "fields": fields})

    async def set_subscription(self, state: SessionState, uri: str, on: bool) -> None:
        """Add or drop one resource subscription, atomically in the database.

        Two workers may take a session's subscribe requests one after the other before either
        has heard of the other's change: a read-modify-write of their cached sets would drop one.
        """

        def change() -> tuple[list[str], int] | None:
            with write_transaction():
                row = (
                    MCPSession.objects.select_for_update()
                    .filter(id=state.id, ended__isnull=True)
                    .only("id", "subscriptions")
                    .first()
                )
                if row is None:
                    return None
                subs = set(row.subscriptions or ())
                if (uri in subs) != on:
                    subs.add(uri) if on else subs.discard(uri)
                    row.subscriptions = sorted(subs)
                    row.save(update_fields=["subscriptions"])
                return sorted(subs), time.time_ns()  # taken under the lock: orders the broadcasts

        changed = await run_bookkeeping(change)
        if changed is None:  # ended meanwhile: never cache it again
            self._local.pop(state.id, None)
            return
        current, version = changed
        _apply(state, {"subscriptions": current}, version)
        self._local[state.id] = state
        await hub.broadcast_or_log(
            {"kind": "session_changed", "session": state.id, "fields": {"subscriptions": current}, "version": version}
        )

    async def is_initialized(self, state: SessionState) -> bool:
        """Whether the client sent notifications/initialized (asks the database if another worker got it)."""
        if not state.initialized:
            state.initialized = await run_bookkeeping(MCPSession.objects.filter(id=state.id, initialized=True).exists)
        return state.initialized

    def peek(self, sid: str) -> SessionState | None:
        """This worker's current view of a session, without any I/O."""
        return self._local.peek(sid)

    def prune(self) -> int:
        """Drop cached sessions unused for ``SESSION_CACHE_MAX_AGE`` (inserts prune too)."""
        return self._local.prune()

    async def end(self, sid: str, transport: str | None = None) -> bool:
        """End session ``sid`` (DELETE, or its transport ended); ``transport`` ended it (``Call.transport``)."""
        updated = await run_bookkeeping(
            serialized_write, MCPSession.objects.filter(id=sid, ended__isnull=True).update, ended=timezone.now()
        )
        self._local.pop(sid, None)
        await announce_end(sid)
        if updated == 1 and session_ended.has_listeners(MCPSession):
            sessions = await run_bookkeeping(_ended, [sid])
            for receiver, outcome in await session_ended.asend_robust(
                MCPSession, sessions=sessions, reason="closed", transport=transport
            ):
                if isinstance(outcome, Exception):
                    logger.error("django_mcp: session_ended receiver %r failed", receiver, exc_info=outcome)
        return bool(updated == 1)

    def forget(self, sid: str) -> None:
        self._local.pop(sid, None)

    def __len__(self) -> int:
        return len(self._local)


async def announce_end(sid: str) -> None:
    """Tell every worker the session ended: caches drop it, its GET stream closes."""
    await hub.broadcast({"kind": "session_ended", "session": sid})
    await hub.publish(session_group(sid), {"kind": "session_ended"})


def end_sessions_sync(ids: list[str]) -> int:
    """For the admin action and management code running outside the event loop."""
    now = timezone.now()
    n = MCPSession.objects.filter(id__in=ids, ended__isnull=True).update(ended=now)
    for sid in ids:
        async_to_sync(announce_end)(sid)
    if n and session_ended.has_listeners(MCPSession):
        _report_sync(_ended(ids, now), "ended")
    return int(n)


def idle_sessions() -> Any:
    """Sessions not ended but idle past ``SESSION_IDLE_TIMEOUT`` (a queryset)."""
    idle = timezone.now() - timedelta(seconds=mcp_settings.SESSION_IDLE_TIMEOUT)
    return MCPSession.objects.filter(ended__isnull=True, last_seen__lt=idle)


def expire_idle_sync() -> int:
    """End idle sessions and tell every worker, in batches; ``ended`` is when each one expired.

    Workers drop the ended ids from their caches and close the GET streams still
    open for them (with a Redis layer; the in-memory layer reaches only this process,
    and other workers' cached entries then fail their next revalidation).
    """
    timeout = timedelta(seconds=mcp_settings.SESSION_IDLE_TIMEOUT)
    ids = list(idle_sessions().values_list("id", flat=True))
    count = 0
    for start in range(0, len(ids), END_BATCH):
        batch = ids[start : start + END_BATCH]
        listening = session_ended.has_listeners(MCPSession)
        idle = (
            list(idle_sessions().filter(id__in=batch).values_list("id", "protocol_version", "created", "last_seen"))
            if listening
            else []
        )
        count += idle_sessions().filter(id__in=batch).update(ended=F("last_seen") + timeout)
        async_to_sync(announce_ended)(batch)
        if listening:
            _report_sync([EndedSession(sid, rev, made, seen + timeout) for sid, rev, made, seen in idle], "expired")
    return count


async def expire_idle() -> int:
    """``expire_idle_sync`` from async code (a periodic job); the number of sessions ended."""
    count: int = await run_bookkeeping(expire_idle_sync)
    return count


async def announce_ended(ids: list[str]) -> None:
    """One broadcast for many ended sessions (idle expiry): caches drop them, their streams close."""
    payload = {"kind": "sessions_ended", "sessions": ids}
    store._on_broadcast(payload)  # this process at once, whether or not its hub listens
    await hub.broadcast(payload)  # from a management command too: publishing joins no group


@dataclass(frozen=True)
class Prefetched:
    """The session row a WSGI request names, read on the worker's own thread before its event loop runs."""

    sid: str
    now: datetime
    row: Any


def _kept_outside_a_transaction(connection: Any) -> bool:
    """Whether this thread's connection outlives the request (``CONN_MAX_AGE`` not 0, or a pool) and no
    transaction of the project's is open on it. With ``CONN_MAX_AGE = 0`` and no pool a read here would
    connect anew on every request, where the bookkeeping thread's connection stays open."""
    if connection.in_atomic_block:
        return False
    age = connection.settings_dict.get("CONN_MAX_AGE", 0)
    return age is None or age > 0 or bool((connection.settings_dict.get("OPTIONS") or {}).get("pool"))


#: Set by ``views.run`` around one WSGI request; ``Sessions._read`` takes it instead of a thread hop.
prefetched: ContextVar[Prefetched | None] = ContextVar("django_mcp_session_prefetched", default=None)


def prefetch(sid: str) -> Prefetched | None:
    """WSGI mode: read session ``sid`` here, on the calling (sync) thread and its own connection.

    Why: the read otherwise runs in the request's event loop, which must hand it to a bookkeeping
    thread (Django refuses the ORM in a thread running a loop): a thread hop and a second
    connection per request, for one primary-key ``SELECT``. A plain Django view reads on its own
    thread; so does this. Not inside a transaction the project opened (``ATOMIC_REQUESTS``): a
    failed read would spoil it. Any failure leaves the read to the loop, which answers a database
    outage as usual (503).
    """
    if len(sid) > 64 or not _kept_outside_a_transaction(connections[router.db_for_read(MCPSession)]):
        return None
    now = timezone.now()
    try:
        row = live_session(sid, now - timedelta(seconds=mcp_settings.SESSION_IDLE_TIMEOUT))
    except Exception:  # noqa: BLE001 - the loop reads again and maps the error
        return None
    return Prefetched(sid, now, row)


store = SessionStore()
