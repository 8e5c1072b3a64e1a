"""Callbacks for requests still running after a fixed delay, all on one event-loop timer.

Most requests finish within a millisecond; a few need extra machinery once they
outlive a short delay (a disconnect watcher, a cross-worker cancellation
listener). A ``call_later`` per request would put a timer into the loop's heap
for every request only to cancel it; ``Later`` keeps the pending callbacks in an
insertion-ordered dict instead (the delay is fixed, so that is also deadline
order) and runs one timer for the earliest, so a request that finishes in time
costs a dict insert and a delete.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable

logger = logging.getLogger("django_mcp")


class Later:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._pending: dict[Hashable, tuple[float, Callable[[], None]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def add(self, key: Hashable, callback: Callable[[], None]) -> None:
        """Run ``callback`` after ``delay`` seconds unless ``discard(key)`` comes first."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (tests, a restarted server): forget the old one's work
            self._loop, self._timer = loop, None
            self._pending.clear()
        self._pending[key] = (loop.time() + self.delay, callback)
        if self._timer is None:
            self._timer = loop.call_later(self.delay, self._fire)

    def discard(self, key: Hashable) -> None:
        self._pending.pop(key, None)

    def _fire(self) -> None:
        self._timer = None
        loop = self._loop
        if loop is None:  # pragma: no cover - only reachable after a loop change raced the timer
            return
        now = loop.time()
        due: list[Callable[[], None]] = []
        for key, (deadline, callback) in list(self._pending.items()):
            if deadline > now:
                self._timer = loop.call_at(deadline, self._fire)
                break
            del self._pending[key]
            due.append(callback)
        for callback in due:
            try:
                callback()
            except Exception:  # one failing callback must not starve the others
                logger.exception("django_mcp: delayed callback failed")


def uncancel(task: asyncio.Task[object] | None) -> None:
    """Forget a cancellation that was handled, so later timeouts in ``task`` behave (Python 3.11+).

    The engine answers a client's cancellation itself and a timeout swallows its own: the task
    must then stop counting as "being cancelled", or the next ``asyncio.timeout`` in it misfires.
    """
    cancelling = getattr(task, "cancelling", None)
    if cancelling is not None and cancelling():
        task.uncancel()  # type: ignore[union-attr]  # 3.11+, like cancelling()
