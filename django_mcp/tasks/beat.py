"""A task worker's presence: a row in ``MCPTaskWorker`` that the worker renews while it runs, busy or idle.

The tasks' own heartbeats say only that a task is being run; an idle worker writes none, so the
health endpoint could not tell "idle" from "no worker". Each ``db_worker`` process therefore beats
every ``interval()`` seconds from a thread of its own (started by ``DjangoMCPConfig.ready()`` in a
``db_worker`` process, or by the first task run in any other worker), and deletes its row at exit.
A row whose beat is older than ``stale_after()`` is a worker that died (``kill -9``, a lost host):
the health endpoint ignores it and ``mcp_cleanup`` deletes it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from datetime import datetime, timedelta

from django.apps import apps
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from ..audit import writer
from ..conf import mcp_settings
from ..models import MCPTaskWorker

logger = logging.getLogger("django_mcp.tasks")

_lock = threading.Lock()
_started: threading.Event | None = None
#: This process's worker id: ``host:pid:random`` (a reused pid on the same host is another worker).
worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def interval() -> float:
    """Seconds between two beats: a quarter of ``TASK_HEARTBEAT_TIMEOUT``, at most 15."""
    return min(15.0, max(0.5, float(mcp_settings.TASK_HEARTBEAT_TIMEOUT) / 4))


def stale_after() -> float:
    """Seconds after which a worker's last beat means it is gone: three missed beats."""
    return interval() * 3


def beat(now: datetime | None = None) -> None:
    """Write this process's beat (one UPDATE, or an INSERT the first time)."""
    now = now or timezone.now()
    updated = MCPTaskWorker.objects.filter(pk=worker_id).update(beat=now)
    if not updated:
        MCPTaskWorker.objects.update_or_create(
            pk=worker_id,
            defaults={"host": socket.gethostname()[:255], "pid": os.getpid(), "started": now, "beat": now},
        )


def alive(now: datetime | None = None) -> tuple[int, datetime | None]:
    """How many workers beat within ``stale_after()``, and the newest beat of any (None: never seen)."""
    now = now or timezone.now()
    newest = MCPTaskWorker.objects.order_by("-beat").values_list("beat", flat=True).first()
    live = MCPTaskWorker.objects.filter(beat__gte=now - timedelta(seconds=stale_after())).count()
    return live, newest


def prune(dry_run: bool = False, now: datetime | None = None) -> int:
    """Delete the rows of workers that stopped beating long ago (ten missed beats): ``mcp_cleanup``."""
    cutoff = (now or timezone.now()) - timedelta(seconds=interval() * 10)
    gone = MCPTaskWorker.objects.filter(beat__lt=cutoff)
    if dry_run:
        return int(gone.count())
    deleted, _ = gone.delete()
    return int(deleted)


def start() -> None:
    """Beat from a daemon thread of this process until it exits (once per process; a fork starts its own)."""
    global _started
    if not writer.background():  # under pytest (django_mcp.pytest_plugin): tests call beat() themselves
        return
    with _lock:
        if _started is not None and _started.is_set():
            return
        _started = threading.Event()
        _started.set()
    threading.Thread(target=_run, name="mcp-task-worker-beat", daemon=True).start()
    atexit.register(_leave)


#: How long the beat waits for the app registry before its first query (the process is still starting).
READY_WAIT = 60.0


def _run() -> None:
    # Started from AppConfig.ready(): the first beat waits until every app is ready, so no query runs
    # during app initialization (Django warns about that, and the worker has not started yet).
    deadline = time.monotonic() + READY_WAIT
    while not apps.ready and time.monotonic() < deadline:
        time.sleep(0.05)
    failing = False
    while True:
        try:
            close_old_connections()
            beat()
        except Exception as exc:  # the thread must outlive any failure: the next beat may succeed
            if not failing:
                logger.warning(
                    "django_mcp: task worker %s could not beat (%s: %s)",
                    worker_id,
                    type(exc).__name__,
                    exc,
                    exc_info=not isinstance(exc, DatabaseError),  # an outage is expected; anything else shows where
                )
            failing = True
        else:
            if failing:
                logger.warning("django_mcp: task worker %s beats again", worker_id)
            failing = False
        finally:
            with contextlib.suppress(Exception):
                close_old_connections()
        time.sleep(interval())


def _leave() -> None:
    """At exit: this worker is gone (the health endpoint stops counting it at once)."""
    try:
        MCPTaskWorker.objects.filter(pk=worker_id).delete()
    except DatabaseError:
        pass  # the database is away: the row goes stale, and mcp_cleanup deletes it


def _after_fork() -> None:
    global _started, worker_id
    _started = None
    worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


os.register_at_fork(after_in_child=_after_fork)

__all__ = ["alive", "beat", "interval", "prune", "stale_after", "start", "worker_id"]
