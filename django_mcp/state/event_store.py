"""Event store for SSE resumption, on Django's cache framework.

Three logs, all bounded and expiring, readable from every worker (with a shared cache
such as Redis):

* a POST response stream keeps its events under one key (``<stream>_<seq>`` ids); it has
  one writer, which also renews a *lease* while the request runs, so a stream resumed on
  another worker can tell a slow writer from a dead one;
* a session's GET stream events (server notifications for that session) are stored by the
  publisher, one key per event, numbered by ``cache.incr`` so the sequence is unique per
  session across workers, whether or not a stream is attached anywhere;
* broadcasts a GET stream carries (``list_changed``, ``resource_updated``) are stored once,
  in a global log with its own ``incr`` sequence.

A GET stream's event id carries both positions (``g<stream>_<session seq>.<broadcast seq>``),
so a resumed stream replays exactly what came after both.
"""

from __future__ import annotations

import logging
import re
import secrets
import time
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache

from ..conf import mcp_settings
from ..runtime.unavailable import BackendUnavailable, Unavailable

logger = logging.getLogger("django_mcp")

T = TypeVar("T")

#: Broadcast kinds a GET stream turns into notifications: the ones worth replaying.
REPLAYABLE = frozenset({"list_changed", "resource_updated"})
_PREFIX = "django_mcp:"
_BSEQ = _PREFIX + "bseq"


def new_stream_id() -> str:
    return secrets.token_hex(8)


def event_id(stream: str, seq: int) -> str:
    return f"{stream}_{seq}"


#: Stream ids are hex (ours) and positions ASCII digits: ``str.isdigit`` would let ``²`` through to ``int()``.
_EVENT_ID = re.compile(r"([0-9A-Za-z]+)_([0-9]{1,18})")
_GET_EVENT_ID = re.compile(r"([0-9A-Za-z]+)_([0-9]{1,18})\.([0-9]{1,18})")


def parse_event_id(value: str) -> tuple[str, int] | None:
    match = _EVENT_ID.fullmatch(value) if len(value) <= 64 else None
    if match is None:
        return None
    return match[1], int(match[2])


def get_event_id(stream: str, s: int, b: int) -> str:
    """A GET stream's event id: its session-log and broadcast-log positions."""
    return f"{stream}_{s}.{b}"


def parse_get_event_id(value: str) -> tuple[str, int, int] | None:
    match = _GET_EVENT_ID.fullmatch(value) if len(value) <= 64 else None
    if match is None:
        return None
    return match[1], int(match[2]), int(match[3])


def _key(session: str, stream: str) -> str:
    return f"{_PREFIX}ev:{session}:{stream}"


def _lease_key(session: str, stream: str) -> str:
    return f"{_PREFIX}lease:{session}:{stream}"


def _sseq_key(session: str) -> str:
    return f"{_PREFIX}sseq:{session}"


def _sev_key(session: str, n: int) -> str:
    return f"{_PREFIX}se:{session}:{n}"


def _bev_key(n: int) -> str:
    return f"{_PREFIX}b:{n}"


def _origin() -> int:
    """Where a new counter starts: the microseconds since the epoch.

    A counter lost with its store (Redis restarted without persistence) or expired starts
    again above every number it gave before, so a stream that has seen those numbers takes
    the new ones as new instead of dropping them as already sent.
    """
    return time.time_ns() // 1000


def _start(cache: Any, key: str, timeout: float | None) -> None:
    """Create the counter at ``_origin()`` unless it exists (``SET NX`` on Redis)."""
    cache.add(key, _origin(), timeout)


def _next(cache: Any, key: str, timeout: float | None) -> int:
    """The next number of a counter shared by every worker (atomic ``INCR`` on Redis)."""
    try:
        return int(cache.incr(key))
    except ValueError:  # the counter does not exist yet
        _start(cache, key, timeout)
        return int(cache.incr(key))


def _append_numbered(
    cache: Any, counter: str, key: Callable[[int], str], value: Any, cap: int, counter_ttl: float | None
) -> int:
    """Store ``value`` under the log's next number, dropping the one that falls out of its cap."""
    n = _next(cache, counter, counter_ttl)
    cache.set(key(n), (time.time(), value), mcp_settings.EVENT_STORE_TTL)
    if n > cap:
        cache.delete(key(n - cap))
    return n


def _numbered_after(cache: Any, key: Callable[[int], str], after: int, last: int, cap: int) -> list[tuple[int, Any]]:
    """``(n, (stored at, value))`` for the entries numbered ``after+1..last`` still kept, oldest first."""
    first = max(after, last - cap) + 1
    if first > last:
        return []
    found = cache.get_many([key(n) for n in range(first, last + 1)])
    return [(n, found[key(n)]) for n in range(first, last + 1) if found.get(key(n)) is not None]


class EventStore:
    """The three logs; each ``*_sync`` method is one short cache round trip or two."""

    def _cache(self) -> Any:
        return caches[mcp_settings.EVENT_STORE_CACHE]

    # -- POST response streams: one writer each ------------------------------------------------
    def append_sync(self, session: str, stream: str, seq: int, data: bytes, done: bool = False) -> None:
        cache = self._cache()
        key = _key(session, stream)
        entry = cache.get(key) or {"events": [], "done": False}
        entry["events"].append((seq, data))
        limit = mcp_settings.EVENT_STORE_MAX_EVENTS
        if len(entry["events"]) > limit:
            entry["events"] = entry["events"][-limit:]
        entry["done"] = entry["done"] or done
        cache.set(key, entry, mcp_settings.EVENT_STORE_TTL)

    def open_sync(self, session: str, stream: str, request_id: Any = None) -> None:
        """Make a stream known (no events yet), so a client can resume it from its priming event.

        Its writer lease starts with it: a known stream without a lease always means a writer that
        stopped renewing, never one whose first lease failed to be stored.
        """
        self.lease_sync(session, stream)
        entry = {"events": [], "done": False, "rid": request_id}
        self._cache().add(_key(session, stream), entry, mcp_settings.EVENT_STORE_TTL)

    def replay_sync(self, session: str, stream: str, after: int) -> tuple[list[tuple[int, bytes]], bool] | None:
        """Events after ``after`` and whether the stream has ended; None for an unknown stream."""
        entry = self._cache().get(_key(session, stream))
        if entry is None:
            return None
        return [(s, d) for s, d in entry["events"] if s > after], bool(entry["done"])

    def request_id_sync(self, session: str, stream: str) -> Any:
        entry = self._cache().get(_key(session, stream))
        return None if entry is None else entry.get("rid")

    def lease_sync(self, session: str, stream: str) -> None:
        """The writer is alive for another ``WRITER_LEASE_TTL`` seconds."""
        self._cache().set(_lease_key(session, stream), 1, mcp_settings.WRITER_LEASE_TTL)

    def release_sync(self, session: str, stream: str) -> None:
        self._cache().delete(_lease_key(session, stream))

    def leased_sync(self, session: str, stream: str) -> bool:
        return self._cache().get(_lease_key(session, stream)) is not None

    # -- a session's GET stream ---------------------------------------------------------------
    def append_session_sync(self, session: str, data: bytes) -> int:
        """Store one event for the session's GET stream; its number, unique across workers."""
        cap = int(mcp_settings.EVENT_STORE_SESSION_MAX_EVENTS)
        return _append_numbered(
            self._cache(), _sseq_key(session), lambda n: _sev_key(session, n), data, cap, self._session_counter_ttl()
        )

    def session_position_sync(self, session: str) -> int:
        return int(self._cache().get(_sseq_key(session)) or 0)

    def _session_counter_ttl(self) -> float:
        return float(max(mcp_settings.EVENT_STORE_TTL, mcp_settings.SESSION_IDLE_TIMEOUT) * 2)

    def session_after_sync(self, session: str, after: int, upto: int | None = None) -> list[tuple[int, float, bytes]]:
        """Stored events numbered after ``after`` (up to ``upto``, else the newest), oldest first."""
        last = self.session_position_sync(session) if upto is None else upto
        cap = int(mcp_settings.EVENT_STORE_SESSION_MAX_EVENTS)
        kept = _numbered_after(self._cache(), lambda n: _sev_key(session, n), after, last, cap)
        return [(n, float(at), bytes(data)) for n, (at, data) in kept]

    # -- broadcasts ---------------------------------------------------------------------------
    def stamp_broadcast_sync(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Store a replayable broadcast and number it (``bseq``); other kinds pass unchanged.

        With the store down the broadcast still goes out live, unnumbered: a stream that
        is attached gets it, a resumed one cannot.
        """
        if payload.get("kind") not in REPLAYABLE:
            return payload
        try:
            cap = int(mcp_settings.EVENT_STORE_BROADCAST_MAX_EVENTS)
            n = _append_numbered(self._cache(), _BSEQ, _bev_key, payload, cap, None)
        except Exception as exc:  # noqa: BLE001 - whatever the cache backend raises when it is down
            logger.warning("django_mcp: event store unavailable, broadcast not stored (%s)", exc)
            return payload
        return {**payload, "bseq": n}

    def broadcast_position_sync(self) -> int:
        return int(self._cache().get(_BSEQ) or 0)

    def broadcasts_after_sync(self, after: int, upto: int | None = None) -> list[tuple[int, float, dict[str, Any]]]:
        last = self.broadcast_position_sync() if upto is None else upto
        cap = int(mcp_settings.EVENT_STORE_BROADCAST_MAX_EVENTS)
        kept = _numbered_after(self._cache(), _bev_key, after, last, cap)
        return [(n, float(at), dict(payload)) for n, (at, payload) in kept]

    # -- async faces ----------------------------------------------------------------------------
    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a store call off the event loop (LocMem inline); a cache failure becomes ``Unavailable``."""
        try:
            if _is_local_cache():
                return fn(*args)
            return await sync_to_async(fn, thread_sensitive=False)(*args)
        except Exception as exc:
            raise BackendUnavailable(f"Event store unavailable ({type(exc).__name__})") from exc

    async def _try(self, fn: Callable[..., Any], *args: Any) -> bool:
        """A write the caller can do without: logged, never raised; whether it was stored."""
        try:
            await self._call(fn, *args)
        except Unavailable as exc:
            logger.warning("django_mcp: %s", exc)
            return False
        return True

    async def append(self, session: str, stream: str, seq: int, data: bytes, done: bool = False) -> bool:
        return await self._try(self.append_sync, session, stream, seq, data, done)

    async def open(self, session: str, stream: str, request_id: Any = None) -> None:
        await self._try(self.open_sync, session, stream, request_id)

    async def replay(self, session: str, stream: str, after: int) -> tuple[list[tuple[int, bytes]], bool] | None:
        return await self._call(self.replay_sync, session, stream, after)

    async def request_id(self, session: str, stream: str) -> Any:
        return await self._call(self.request_id_sync, session, stream)

    async def lease(self, session: str, stream: str) -> None:
        await self._try(self.lease_sync, session, stream)

    async def release(self, session: str, stream: str) -> None:
        await self._try(self.release_sync, session, stream)

    async def leased(self, session: str, stream: str) -> bool:
        return await self._call(self.leased_sync, session, stream)

    async def append_session(self, session: str, data: bytes) -> int | None:
        try:
            return await self._call(self.append_session_sync, session, data)
        except Unavailable as exc:
            logger.warning("django_mcp: %s", exc)
            return None

    def positions_sync(self, session: str) -> tuple[int, int]:
        """The newest session and broadcast numbers, starting either counter that does not exist yet.

        Started here, a counter's first event follows a new stream's position directly: no gap
        for the stream to fetch from the store.
        """
        cache = self._cache()
        _start(cache, _sseq_key(session), self._session_counter_ttl())
        _start(cache, _BSEQ, None)
        return self.session_position_sync(session), self.broadcast_position_sync()

    async def positions(self, session: str) -> tuple[int, int]:
        """Where a new GET stream starts: the newest session and broadcast numbers."""
        return await self._call(self.positions_sync, session)

    async def session_after(self, session: str, after: int, upto: int | None = None) -> list[tuple[int, float, bytes]]:
        return await self._call(self.session_after_sync, session, after, upto)

    async def broadcasts_after(self, after: int, upto: int | None = None) -> list[tuple[int, float, dict[str, Any]]]:
        return await self._call(self.broadcasts_after_sync, after, upto)

    async def stamp_broadcast(self, payload: dict[str, Any]) -> dict[str, Any]:
        if payload.get("kind") not in REPLAYABLE:  # nothing to store: no thread hop
            return payload
        return await self._call(self.stamp_broadcast_sync, payload)


def _is_local_cache() -> bool:
    return isinstance(caches[mcp_settings.EVENT_STORE_CACHE], LocMemCache)


events = EventStore()
