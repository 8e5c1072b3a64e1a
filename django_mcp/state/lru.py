"""A bounded, least-recently-used map for per-worker caches (the session cache).

Bounded by size and by age: an entry unused for ``max_age`` seconds or pushed out by
newer ones is simply dropped, since its owner can reload it (a session from the
database). Entries carry their own last-use time (``seen``, ``time.monotonic()``),
so a hit costs one ``move_to_end`` and no allocation.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class Seen(Protocol):
    seen: float


V = TypeVar("V", bound=Seen)


class LRU(Generic[V]):
    """``get``/``[]=``/``pop`` like a dict; the least recently used entries go first."""

    def __init__(self, size: Callable[[], int], max_age: Callable[[], float]) -> None:
        # Callables, so that the limits follow settings changed at runtime (override_settings).
        self._data: OrderedDict[str, V] = OrderedDict()
        self._size = size
        self._max_age = max_age

    def get(self, key: str) -> V | None:
        """The entry, marked as just used."""
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def peek(self, key: str) -> V | None:
        """The entry, without marking it used."""
        return self._data.get(key)

    def __setitem__(self, key: str, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        self.prune()

    def pop(self, key: str, default: V | None = None) -> V | None:
        return self._data.pop(key, default)

    def prune(self, now: float | None = None) -> int:
        """Drop entries past the size bound or unused for longer than the age bound; how many went."""
        data = self._data
        dropped = 0
        size = max(int(self._size()), 1)
        while len(data) > size:
            data.popitem(last=False)
            dropped += 1
        oldest = (time.monotonic() if now is None else now) - float(self._max_age())
        while data:
            first = next(iter(data.values()))
            if first.seen >= oldest:
                break
            data.popitem(last=False)
            dropped += 1
        return dropped

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def keys(self) -> list[str]:
        return list(self._data)
