"""Event store for SSE resumption, on Django's cache framework.

Every SSE event we send gets an id ``<stream>_<seq>``; the event is kept under its
stream's key (bounded, expiring) so a client that lost the connection can send
``Last-Event-ID`` and receive exactly the events of that stream it missed, from
whichever worker it reconnects to (with a shared cache such as Redis).
"""

from __future__ import annotations

import secrets
from typing import Any

from asgiref.sync import sync_to_async
from django.core.cache import caches

from .conf import mcp_settings


def new_stream_id() -> str:
    return secrets.token_hex(8)


def event_id(stream: str, seq: int) -> str:
    return f"{stream}_{seq}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    stream, _, seq = value.partition("_")
    if not stream or not seq.isdigit() or len(value) > 64:
        return None
    return stream, int(seq)


def _key(session: str, stream: str) -> str:
    return f"django_mcp:ev:{session}:{stream}"


class EventStore:
    """Append-and-replay per stream; a stream belongs to one session and has one writer."""

    def _cache(self) -> Any:
        return caches[mcp_settings.EVENT_STORE_CACHE]

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

    def open_sync(self, session: str, stream: str) -> None:
        """Make a stream known (no events yet), so a client can resume it from its priming event."""
        self._cache().add(_key(session, stream), {"events": [], "done": False}, mcp_settings.EVENT_STORE_TTL)

    def replay_sync(self, session: str, stream: str, after: int) -> tuple[list[tuple[int, bytes]], bool] | None:
        """Events after ``after`` and whether the stream has ended; None for an unknown stream."""
        entry = self._cache().get(_key(session, stream))
        if entry is None:
            return None
        return [(s, d) for s, d in entry["events"] if s > after], bool(entry["done"])

    def mark_done_sync(self, session: str, stream: str) -> None:
        cache = self._cache()
        key = _key(session, stream)
        entry = cache.get(key)
        if entry is not None:
            entry["done"] = True
            cache.set(key, entry, mcp_settings.EVENT_STORE_TTL)

    async def append(self, session: str, stream: str, seq: int, data: bytes, done: bool = False) -> None:
        if _is_local_cache():
            self.append_sync(session, stream, seq, data, done)
        else:
            await sync_to_async(self.append_sync, thread_sensitive=False)(session, stream, seq, data, done)

    async def open(self, session: str, stream: str) -> None:
        if _is_local_cache():
            self.open_sync(session, stream)
        else:
            await sync_to_async(self.open_sync, thread_sensitive=False)(session, stream)

    async def replay(self, session: str, stream: str, after: int) -> tuple[list[tuple[int, bytes]], bool] | None:
        if _is_local_cache():
            return self.replay_sync(session, stream, after)
        return await sync_to_async(self.replay_sync, thread_sensitive=False)(session, stream, after)

    async def mark_done(self, session: str, stream: str) -> None:
        if _is_local_cache():
            self.mark_done_sync(session, stream)
        else:
            await sync_to_async(self.mark_done_sync, thread_sensitive=False)(session, stream)


def _is_local_cache() -> bool:
    from django.core.cache.backends.locmem import LocMemCache

    return isinstance(caches[mcp_settings.EVENT_STORE_CACHE], LocMemCache)


events = EventStore()
