"""``MCPTask`` rows: create, find for a caller, move through their states, and their wire shapes.

Every function here is sync (run on ``sync.bookkeeping_pool`` by the web side, directly
by the worker) and every state change is a conditional ``UPDATE``: a task leaves
``working``/``input_required`` once, so a cancel and a finishing worker cannot both win,
and a worker that lost its task (its heartbeat went silent and the task ran again
elsewhere) cannot overwrite the newer run's outcome.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone as dj_timezone

from ..auth.grants import CLIENT_DISABLED, Grant, Standing, client_disabled, grant_of, standing
from ..conf import mcp_settings
from ..models import MCPTask
from .beat import alive as workers_alive
from .framework import runs_in_process

logger = logging.getLogger("django_mcp")

ACTIVE = (MCPTask.WORKING, MCPTask.INPUT_REQUIRED)

#: Loads the Tasks framework task a worker runs (``tasks.jobs.run_tool_call``), on the first enqueue:
#: set by ``DjangoMCPConfig.ready()``, since the worker's module is an entry point above this one.
load_job: Callable[[], Any] | None = None
#: The current trace context as W3C headers (``traceparent``, ``tracestate``), which a new task keeps so
#: that its runs link to the call that created it: set by the telemetry middleware while it is on.
trace_carrier: Callable[[], dict[str, str]] | None = None
_MAX_ID = 64


@dataclass(frozen=True)
class Owner:
    """Who may see a task: the user (None: anonymous) and the OAuth client ("" without a token).

    An anonymous caller's tasks are also bound to its session (``session``: the handshake
    era's ``Mcp-Session-Id``, "" for 2026-07-28 requests, which have none); a user's are
    not (None), so a user reaches them from any session.
    """

    user_id: Any
    client_id: str
    session: str | None = None

    def rows(self) -> QuerySet[MCPTask]:
        """This owner's tasks."""
        mine: QuerySet[MCPTask] = MCPTask.objects.filter(user_id=self.user_id, oauth_client=self.client_id)
        return mine if self.session is None else mine.filter(session=self.session)


def owner_of(user: Any, auth: Any, session_id: str | None = None) -> Owner:
    """The owner a request's caller is: ``session_id`` binds only an anonymous caller's tasks."""
    user_id = getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None
    return Owner(user_id, getattr(auth, "client_id", "") or "", None if user_id is not None else session_id or "")


def new_id() -> str:
    """256 random bits, URL-safe: a task id is a capability nobody can guess."""
    return secrets.token_urlsafe(32)


def ttl_for(requested: Any) -> int | None:
    """The TTL a task gets: the client's (a positive int of ms) within ``TASK_MAX_TTL_MS``, else the default."""
    most = mcp_settings.TASK_MAX_TTL_MS
    ttl = requested if type(requested) is int and requested > 0 else mcp_settings.TASK_DEFAULT_TTL_MS
    return ttl if most is None else min(ttl, most)


def create(
    *,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    revision: str,
    owner: Owner,
    auth: Any,
    session: str | None,
    client_info: dict[str, Any],
    client_capabilities: dict[str, Any],
    locale: str | None,
    answers: dict[str, Any],
    ttl_ms: int | None,
    trace_context: dict[str, str] | None = None,
) -> MCPTask:
    """Store the task and enqueue its run in one transaction: it exists (``tasks/get`` finds it) once we answer.

    With the database backend the queue entry commits with the row, so neither exists
    without the other. Another backend (RQ, say) that fails to enqueue rolls the row back.
    ``auth`` (the caller's ``AuthInfo``, None without a token) gives the scopes shown in the
    admin and the grant each run re-checks (``creator_standing``).
    """
    grant = grant_of(auth) if auth is not None else Grant()
    now = dj_timezone.now()
    row = MCPTask(
        id=new_id(),
        server=server,
        tool=tool,
        arguments=arguments,
        protocol_version=revision,
        user_id=owner.user_id,
        oauth_client=owner.client_id,
        scopes=sorted(auth.scopes) if auth is not None else None,
        oauth_token=grant.token_id,
        oauth_token_family=grant.family,
        session=session or "",
        client_info=client_info,
        client_capabilities=client_capabilities,
        locale=locale or "",
        answers=answers,
        ttl_ms=ttl_ms,
        poll_interval_ms=mcp_settings.TASK_POLL_INTERVAL_MS,
        created=now,
        updated=now,
        expires=now + timedelta(milliseconds=ttl_ms) if ttl_ms is not None else None,
        trace_context=trace_context or {},
    )
    with transaction.atomic():
        row.save(force_insert=True)
        _enqueue(row.pk)
    row.refresh_from_db()
    return row


def _enqueue(task_id: str) -> None:
    """Queue a run of the task, inside the caller's transaction: it commits (or not) with the row's change.

    A backend that runs tasks in this process (``ImmediateBackend``) runs it right here, so
    the run starts after the commit instead, when other connections can see the row.
    """
    if runs_in_process(mcp_settings.TASK_BACKEND):
        transaction.on_commit(partial(_send, task_id))
    else:
        _send(task_id)


def _send(task_id: str) -> None:
    if load_job is None:
        raise RuntimeError("django_mcp is not in INSTALLED_APPS: no task runner")
    job = load_job().using(backend=mcp_settings.TASK_BACKEND, queue_name=mcp_settings.TASK_QUEUE)
    result = job.enqueue(task_id)
    MCPTask.objects.filter(pk=task_id).update(backend_id=str(result.id)[:64])


def active_counts(user_id: Any, client_id: str) -> tuple[int, int]:
    """Live tasks queued or running (``working``/``input_required``) of a user and of an OAuth client (0 for none)."""
    rows = MCPTask.objects.filter(status__in=ACTIVE).exclude(expires__lte=dj_timezone.now())
    by_user = rows.filter(user_id=user_id).count() if user_id is not None else 0
    by_client = rows.filter(oauth_client=client_id).count() if client_id else 0
    return by_user, by_client


def find(task_id: Any, owner: Owner) -> MCPTask | None:
    """The caller's live task ``task_id``, or None (unknown, someone else's, or expired)."""
    if not isinstance(task_id, str) or not task_id or len(task_id) > _MAX_ID:
        return None
    row: MCPTask | None = owner.rows().filter(pk=task_id).first()
    if row is None:
        return None
    now = dj_timezone.now()
    if row.expires is not None and row.expires <= now:
        return None
    if row.status == MCPTask.WORKING and row.started is not None and _silent(row, now):
        recover(row)
        row.refresh_from_db()
    return row


def _silent(row: MCPTask, now: datetime) -> bool:
    beat = row.heartbeat or row.started
    return beat is not None and (now - beat).total_seconds() > mcp_settings.TASK_HEARTBEAT_TIMEOUT


def recover(row: MCPTask) -> None:
    """A running task whose worker went silent (killed, host lost): run it again, or fail it after the last run."""
    now = dj_timezone.now()
    silent = MCPTask.objects.filter(pk=row.pk, status=MCPTask.WORKING, attempts=row.attempts, heartbeat=row.heartbeat)
    if row.attempts < mcp_settings.TASK_MAX_ATTEMPTS:
        with transaction.atomic():
            if silent.update(started=None, heartbeat=None, updated=now, status_message="Restarting: worker lost"):
                _enqueue(row.pk)
                logger.warning("django_mcp: task %s lost its worker; running it again", row.pk[:8])
        return
    silent.update(
        status=MCPTask.FAILED,
        error={"code": -32603, "message": "The worker running this task stopped"},
        status_message="The worker running this task stopped",
        finished=now,
        updated=now,
    )


def silent(now: datetime | None = None) -> list[MCPTask]:
    """Running tasks whose heartbeat is older than ``TASK_HEARTBEAT_TIMEOUT``: their worker is gone."""
    cutoff = (now or dj_timezone.now()) - timedelta(seconds=mcp_settings.TASK_HEARTBEAT_TIMEOUT)
    return list(MCPTask.objects.filter(status=MCPTask.WORKING, started__isnull=False, heartbeat__lt=cutoff))


def recover_silent() -> int:
    """``recover`` every silent task (``mcp_cleanup``): a lost task runs again even if nobody polls it."""
    rows = silent()
    for row in rows:
        recover(row)
    return len(rows)


def requeue(task_id: str, attempt: int) -> None:
    """The worker is shutting down mid-run (SIGTERM, Ctrl-C): hand the task to the next worker now."""
    with transaction.atomic():
        if MCPTask.objects.filter(pk=task_id, status=MCPTask.WORKING, attempts=attempt).update(
            heartbeat=None, started=None, updated=dj_timezone.now(), status_message="Restarting: worker stopped"
        ):
            _enqueue(task_id)


def cancel(row: MCPTask) -> bool:
    """Move an active task to ``cancelled``; False when it had already ended. A running tool is told by its worker."""
    now = dj_timezone.now()
    return bool(
        MCPTask.objects.filter(pk=row.pk, status__in=ACTIVE).update(
            status=MCPTask.CANCELLED, cancel_requested=True, status_message="Cancelled", finished=now, updated=now
        )
    )


def cancel_many(rows: QuerySet[MCPTask]) -> int:
    """Cancel the active tasks among ``rows`` (the admin's action, ``mcp_task cancel``); the number cancelled."""
    return sum(1 for row in rows.filter(status__in=ACTIVE) if cancel(row))


def answer(row: MCPTask, responses: dict[str, Any]) -> bool:
    """Record answers to outstanding input requests; the task runs again once none is left.

    Keys that are not outstanding (never asked, already answered) are ignored. Returns
    whether the task went back to ``working``.
    """
    with transaction.atomic():
        # Write first: takes the row lock (PostgreSQL) or the database's write lock (SQLite, where a
        # transaction that reads, then writes, can be refused while another connection writes).
        MCPTask.objects.filter(pk=row.pk, status=MCPTask.INPUT_REQUIRED).update(updated=F("updated"))
        locked = MCPTask.objects.select_for_update().filter(pk=row.pk, status=MCPTask.INPUT_REQUIRED).first()
        if locked is None:
            return False
        pending = dict(locked.input_requests or {})
        taken = {key: value for key, value in responses.items() if key in pending}
        if not taken:
            return False
        answers = {**(locked.answers or {}), **taken}
        for key in taken:
            pending.pop(key)
        now = dj_timezone.now()
        if pending:
            MCPTask.objects.filter(pk=row.pk).update(answers=answers, input_requests=pending, updated=now)
            return False
        MCPTask.objects.filter(pk=row.pk).update(
            answers=answers,
            input_requests={},
            status=MCPTask.WORKING,
            status_message="",
            started=None,
            heartbeat=None,
            updated=now,
        )
        _enqueue(row.pk)
        return True


# -- the worker's side ----------------------------------------------------------------


def claim(task_id: str) -> MCPTask | None:
    """Start a run: the row with ``started``/``heartbeat`` set and ``attempts`` counted, or None when it ended.

    One conditional ``UPDATE`` claims it (no read-then-write transaction, which SQLite can refuse as
    "database is locked" when another connection writes meanwhile).
    """
    now = dj_timezone.now()
    claimed = MCPTask.objects.filter(pk=task_id, status=MCPTask.WORKING, started=None).update(
        attempts=F("attempts") + 1, started=now, heartbeat=now, updated=now
    )
    if not claimed:
        return None
    row: MCPTask | None = MCPTask.objects.filter(pk=task_id).first()
    return row


#: Why a task whose creator's account was deactivated does not run.
INACTIVE = "The user who started this task is no longer active"


def creator_standing(row: MCPTask) -> Standing:
    """The rights the task's creator has now (sync): the user still active, the token's grant still standing.

    ``scopes`` None: created without a token, nothing limits it by scope. A task created with an
    in-process token (the test client's ``force_authenticate(scopes=...)``), which has no row to
    follow, keeps the scopes it was created with.
    """
    if row.user_id is not None:
        # The attribute, not a query on it: a custom user model may have no ``is_active`` column.
        user = get_user_model()._default_manager.filter(pk=row.user_id).first()
        if user is None or not getattr(user, "is_active", True):
            return Standing(refusal=INACTIVE)
    if row.oauth_token:
        return standing(Grant(row.oauth_token, row.oauth_token_family), row.oauth_client)
    if client_disabled(row.oauth_client):
        return Standing(refusal=CLIENT_DISABLED)
    return Standing(scopes=frozenset(row.scopes) if row.scopes is not None else None)


def stop_revoked(task_id: str, attempt: int, reason: str) -> bool:
    """The creator's rights ended while the tool ran: ``cancelled``, saying why. False when it ended already."""
    now = dj_timezone.now()
    return bool(
        MCPTask.objects.filter(pk=task_id, status=MCPTask.WORKING, attempts=attempt).update(
            status=MCPTask.CANCELLED, status_message=reason, finished=now, updated=now
        )
    )


def beat(task_id: str, attempt: int) -> bool:
    """Renew the run's heartbeat; False when the task was cancelled, ended or handed to another run."""
    return bool(
        MCPTask.objects.filter(pk=task_id, status=MCPTask.WORKING, attempts=attempt).update(heartbeat=dj_timezone.now())
    )


def still_running(task_id: str, attempt: int) -> bool:
    return bool(MCPTask.objects.filter(pk=task_id, status=MCPTask.WORKING, attempts=attempt).exists())


def progress(task_id: str, attempt: int, message: str) -> None:
    MCPTask.objects.filter(pk=task_id, status=MCPTask.WORKING, attempts=attempt).update(
        status_message=message[:2000], updated=dj_timezone.now()
    )


def finish(
    task_id: str, attempt: int, status: str, *, result: Any = None, error: Any = None, message: str = ""
) -> bool:
    """End the run: ``completed`` with a result, ``failed`` with a JSON-RPC error. False when it ended already."""
    now = dj_timezone.now()
    return bool(
        MCPTask.objects.filter(pk=task_id, status=MCPTask.WORKING, attempts=attempt).update(
            status=status, result=result, error=error, status_message=message, finished=now, updated=now
        )
    )


def park(task_id: str, attempt: int, requests: dict[str, Any]) -> bool:
    """The tool needs the client's input: ``input_required`` with the requests, until ``tasks/update``."""
    return bool(
        MCPTask.objects.filter(pk=task_id, status=MCPTask.WORKING, attempts=attempt).update(
            status=MCPTask.INPUT_REQUIRED,
            input_requests=requests,
            status_message="Waiting for input",
            started=None,
            heartbeat=None,
            updated=dj_timezone.now(),
        )
    )


def expired(now: datetime | None = None) -> int:
    """Delete tasks past their TTL (``mcp_cleanup``); the count deleted."""
    deleted, _ = MCPTask.objects.filter(expires__lte=now or dj_timezone.now()).delete()
    return int(deleted)


def listing(owner: Owner, offset: int, size: int) -> list[MCPTask]:
    now = dj_timezone.now()
    rows = owner.rows().exclude(expires__lte=now)
    return list(rows.order_by("-created", "pk")[offset : offset + size + 1])


def queue_report(now: datetime | None = None) -> dict[str, Any]:
    """What the health endpoint says of task workers, from ``MCPTask`` rows (a few indexed queries).

    - ``queued``/``oldest_queued_seconds``: tasks no worker has picked up, and how long the oldest waited.
    - ``running``/``silent``: tasks a worker runs, and those whose heartbeat is older than
      ``TASK_HEARTBEAT_TIMEOUT`` (their worker is gone; the task runs again when next polled or cleaned up).
    - ``workers``/``newest_worker_beat_seconds``: task worker processes alive (each beats, busy or idle:
      ``tasks.beat``) and how long ago the newest beat was (None: no worker was ever seen).
    - ``newest_heartbeat_seconds``: how long ago any worker last claimed or renewed a task: the newest
      ``heartbeat`` (only a running task writes one).
    - ``status``: ``degraded`` when a task waited past ``TASK_UNCLAIMED_WARNING`` or a running one is
      silent: work exists and no worker does it. Otherwise ``ok``.
    """
    now = now or dj_timezone.now()
    working = MCPTask.objects.filter(status=MCPTask.WORKING)
    queued = working.filter(started__isnull=True)
    oldest = queued.order_by("updated").values_list("updated", flat=True).first()
    newest = (
        MCPTask.objects.filter(heartbeat__isnull=False).order_by("-heartbeat").values_list("heartbeat", flat=True)
    ).first()
    cutoff = now - timedelta(seconds=mcp_settings.TASK_HEARTBEAT_TIMEOUT)
    workers, newest_beat = workers_alive(now)
    report: dict[str, Any] = {
        "workers": workers,
        "newest_worker_beat_seconds": _age(now, newest_beat),
        "queued": queued.count(),
        "oldest_queued_seconds": _age(now, oldest),
        "running": working.filter(started__isnull=False).count(),
        "silent": working.filter(started__isnull=False, heartbeat__lt=cutoff).count(),
        "newest_heartbeat_seconds": _age(now, newest),
    }
    waited = report["oldest_queued_seconds"]
    late = waited is not None and waited >= mcp_settings.TASK_UNCLAIMED_WARNING
    report["status"] = "degraded" if late or report["silent"] else "ok"
    return report


def _age(now: datetime, moment: datetime | None) -> float | None:
    return None if moment is None else round(max(0.0, (now - moment).total_seconds()), 1)


# -- wire shapes ----------------------------------------------------------------------


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def unclaimed(row: MCPTask, now: datetime | None = None) -> float | None:
    """Seconds a queued task has waited for a task worker, once past ``TASK_UNCLAIMED_WARNING``; else None.

    A queued task is ``working`` with no run started; ``updated`` is when it was (re)queued: created,
    answered, or handed back by a stopped or lost worker.
    """
    if row.status != MCPTask.WORKING or row.started is not None:
        return None
    waited = ((now or dj_timezone.now()) - row.updated).total_seconds()
    return waited if waited >= mcp_settings.TASK_UNCLAIMED_WARNING else None


def waiting_message(seconds: float) -> str:
    """The ``statusMessage`` of a task no worker has picked up: "... for 2 minutes"."""
    if seconds < 120:
        n, unit = int(seconds), "second"
    elif seconds < 7200:
        n, unit = int(seconds // 60), "minute"
    else:
        n, unit = int(seconds // 3600), "hour"
    return f"Waiting for a task worker: none has picked this task up for {n} {unit}{'' if n == 1 else 's'}"


def _task(row: MCPTask, ttl: str, poll: str) -> dict[str, Any]:
    d: dict[str, Any] = {
        "taskId": row.pk,
        "status": row.status,
        "createdAt": iso(row.created),
        "lastUpdatedAt": iso(row.updated),
        ttl: row.ttl_ms,
    }
    if row.status not in MCPTask.TERMINAL:
        d[poll] = row.poll_interval_ms
    waited = unclaimed(row)
    if waited is not None:  # "working" alone would hide that no worker runs: the client and its user see why
        d["statusMessage"] = waiting_message(waited)
    elif row.status_message:
        d["statusMessage"] = row.status_message
    return d


def task_v1(row: MCPTask) -> dict[str, Any]:
    """The 2025-11-25 ``Task`` (``ttl``/``pollInterval``)."""
    return _task(row, "ttl", "pollInterval")


def task_v2(row: MCPTask, *, detailed: bool) -> dict[str, Any]:
    """The 2026-07-28 extension's ``Task`` (``ttlMs``/``pollIntervalMs``), ``DetailedTask`` when ``detailed``."""
    d = _task(row, "ttlMs", "pollIntervalMs")
    if detailed:
        if row.status == MCPTask.INPUT_REQUIRED:
            d["inputRequests"] = row.input_requests or {}
        elif row.status == MCPTask.COMPLETED:
            d["result"] = row.result or {"content": []}
        elif row.status == MCPTask.FAILED:
            d["error"] = row.error or {"code": -32603, "message": "Internal error"}
    return d
