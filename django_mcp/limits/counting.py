"""Fixed-window counters on Django's cache, spent in local leases so most calls do no I/O.

Why not one cache round trip per call (what the ``limits`` library's strategies do over their
storages): with Redis that is a network hop on every request, and Django's cache API is sync, so
each hop is also a thread hop. Instead each worker *leases* a slice of a key's window from the
shared counter (one atomic ``INCRBY``: a single pipelined round trip on Django's ``RedisCache``,
``add`` + ``incr`` on any other backend) and spends it in memory. The shared counter only ever
grows by what was leased, so all workers together never admit more than the limit in a window;
a slice still unspent in another worker when the budget runs out can make a caller be refused
up to ``(workers - 1) * slice`` calls early. A slice is a twentieth of the limit (1 to 1000), so
a small limit ("5/minute") is counted call by call, exactly, and a large one costs a round trip
per slice. A key known to be exhausted is refused in memory until its window ends.

The counters fail open: when the cache cannot be reached the call is admitted (and logged),
because a rate limit must not turn a cache outage into an outage of every request.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from typing import Any

from django.core.cache import caches
from django.core.signals import setting_changed

from ..runtime.sync_pool import run_bookkeeping
from .rates import Rate

logger = logging.getLogger("django_mcp")

PREFIX = "django_mcp:rate:"
#: Local slots kept before the stale ones (past windows) are dropped.
MAX_SLOTS = 10_000
#: The most a worker leases at once, and the share of the limit it leases.
MAX_SLICE = 1000
SLICE_SHARE = 20


def cache_key(*parts: str) -> str:
    """A cache key safe for every backend (memcached's 250 characters, no spaces or control characters)."""
    raw = ":".join(parts)
    if len(raw) > 180 or not raw.isprintable() or " " in raw:
        raw = hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()
    return PREFIX + raw


def reserve(alias: str, key: str, amount: int, ttl: int, *, refresh: bool = False) -> int:
    """Add ``amount`` to the shared counter ``key``; its new total. Sync.

    The key lives ``ttl`` seconds from its creation, or from now with ``refresh`` (a count of things
    in flight, which must not expire while it changes).
    """
    cache = caches[alias]
    client = _redis_client(cache, key)
    if client is not None:
        full, redis = client
        pipe = redis.pipeline(transaction=False)
        if refresh:
            pipe.incrby(full, amount)
            pipe.expire(full, ttl)
            return int(pipe.execute()[0])
        pipe.set(full, 0, ex=ttl, nx=True)
        pipe.incrby(full, amount)
        return int(pipe.execute()[1])
    cache.add(key, 0, ttl)
    try:
        total = int(cache.incr(key, amount))
    except ValueError:  # expired or evicted between add and incr
        cache.add(key, amount, ttl)
        return amount
    if refresh:
        cache.touch(key, ttl)
    return total


def release(alias: str, key: str, ttl: int, amount: int = 1) -> None:
    """Take ``amount`` back from the shared counter ``key``, which then lives ``ttl`` seconds more. Sync."""
    cache = caches[alias]
    client = _redis_client(cache, key)
    if client is not None:
        full, redis = client
        pipe = redis.pipeline(transaction=False)
        pipe.decrby(full, amount)
        pipe.expire(full, ttl)  # a key that expired meanwhile comes back below zero: it must expire again
        pipe.execute()
        return
    try:
        cache.decr(key, amount)
    except ValueError:  # expired: nothing left to take back
        pass


def _redis_client(cache: Any, key: str) -> tuple[str, Any] | None:
    """Django's own ``RedisCache``: the full key and the redis-py client, for one pipelined round trip."""
    if type(cache).__module__ != "django.core.cache.backends.redis":
        return None
    full = cache.make_and_validate_key(key)
    return full, cache._cache.get_client(full, write=True)


class _Slot:
    """One key's local state in one window: what this worker may still admit, and whether the budget is gone."""

    __slots__ = ("exhausted", "leasing", "left", "seconds", "window")

    def __init__(self, window: int, seconds: int) -> None:
        self.window = window
        self.seconds = seconds
        self.left = 0
        self.exhausted = False
        self.leasing: asyncio.Future[None] | None = None


class Counters:
    """The worker's leases, by key and rate; ``take`` spends one call."""

    def __init__(self) -> None:
        self._slots: dict[tuple[str, int, int], _Slot] = {}
        self._failed_at = 0.0

    def clear(self) -> None:
        self._slots.clear()

    def try_take(self, key: str, rate: Rate, now: float) -> bool | int:
        """Spend one call in memory: True when admitted, the seconds to wait when refused, False to lease first."""
        seconds = rate.seconds
        window = int(now // seconds)
        slot = self._slots.get((key, rate.amount, seconds))
        if slot is None or slot.window != window:
            return False
        if slot.left > 0:
            slot.left -= 1
            return True
        if slot.exhausted:
            return max(1, math.ceil((window + 1) * seconds - now))
        return False

    async def take(self, alias: str, key: str, rate: Rate) -> int | None:
        """Spend one call of ``rate`` for ``key``: None when admitted, else the seconds until its window ends."""
        while True:
            slot = self._spend(key, rate)
            if not isinstance(slot, _Slot):
                return slot
            leasing = slot.leasing
            if leasing is None or leasing.done() or leasing.get_loop() is not asyncio.get_running_loop():
                leasing = slot.leasing = asyncio.ensure_future(self._lease(alias, key, rate, slot))
            await asyncio.shield(leasing)  # a cancelled caller must not cancel the lease others wait for

    def _spend(self, key: str, rate: Rate) -> _Slot | int | None:
        """One call spent in memory (None) or refused (seconds to wait); else the slot to lease a slice for."""
        now = time.time()
        taken = self.try_take(key, rate, now)
        if taken is True:
            return None
        if taken is not False:
            return int(taken)
        return self._slot(key, rate, now)

    def _slot(self, key: str, rate: Rate, now: float) -> _Slot:
        window = int(now // rate.seconds)
        index = (key, rate.amount, rate.seconds)
        slot = self._slots.get(index)
        if slot is None or slot.window != window:
            if len(self._slots) >= MAX_SLOTS:
                self._prune(now)
            slot = self._slots[index] = _Slot(window, rate.seconds)
        return slot

    def _prune(self, now: float) -> None:
        stale = [k for k, s in self._slots.items() if s.window != int(now // s.seconds)]
        for k in stale:
            del self._slots[k]
        if len(self._slots) >= MAX_SLOTS:  # all current: forget the oldest half (they lease again)
            for k in list(self._slots)[: MAX_SLOTS // 2]:
                del self._slots[k]

    def take_sync(self, alias: str, key: str, rate: Rate) -> int | None:
        """``take`` for sync code (a Django view): a lease's round trip runs on the calling thread."""
        while True:
            slot = self._spend(key, rate)
            if not isinstance(slot, _Slot):
                return slot
            size, shared, ttl = self._lease_of(key, rate, slot)
            try:
                total = reserve(alias, shared, size, ttl)
            except Exception:  # noqa: BLE001 (a cache outage admits, fail open; _failed logs it)
                self._failed(alias, slot, size)
                continue
            self._granted(rate, slot, size, total)

    @staticmethod
    def _lease_of(key: str, rate: Rate, slot: _Slot) -> tuple[int, str, int]:
        """The slice to lease for ``slot``, the shared counter's key, and its time to live."""
        size = max(1, min(rate.amount // SLICE_SHARE, MAX_SLICE))
        end = (slot.window + 1) * slot.seconds
        ttl = max(1, math.ceil(end - time.time()) + 1)
        return size, cache_key(key, f"{rate.amount}/{rate.seconds}", str(slot.window)), ttl

    def _failed(self, alias: str, slot: _Slot, size: int) -> None:
        now = time.time()
        if now - self._failed_at > 60:
            self._failed_at = now
            logger.warning("django_mcp: rate limits cannot reach cache %r; admitting calls", alias, exc_info=True)
        slot.left += size

    @staticmethod
    def _granted(rate: Rate, slot: _Slot, size: int, total: int) -> None:
        granted = max(0, min(size, rate.amount - (total - size)))
        slot.left += granted
        if granted < size:
            slot.exhausted = True

    async def _lease(self, alias: str, key: str, rate: Rate, slot: _Slot) -> None:
        """Lease a slice of ``slot``'s window from the shared counter."""
        size, shared, ttl = self._lease_of(key, rate, slot)
        try:
            total = await run_bookkeeping(reserve, alias, shared, size, ttl)
        except Exception:  # noqa: BLE001 (a cache outage admits, fail open; _failed logs it)
            self._failed(alias, slot, size)
            return
        self._granted(rate, slot, size, total)


#: This worker's counters.
counters = Counters()


def _forget(*, setting: str, **kwargs: Any) -> None:
    """New limits or caches (tests' ``override_settings``): the leases of the old ones no longer hold."""
    if setting in ("DJANGO_MCP", "CACHES"):
        counters.clear()


setting_changed.connect(_forget)


__all__ = ["Counters", "cache_key", "counters", "release", "reserve"]
