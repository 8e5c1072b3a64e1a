"""A bounded in-memory buffer that a background thread writes to the database in batches.

Why: an INSERT per call on the request path would cost every call a database round trip,
and on SQLite a turn at its one write lock. A call only appends to a deque here. One
thread per process wakes every ``interval`` seconds, or as soon as ``batch_size`` items
wait, and hands them to ``write`` a batch at a time (one short transaction each), between
two ``close_old_connections()`` like a Django request. The buffer holds ``capacity`` items
at most: when the database is away the oldest are dropped, counted, and a warning says how
many; a call never waits for the writer.

``flush()`` writes what is buffered on the calling thread, inside its transaction (a test's).
At exit (``atexit``, which daphne, uvicorn, gunicorn workers and ``db_worker`` reach after
SIGTERM) the thread stops and the rest is written; ``wake()`` asks for a write now (the
audit log calls it when SIGTERM starts draining, ``django_mcp.runtime.drain``). A forked child
starts empty, with a thread of its own on first use.

Under pytest the plugin (``django_mcp.pytest_plugin``) calls ``manual()``: no thread writes
outside a test's transaction, and each test starts with an empty buffer.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

logger = logging.getLogger("django_mcp")

T = TypeVar("T")

#: Seconds between two warnings about dropped items (with the count dropped meanwhile).
WARN_EVERY = 60.0
#: Longest pause between two tries while writes fail (the database is away).
MAX_BACKOFF = 30.0
#: Seconds ``close()`` waits for the thread's write in progress before writing the rest itself.
CLOSE_TIMEOUT = 10.0

_background = True
_writers: weakref.WeakSet[BatchWriter[object]] = weakref.WeakSet()


def manual() -> None:
    """No background thread in this process: items are written only by ``flush()`` (tests).

    A task worker's beat (``tasks.beat``) does not start either: under pytest its thread would
    write outside each test's transaction and hold a connection the test database's teardown needs.
    """
    global _background
    _background = False
    for writer in list(_writers):
        writer.stop()


def background() -> bool:
    """Whether this process's bookkeeping writes from threads of its own (False after ``manual()``)."""
    return _background


def discard_all() -> None:
    """Forget what every writer of this process buffered (a test starts clean)."""
    for writer in list(_writers):
        writer.discard()


class BatchWriter(Generic[T]):
    """Items appended by calls, written by ``write(batch)`` off the request path.

    ``interval``, ``batch_size`` and ``capacity`` are callables so that settings are read
    when used (``override_settings`` works), never frozen.
    """

    def __init__(
        self,
        name: str,
        write: Callable[[list[T]], None],
        *,
        interval: Callable[[], float],
        batch_size: Callable[[], int],
        capacity: Callable[[], int],
        background: bool | None = None,
        away: Callable[[BaseException], bool] = lambda exc: False,
    ) -> None:
        self.name = name
        #: Whether a failed write means the database is away (logged in one line, no traceback: expected).
        self.away = away
        #: Whether a thread writes (None: the process's mode, see ``manual()``).
        self.background = background
        self._write = write
        self.interval, self.batch_size, self.capacity = interval, batch_size, capacity
        self._items: deque[T] = deque()
        self._wake = threading.Event()
        self._lock = threading.Lock()  # one writer at a time (thread, flush, exit): order kept, nothing twice
        self._thread: threading.Thread | None = None
        self._stopping = False
        #: ``wake()`` asked for everything buffered (not only whole batches).
        self._urgent = False
        self._exit_hook = False
        #: Items dropped because the buffer was full, since the process started.
        self.dropped = 0
        self._dropped_warned = 0
        self._warned_at = 0.0
        self._failing = False
        _writers.add(self)  # type: ignore[arg-type]
        os.register_at_fork(after_in_child=self._after_fork)

    def __len__(self) -> int:
        return len(self._items)

    # -- the request path -------------------------------------------------------------
    def add(self, item: T) -> None:
        """Buffer ``item``; never blocks, never touches the database."""
        items = self._items
        if len(items) >= self.capacity():
            try:
                items.popleft()
            except IndexError:  # the writer thread emptied the buffer since the test: nothing to drop
                pass
            else:
                self._drop(1)
        items.append(item)
        if self._thread is None:
            self._start()
        elif len(items) >= self.batch_size() and not self._wake.is_set():
            self._wake.set()

    def _drop(self, n: int) -> None:
        self.dropped += n
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY:
            self._warned_at = now
            lost, self._dropped_warned = self.dropped - self._dropped_warned, self.dropped
            logger.warning(
                "django_mcp: the %s buffer is full (%d items): dropped the %d oldest (%d in all)",
                self.name,
                self.capacity(),
                lost,
                self.dropped,
            )

    # -- writing ----------------------------------------------------------------------
    def flush(self) -> int:
        """Write everything buffered now, on this thread; how many items were written.

        A failed write raises, and its items go back to the buffer.
        """
        with self._lock:
            return self._drain()

    def _drain(self, limit: int | None = None) -> int:
        """Write the buffered items, or the ``limit`` oldest, a batch at a time; how many were written."""
        written = 0
        items = self._items
        left = len(items) if limit is None else limit
        while items and left > 0:
            batch: list[T] = []
            for _ in range(min(self.batch_size(), len(items), left)):
                batch.append(items.popleft())
            left -= len(batch)
            try:
                self._write(batch)
            except BaseException:
                items.extendleft(reversed(batch))  # back in front, in order; the oldest go if it overflows
                excess = len(items) - self.capacity()
                dropped = 0
                for _ in range(max(0, excess)):
                    try:
                        items.popleft()
                    except IndexError:  # calls dropped some meanwhile (``add``)
                        break
                    dropped += 1
                if dropped:
                    self._drop(dropped)
                raise
            written += len(batch)
        return written

    def wake(self) -> None:
        """Ask the thread to write what is buffered now (a drain is starting)."""
        self._urgent = True
        self._wake.set()

    def discard(self) -> None:
        self._items.clear()

    # -- the thread -------------------------------------------------------------------
    def _threaded(self) -> bool:
        return _background if self.background is None else self.background

    def _start(self) -> None:
        if not self._threaded() or self._stopping:
            self._thread = _NO_THREAD
            return
        self._thread = threading.Thread(target=self._run, name=f"mcp-{self.name}-writer", daemon=True)
        self._thread.start()
        if not self._exit_hook:
            self._exit_hook = True
            atexit.register(self.close)

    def _run(self) -> None:
        from ..runtime.sync_pool import recycle_connections  # reason: keeps this module free of Django (pytest_plugin)

        pause = self.interval()
        while True:
            early = self._wake.wait(pause)
            self._wake.clear()
            urgent, self._urgent = self._urgent, False
            if self._stopping:
                return
            # What is buffered now, not what arrives while it is written: draining on and on in small
            # batches costs each row far more (a transaction each, and the serving thread and this one
            # trading the GIL around every statement). Woken early by a full batch: whole batches
            # only; the rest waits for the next one or the interval.
            todo = len(self._items)
            if early and not urgent:
                todo -= todo % max(1, self.batch_size())
            if not todo:
                continue
            try:
                with self._lock:
                    recycle_connections()
                    try:
                        self._drain(todo)
                    finally:
                        recycle_connections()
            except Exception as exc:
                # The database is away (or refused the batch): keep the items, try again less often.
                if not self._failing:
                    away = self.away(exc)
                    logger.warning(
                        "django_mcp: the %s writer could not write (%s: %s); retrying",
                        self.name,
                        type(exc).__name__,
                        exc,
                        exc_info=not away,  # an outage is expected; anything else shows where it came from
                    )
                self._failing = True
                pause = min(max(pause * 2, self.interval()), MAX_BACKOFF)
                continue
            if self._failing:
                logger.warning("django_mcp: the %s writer writes again", self.name)
            self._failing = False
            pause = self.interval()

    def stop(self, *, final: bool = False) -> None:
        """Stop the thread (it finishes the write in progress); what is buffered stays for ``flush()``.

        ``final``: no thread starts again (the process is exiting; later items wait for a ``flush()``).
        """
        thread = self._thread
        self._stopping = True
        self._wake.set()
        if thread is not None and thread is not _NO_THREAD and thread is not threading.current_thread():
            thread.join(CLOSE_TIMEOUT)
        self._stopping = False
        self._thread = _NO_THREAD if final or not self._threaded() else None

    def close(self) -> None:
        """At exit: stop the thread and write the rest on this thread (failures are logged, not raised)."""
        self.stop(final=True)
        if not self._threaded():
            return
        try:
            written = self.flush()
        except Exception:
            logger.exception("django_mcp: could not write %d buffered %s records at exit", len(self), self.name)
            return
        if written:
            logger.info("django_mcp: wrote %d buffered %s records at exit", written, self.name)

    def _after_fork(self) -> None:
        """A forked child: what the parent buffered is the parent's to write; a thread of its own later."""
        self._items = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._urgent = False
        self._thread = None if self._threaded() else _NO_THREAD


#: Marks "no thread, and none to start" (manual mode), so ``add`` stays one ``is None`` test.
_NO_THREAD = threading.Thread(target=lambda: None, name="mcp-no-writer")

__all__ = ["BatchWriter", "background", "discard_all", "manual"]
