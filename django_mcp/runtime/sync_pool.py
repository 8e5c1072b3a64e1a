"""Sync code off the event loop, in bounded pools, each call handled like a Django request.

Why: ``sync_to_async(thread_sensitive=True)`` sends every sync call of a process
through one thread, so one slow sync tool stalled every other sync tool and every
session query, and that thread kept a connection a database restart had broken.

- ``user_pool`` (``SYNC_WORKERS`` threads) runs user code: sync tools, DRF and view
  tools, ModelResource reads, permission checks, template renders, completions.
  When every thread is busy a caller waits up to ``SYNC_QUEUE_TIMEOUT`` seconds,
  then gets ``Busy`` (503 / a retryable JSON-RPC error), never a 500.
- ``bookkeeping_pool`` (``SYNC_BOOKKEEPING_WORKERS`` threads) runs the package's own
  queries (session store, bearer tokens), so they never wait behind a tool.

Each call runs ``close_old_connections()`` before and after, as Django does around
a request: ``CONN_MAX_AGE`` and ``CONN_HEALTH_CHECKS`` are honoured and a broken
connection is dropped, so the next call reconnects. Except on SQLite
(``recycle_connections``): a healthy connection stays open. The caller's contextvars (the
active translation, anything set by middleware) are copied in; what the call sets stays
in the call. ``async_to_sync`` inside a sync tool reaches back into the event loop, and a
caller that stops waiting cancels what it reached back for, as under asgiref's
``sync_to_async``. A database that cannot serve surfaces as ``DatabaseUnavailable``.

Under an ``async_to_sync`` caller (a sync tool reaching back into the loop, or a test
driving the server in process) a call stays on that caller's thread, as asgiref's
thread-sensitive mode does: its connection, its transaction, no second request cycle.
Every thread holds its own connection: a worker process needs up to
``SYNC_WORKERS + SYNC_BOOKKEEPING_WORKERS + 1`` (asgiref's shared thread) connections.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import functools
import inspect
import os
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import AsyncToSync, SyncToAsync, _restore_context, sync_to_async
from django.core.signals import setting_changed
from django.db import DatabaseError, close_old_connections, connections

from ..conf import mcp_settings
from .unavailable import Busy, database_error

R = TypeVar("R")


def recycle_connections(conns: Iterable[Any] | None = None) -> None:
    """``close_old_connections()`` for a thread of the package's own, keeping healthy SQLite connections.

    Why: with Django's default ``CONN_MAX_AGE = 0`` every call opened a new SQLite connection, and
    SQLite re-reads the whole schema on a connection's first statement: about 1.5 ms a call, more
    than the rest of a small call. An SQLite connection holds no server resource (what
    ``CONN_MAX_AGE`` rations), and idle in autocommit it holds no lock. A connection on which an
    error occurred, or left inside a transaction, is still closed; other databases keep
    ``CONN_MAX_AGE`` and ``CONN_HEALTH_CHECKS`` as Django applies them around a request.
    """
    for conn in connections.all(initialized_only=True) if conns is None else conns:
        if conn.vendor == "sqlite" and conn.connection is not None:
            if conn.errors_occurred:  # SQLite's is_usable() is always True: after an error, start afresh
                conn.close()
                continue
            conn.close_at = None  # never obsolete by age; left mid-transaction, it still closes below
        conn.close_if_unusable_or_obsolete()


def _request_cycle(fn: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
    """On a pool thread: the call between two ``recycle_connections()``, like a Django request."""
    recycle_connections()
    try:
        return fn(*args, **kwargs)
    finally:
        try:
            recycle_connections()
        except DatabaseError:  # closing a broken connection: the call's own outcome is what matters
            pass


def _in_thread(
    loop: asyncio.AbstractEventLoop,
    reached: list[asyncio.Task[Any]],
    context: contextvars.Context,
    fn: Callable[..., R],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> R:
    """On a pool thread: the call in the caller's context, able to ``async_to_sync`` back into ``loop``.

    Why not asgiref's ``SyncToAsync``: it costs a sync call ~60 µs of CPU more (a task around its
    coroutine, the context compared and copied back to the caller). What ``async_to_sync`` needs from
    it is the thread-local below: the loop to reach back into, and where to note the task it starts
    there, so that a caller that stops waiting cancels it (``Pool._run``). Those are asgiref's own names
    (``SyncToAsync.threadlocal`` and, below, ``_restore_context``): ``tests/test_sync_pool.py`` fails if a
    release of asgiref changes them.
    """
    local = SyncToAsync.threadlocal
    local.main_event_loop = loop
    local.main_event_loop_pid = os.getpid()
    local.task_context = reached
    return context.run(_rehomed, context, fn, args, kwargs)


def _rehomed(context: contextvars.Context, fn: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
    """Inside the caller's context: asgiref's ``Local`` storage (Django's active translation) moved to this
    thread as asgiref moves it (it hides storage a thread did not receive through asgiref), then the call."""
    _restore_context(context)
    return _request_cycle(fn, args, kwargs)


def _returned(
    loop: asyncio.AbstractEventLoop,
    outcome: asyncio.Future[Any],
    gate: _Gate | None,
    work: concurrent.futures.Future[Any],
) -> None:
    """On the pool thread, its call done: hand the outcome to the caller's loop."""
    try:
        loop.call_soon_threadsafe(_deliver, outcome, gate, work)
    except RuntimeError:  # the loop is closed: nobody is left to answer or to admit
        pass


def _deliver(outcome: asyncio.Future[Any], gate: _Gate | None, work: concurrent.futures.Future[Any]) -> None:
    """On the caller's loop: free the call's slot, then answer the caller unless it stopped waiting.

    The slot opens when the thread is done, not when the caller stops waiting: a cancelled call's
    thread runs on, and opening it earlier would admit more callers than there are free threads.
    An outcome nobody waits for any more is dropped here.
    """
    if gate is not None:
        gate.leave()
    if outcome.cancelled():
        return
    if work.cancelled():
        outcome.cancel()
        return
    exc = work.exception()
    if exc is None:
        outcome.set_result(work.result())
    else:
        outcome.set_exception(exc)


class _Gate:
    """Admission to a pool's threads for one event loop: ``size`` calls at once, the rest wait in turn.

    Why not ``asyncio.Semaphore`` under ``asyncio.wait_for``: a free slot must cost no ``await``, and
    a caller that has to wait no extra task (``wait_for`` makes one around ``acquire()``); at 16
    connections and 12 threads, callers wait often. A slot freed while callers wait goes straight to
    the first of them.
    """

    __slots__ = ("free", "waiters")

    def __init__(self, size: int) -> None:
        self.free = size
        self.waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def try_enter(self) -> bool:
        """Take a slot if one is free and nobody waits for one (those come first)."""
        if self.free > 0 and not self.waiters:
            self.free -= 1
            return True
        return False

    async def enter(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a slot, then ``Busy``."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self.waiters.append(waiter)
        timer = loop.call_later(timeout, _expire, self.waiters, waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.leave()  # handed a slot just as the caller stopped waiting: pass it on
            raise
        finally:
            timer.cancel()

    def leave(self) -> None:
        """Free a slot: to the first caller still waiting, else back to the pool."""
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


def _expire(waiters: collections.deque[asyncio.Future[None]], waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiters.remove(waiter)
        waiter.set_exception(Busy())


class Pool:
    """A named thread pool, made on first use with its size from settings."""

    def __init__(self, name: str, size_setting: str, gated: bool) -> None:
        self.name = name
        self.size_setting = size_setting
        self.gated = gated
        self._executor: ThreadPoolExecutor | None = None
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate] = weakref.WeakKeyDictionary()
        self.size = 0

    def _threads(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self.size = max(1, int(getattr(mcp_settings, self.size_setting)))
            self._executor = ThreadPoolExecutor(self.size, thread_name_prefix=f"mcp-{self.name}")
        return self._executor

    def _gate(self) -> _Gate:
        """One admission gate per event loop (tests and stdio may run several loops)."""
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = _Gate(self.size)
        return gate

    def run(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, R]:
        """``fn(*args, **kwargs)`` on a pool thread; DB unavailability becomes ``DatabaseUnavailable``.

        A plain function returning ``_run``'s coroutine: no second coroutine frame on every call.
        """
        return self._run(fn, args, kwargs)

    async def _run(self, fn: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
        reached: list[asyncio.Task[Any]] = []
        try:
            if getattr(AsyncToSync.executors, "current", None) is not None:  # a sync caller owns a thread
                result: R = await sync_to_async(fn, thread_sensitive=True)(*args, **kwargs)
                return result
            executor = self._threads()
            loop = asyncio.get_running_loop()
            context = contextvars.copy_context()
            gate = self._gate() if self.gated else None
            if gate is not None and not gate.try_enter():
                await gate.enter(mcp_settings.SYNC_QUEUE_TIMEOUT)
            # The thread answers through a future of the caller's loop, not ``run_in_executor``'s chained
            # future under ``asyncio.shield``: those cost a call about 20 µs of CPU, half the hop itself.
            outcome: asyncio.Future[R] = loop.create_future()
            try:
                work = executor.submit(_in_thread, loop, reached, context, fn, args, kwargs)
            except BaseException:
                if gate is not None:
                    gate.leave()
                raise
            work.add_done_callback(functools.partial(_returned, loop, outcome, gate))
            return await outcome
        except asyncio.CancelledError:
            for task in reached:  # what the call reached back into the loop for
                task.cancel()
            raise
        except Exception as exc:
            mapped = database_error(exc)
            if mapped is None or mapped is exc:
                raise
            raise mapped from exc

    def wrap(self, fn: Callable[..., R]) -> Callable[..., Any]:
        """``fn`` as a coroutine function running on this pool (what ``sync_to_async(fn)`` was)."""

        async def run(*args: Any, **kwargs: Any) -> R:
            return await self.run(fn, *args, **kwargs)

        return run

    def reset(self) -> None:
        """Forget the executor (new size on next use); running calls finish on the old threads."""
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        self._executor = None
        self._gates = weakref.WeakKeyDictionary()


user_pool = Pool("sync", "SYNC_WORKERS", gated=True)
bookkeeping_pool = Pool("bookkeeping", "SYNC_BOOKKEEPING_WORKERS", gated=False)


async def run_sync(fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """Run sync user code in ``user_pool``."""
    return await user_pool.run(fn, *args, **kwargs)


def in_user_pool(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """``fn`` as a coroutine function: itself when async, else on ``user_pool`` (user code may block)."""
    return fn if inspect.iscoroutinefunction(fn) else user_pool.wrap(fn)


async def run_bookkeeping(fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """Run the package's own database work in ``bookkeeping_pool``."""
    return await bookkeeping_pool.run(fn, *args, **kwargs)


async def drop_shared_connections() -> None:
    """After an async handler's ORM call failed: let asgiref's shared thread drop a broken connection.

    Async ORM calls (``aget``, ``acount``...) run on that one thread, which no request
    cycle closes; without this a connection broken by a database restart stayed there.
    """
    try:
        await sync_to_async(close_old_connections, thread_sensitive=True)()
    except DatabaseError:
        pass


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == "DJANGO_MCP":
        user_pool.reset()
        bookkeeping_pool.reset()


setting_changed.connect(_reload)

__all__ = [
    "Pool",
    "bookkeeping_pool",
    "drop_shared_connections",
    "in_user_pool",
    "recycle_connections",
    "run_bookkeeping",
    "run_sync",
    "user_pool",
]
