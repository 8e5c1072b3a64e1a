"""The Tasks framework task a worker runs for each MCP task: the tool call, as its caller.

Imported by the worker (``manage.py db_worker`` resolves ``run_tool_call`` by its path)
and lazily by the web side when it enqueues: defining a Tasks framework task needs
the settings and the app registry.

A run loads the ``MCPTask``, rebuilds the caller (user, OAuth client, client
capabilities, locale, and the scopes its token grants *now*) and calls the tool
through the one door, so the access checks are those of a direct call made at that
moment: a revoked token or disabled client fails the task before the tool runs. While
the tool runs, a watcher renews the heartbeat and, once the task is cancelled or its
creator's rights are gone, cancels the tool (``Context.cancelled`` turns true, an
async tool gets ``CancelledError``).
The outcome is stored: ``completed`` with the ``CallToolResult`` (a tool error
included), ``failed`` with the JSON-RPC error, or ``input_required`` with the
questions the tool asked; answers from ``tasks/update`` run the tool again.

Each run logs a line when the tool starts and one when it ends, on ``django_mcp.tasks``,
naming the tool and the MCP task id (the worker's own lines name only ``run_tool_call``
and the framework's id, which these lines give too).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import importlib
import logging
import signal
import threading
import time
from typing import Any

from asgiref.sync import AsyncToSync
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from ..auth.bearer import INSUFFICIENT_SCOPE, AuthInfo
from ..auth.grants import Standing
from ..conf import mcp_settings
from ..exceptions import InputRequired
from ..models import MCPTask
from ..protocol import jsonrpc
from ..protocol.versions import is_stateless
from ..runtime import dispatch
from ..runtime.dispatch import Caller, Exchange, Rejected, default_site
from ..runtime.sync_pool import run_bookkeeping
from ..runtime.unavailable import DatabaseUnavailable, database_error
from ..server import servers
from . import beat, store
from .framework import runs_in_process, task_decorator, tasks_module
from .notify import announce

logger = logging.getLogger("django_mcp")
#: One line as a task's tool starts and one as it ends: the tool, the MCP task id, the run, the outcome.
runs = logging.getLogger("django_mcp.tasks")

#: Tries of a bookkeeping query while the database is unavailable (about a minute in all).
RETRIES = 16
#: Seconds between two looks at the task's row while the tool runs (cancellation; heartbeat as due).
WATCH_INTERVAL = 0.5
#: Seconds between two re-reads of the creator's rights while the tool runs (a revoked token stops it).
REVALIDATE_INTERVAL = 2.0


class TaskExchange(Exchange):
    """The ``Runtime`` of a task's run: questions come from stored answers, never from a live stream."""

    def __init__(self, server: Any, row: MCPTask, user: Any, auth: Any) -> None:
        params: dict[str, Any] = {"name": row.tool, "arguments": row.arguments}
        if is_stateless(row.protocol_version):  # the envelope the creating request carried
            params["_meta"] = {
                PROTOCOL_VERSION_META_KEY: row.protocol_version,
                CLIENT_CAPABILITIES_META_KEY: row.client_capabilities or {},
                CLIENT_INFO_META_KEY: row.client_info or {},
            }
        request = jsonrpc.Request(id=f"task-{row.pk[:12]}", method="tools/call", params=params)
        super().__init__(
            server,
            request,
            row.protocol_version,
            None,
            user,
            None,
            locale=row.locale or None,
            auth=auth,
            peer=(row.client_info or {}, row.client_capabilities or {}),
        )
        self.session_id = row.session or None
        # No client token to echo: any token makes ``report_progress`` reach ``notify`` (the statusMessage).
        self.task_id: str = row.pk
        #: When the task expires: a run without a timeout of its own ends by then (``operations.timeouts``).
        self.expires = row.expires
        self.attempt = row.attempts
        self.in_task = True
        self.answers = dict(row.answers or {})
        self.progress_token = row.pk  # progress always counts in a task: its message is the statusMessage
        #: The newest progress message; the watcher stores it as the task's ``statusMessage``.
        self.message = ""
        #: The W3C trace context of the call that created the task (telemetry links the run to it).
        self.trace_context: dict[str, str] = dict(row.trace_context or {})

    async def ask(self, method: str, params: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        """Answered from the task's stored answers in either era: a worker has no stream to ask on."""
        return self.answer_for(method, params, key)

    def load_answers(self) -> None:
        """The answers are the task's (``tasks/update``), not a ``requestState`` of the request."""

    def input_required(self, need: InputRequired) -> dict[str, Any]:
        """The questions the task parks on; nothing to sign, the answers are stored with the task."""
        return {"resultType": "input_required", "inputRequests": need.requests}

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """A progress message becomes the task's ``statusMessage`` (the watcher stores it); logs go to the log.

        Not stored here: a sync tool's ``async_to_sync(ctx.report_progress)`` would write on the
        tool's own connection, inside its ``ATOMIC_TOOL_CALLS`` transaction, unseen until the end.
        """
        if method == "notifications/progress":
            message = params.get("message")
            if isinstance(message, str):
                self.message = message
        elif method == "notifications/message":
            logger.info("django_mcp task %s: %s", self.task_id[:8], params.get("data"))

    def log_enabled(self, level: str) -> bool:
        return True

    async def close_stream(self) -> None:
        return None

    async def begin_task(self) -> None:
        return None


def resolve_server(name: str) -> Any:
    """The ``MCPServer`` named ``name``: registered when the project's ``mcp.py`` modules or routing were imported."""
    found = servers.get(name)
    if found is None:
        # A server built in a module the worker had no reason to import: the ASGI routing, the URLconf.
        asgi = getattr(settings, "ASGI_APPLICATION", None)
        for module in (asgi.rsplit(".", 1)[0] if asgi else None, getattr(settings, "ROOT_URLCONF", None)):
            if module and name not in servers:
                try:
                    importlib.import_module(module)
                except ImportError:
                    logger.warning("django_mcp: could not import %s looking for MCP server %r", module, name)
        found = servers.get(name)
    return found if found is not None else default_site()


async def _book(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Our own query, retried while the database is away (a restart): a task's state must not be lost to it."""
    delay = 0.2
    for _ in range(RETRIES):
        try:
            return await run_bookkeeping(fn, *args, **kwargs)
        except DatabaseUnavailable:
            logger.warning("django_mcp: task bookkeeping waits for the database (%s)", getattr(fn, "__name__", fn))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    return await run_bookkeeping(fn, *args, **kwargs)


def _load_user(user_id: Any) -> Any:
    if user_id is None:
        return AnonymousUser()
    return get_user_model()._default_manager.filter(pk=user_id).first()


async def _call(server: Any, ex: TaskExchange) -> dict[str, Any] | None:
    """The call through the one door, as the caller: its scope check, validation and error mapping."""
    caller = Caller.authenticated(ex.user, ex.auth, ex.locale, transport="task")
    return await dispatch.handle(server, ex.request, ex.revision, None, caller, exchange=ex)


async def execute(task_id: str) -> None:
    """One run of task ``task_id``, start to stored outcome."""
    row = await _book(store.claim, task_id)
    if row is None:  # cancelled before it started, ended, or claimed by another run
        return
    attempt = row.attempts
    user = await _book(_load_user, row.user_id)
    # The creator's rights as they are now, not as they were at enqueue: a revoked token, a disabled
    # client or a deactivated user fails the task before its tool runs.
    standing = await _book(store.creator_standing, row)
    if user is None or standing.refusal:
        message = standing.refusal or store.INACTIVE
        error = {"code": jsonrpc.INVALID_REQUEST, "message": message}
        if await _book(store.finish, task_id, attempt, MCPTask.FAILED, error=error, message=message):
            await _announce_stored(task_id)
        runs.info("MCP task %s: tool %s not run: %s", task_id, row.tool, message)
        return

    # The token's scopes now (a refreshed token's, if it was refreshed): the door checks them as for a direct call.
    auth = AuthInfo(user, row.oauth_client, standing.scopes) if standing.scopes is not None else None
    server = resolve_server(row.server)
    ex = TaskExchange(server, row, user, auth)
    runs.info(
        "MCP task %s: tool %s starts (run %d, Tasks framework id %s)", task_id, row.tool, attempt, row.backend_id or "-"
    )
    started = time.monotonic()
    work = asyncio.ensure_future(_call(server, ex))
    _running[task_id] = (asyncio.get_running_loop(), work, ex)
    try:
        await _watch(row, attempt, work, ex)
    finally:
        _running.pop(task_id, None)
        elapsed = time.monotonic() - started
        outcome = ended(work)
        runs.info("MCP task %s: tool %s %s after %.3f s (run %d)", task_id, row.tool, outcome, elapsed, attempt)
        framework_id = _framework_run.get() or row.backend_id
        if framework_id:
            framework_note.remember(str(framework_id), f"task {task_id}: {row.tool} {outcome}")


def ended(work: asyncio.Future[dict[str, Any] | None]) -> str:
    """How a run's call ended, in words for the log line."""
    if not work.done() or work.cancelled():
        return "was stopped"
    exc = work.exception()
    if isinstance(exc, Rejected):
        return f"was refused ({exc.status}, JSON-RPC error {exc.error.code})"
    if exc is not None:
        return f"failed ({type(exc).__name__})"
    response = work.result()
    if response is None:
        return "was cancelled"
    error = response.get("error")
    if error is not None:
        return f"failed (JSON-RPC error {error.get('code')})"
    result = response.get("result") or {}
    if result.get("resultType") == "input_required":
        return "waits for input"
    return "completed with a tool error" if result.get("isError") else "completed"


async def _watch(row: MCPTask, attempt: int, work: asyncio.Future[dict[str, Any] | None], ex: TaskExchange) -> None:
    """Renew the heartbeat while the tool runs, stop it once the task is cancelled, then store the outcome.

    Every ``REVALIDATE_INTERVAL`` it also re-reads the creator's rights (``store.creator_standing``):
    a token revoked, a client disabled, a user deactivated or a scope the tool needs taken away
    since the run began stops the tool, and the task ends ``cancelled`` with the reason as its
    ``statusMessage``. The worker asks the database, so whichever process revoked it, it is seen.
    """
    task_id = row.pk
    beat_every = max(WATCH_INTERVAL, mcp_settings.TASK_HEARTBEAT_TIMEOUT / 4)
    since_beat = since_check = 0.0
    stored_message = ""
    while not work.done():
        await asyncio.wait({work}, timeout=WATCH_INTERVAL)
        if work.done():
            break
        since_beat += WATCH_INTERVAL
        since_check += WATCH_INTERVAL
        refusal, stopped = "", False
        try:
            if since_beat >= beat_every:
                since_beat = 0.0
                alive = await run_bookkeeping(store.beat, task_id, attempt)
            else:
                alive = await run_bookkeeping(store.still_running, task_id, attempt)
            if alive and since_check >= REVALIDATE_INTERVAL:
                since_check = 0.0
                refusal = _refusal(await run_bookkeeping(store.creator_standing, row), ex)
            if alive and not refusal and ex.message != stored_message:
                stored_message = ex.message
                await run_bookkeeping(store.progress, task_id, attempt, stored_message)
        except Exception:  # the database is away for a moment: the tool runs on, the next look retries
            logger.warning("django_mcp: task %s: could not reach its row", task_id[:8], exc_info=True)
            continue
        if refusal:
            logger.warning("django_mcp: task %s stopped: %s", task_id[:8], refusal)
            stopped = await _book(store.stop_revoked, task_id, attempt, refusal)
        if not alive or refusal:  # cancelled, handed to another run, or its creator's rights are gone: stop the tool
            ex.cancelled.set()
            work.cancel()
            await asyncio.wait({work})
            if refusal and stopped:
                await _announce_stored(task_id)
            return
    await _store(task_id, attempt, work)


def _refusal(standing: Standing, ex: TaskExchange) -> str:
    """Why the run may not go on ("" if it may): the grant is gone, or no longer holds the tool's scopes."""
    if standing.refusal:
        return standing.refusal
    needed = sorted(set(ex.target.scopes)) if ex.target is not None else []
    if standing.scopes is not None and not standing.scopes.issuperset(needed):
        return INSUFFICIENT_SCOPE
    return ""


async def _announce_stored(task_id: str) -> None:
    row = await _book(MCPTask.objects.filter(pk=task_id).first)
    if row is not None:
        await announce(row)


async def _store(task_id: str, attempt: int, work: asyncio.Future[dict[str, Any] | None]) -> None:
    if await _outcome(task_id, attempt, work):
        await _announce_stored(task_id)


async def _outcome(task_id: str, attempt: int, work: asyncio.Future[dict[str, Any] | None]) -> bool:
    """Store how the run ended, from the door's response; whether the task's status changed."""
    try:
        response = work.result()
    except asyncio.CancelledError:
        return False
    except Rejected as exc:  # refused at the door (a scope the tool needs now): as a direct call would be
        return await _fail(task_id, attempt, exc.error.code, exc.error.message, exc.error.data)
    except Exception as exc:
        lost = database_error(exc)
        if lost is not None:
            raise  # the database went away mid-run: the framework records the failure; the heartbeat recovers it
        logger.exception("django_mcp: task %s failed", task_id[:8])
        return await _fail(task_id, attempt, jsonrpc.INTERNAL_ERROR, "Internal error")
    if response is None:  # cancelled
        return False
    error = response.get("error")
    if error is not None:
        data = error.get("data")
        if isinstance(data, dict) and data.get("reason") == DatabaseUnavailable.reason:
            # The engine answers a lost database with a retryable error; a task is retried instead.
            raise DatabaseUnavailable()
        return await _fail(task_id, attempt, error["code"], error["message"], data)
    result = response["result"]
    if result.get("resultType") == "input_required":
        return bool(await _book(store.park, task_id, attempt, result["inputRequests"]))
    return bool(await _book(store.finish, task_id, attempt, MCPTask.COMPLETED, result=result))


async def _fail(task_id: str, attempt: int, code: int, message: str, data: Any = None) -> bool:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return bool(await _book(store.finish, task_id, attempt, MCPTask.FAILED, error=error, message=message))


#: The runs of this process, by task id: their event loop, the tool's future and its exchange.
_running: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[dict[str, Any] | None], TaskExchange]] = {}


class FrameworkNote(logging.Filter):
    """Adds how the MCP task ended to the Tasks framework's own line about the run.

    ``db_worker`` logs ``Task id=... path=...run_tool_call state=SUCCESSFUL`` for every run that returned,
    a cancelled MCP task included (the job handled the cancellation: for the framework it succeeded). The
    line then reads ``... state=SUCCESSFUL (MCP task 1a2b...: export_catalogue was cancelled)``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._notes: collections.OrderedDict[str, str] = collections.OrderedDict()

    def remember(self, framework_id: str, note: str) -> None:
        self._notes[framework_id] = note
        while len(self._notes) > 1000:  # a line never logged (another handler setup) must not pile up
            self._notes.popitem(last=False)

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 3 and str(args[1]).endswith(".run_tool_call"):
            note = self._notes.pop(str(args[0]), None)
            if note is not None:
                record.msg = f"{record.msg} (MCP %s)"
                record.args = (*args, note)
        return True


framework_note = FrameworkNote()
for _name in ("django_tasks", "django.tasks"):  # the backport's logger and Django 6's
    logging.getLogger(_name).addFilter(framework_note)

#: The Tasks framework's id of the run in progress (its ``task_started`` signal, sent on the worker's thread just
#: before the task function runs): the row's ``backend_id`` may not be written yet when a worker claims it. A
#: context variable, not a thread-local: asgiref copies it into the event loop thread that runs the async body.
_framework_run: contextvars.ContextVar[str] = contextvars.ContextVar("django_mcp_framework_run", default="")


def _framework_started(sender: Any, task_result: Any, **kwargs: Any) -> None:
    _framework_run.set(str(getattr(task_result, "id", "") or ""))


importlib.import_module(f"{tasks_module().__name__}.signals").task_started.connect(
    _framework_started, dispatch_uid="django_mcp.tasks.framework_run"
)


def _stop(task_id: str) -> None:
    """Stop the run of ``task_id`` from outside its loop (the worker is exiting), storing nothing.

    Without this the run would go on in ``async_to_sync``'s loop thread after the signal,
    and the exiting worker would wait for that thread forever.
    """
    run = _running.get(task_id)
    if run is None:
        return
    loop, work, ex = run

    def stop() -> None:
        ex.cancelled.set()
        work.cancel()

    try:
        loop.call_soon_threadsafe(stop)
    except RuntimeError:  # the loop has closed: the run has ended already
        pass


def _stop_now(signum: int, frame: Any) -> None:
    """SIGTERM/SIGINT mid-run: the worker's own handler (stop after this task), then stop this task now.

    Only while the tool runs: once it has ended, its outcome being stored and the loop's teardown
    (channels_redis flushes its layer in ``loop.close``) must not be interrupted, or a finished task
    prints a traceback and is requeued.
    """
    previous = _previous_handlers.get(signum)
    if callable(previous):
        previous(signum, frame)  # db_worker: finish the loop after this task (a second signal exits)
        if not _interruptible.is_set() or all(work.done() for _loop, work, _ex in _running.values()):
            return  # no tool running (ended, its outcome being stored and announced): the run ends by itself
    raise KeyboardInterrupt


async def _execute_interruptibly(task_id: str) -> None:
    """``execute``, interruptible by a stop signal until it returns (see ``_stop_now``)."""
    _interruptible.set()
    try:
        await execute(task_id)
    finally:
        _interruptible.clear()


_previous_handlers: dict[int, Any] = {}
_interruptible = threading.Event()
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT") if hasattr(signal, name))


@task_decorator()  # type: ignore[untyped-decorator]  # django.tasks or its backport, typed as Any here
def run_tool_call(task_id: str) -> None:
    """The Tasks framework entry point: run MCP task ``task_id`` (its row says what and for whom)."""
    # db_worker's first SIGTERM waits for the running task to end, however long the tool runs; a task
    # can be handed to the next worker instead (``requeue``), so stop it now. Signals reach the main thread.
    watch_signals = threading.current_thread() is threading.main_thread()
    run = _execute_interruptibly if watch_signals else execute
    if not runs_in_process(mcp_settings.TASK_BACKEND):  # a worker started some other way than db_worker
        beat.start()
    if watch_signals:
        for signum in _STOP_SIGNALS:
            _previous_handlers[signum] = signal.signal(signum, _stop_now)
    try:
        # The loop on this thread (a worker's main thread), not async_to_sync's thread of its own: a stop
        # signal's interrupt then leaves the loop, which cancels the tool, instead of leaving it running.
        if getattr(AsyncToSync.executors, "current", None) is None:
            asyncio.run(run(task_id))
        else:  # in-process backend under an async caller (a test client): a clean thread, as a worker has
            runner = threading.Thread(target=asyncio.run, args=(run(task_id),), daemon=True)
            runner.start()
            runner.join()
    except (KeyboardInterrupt, SystemExit):  # the worker is stopping: give the task to the next one now
        _stop(task_id)
        row = MCPTask.objects.filter(pk=task_id).only("attempts").first()
        if row is not None:
            store.requeue(task_id, row.attempts)
        raise
    finally:
        if watch_signals:
            for signum in _STOP_SIGNALS:
                signal.signal(signum, _previous_handlers.pop(signum, signal.SIG_DFL))
