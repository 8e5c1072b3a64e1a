"""The Tasks framework task a worker runs for each MCP task: the tool call, as its caller.

Imported by the worker (``manage.py db_worker`` resolves ``run_tool_call`` by its path)
and lazily by the web side when it enqueues: defining a Tasks framework task needs
the settings and the app registry.

A run loads the ``MCPTask``, rebuilds the caller (user, OAuth client, token scopes,
client capabilities, locale) and calls the tool through the server's own
``tools/call`` handler, so the access checks are those of a direct call. While the
tool runs, a watcher renews the heartbeat and, once the task is cancelled, cancels
the tool (``Context.cancelled`` turns true, an async tool gets ``CancelledError``).
The outcome is stored: ``completed`` with the ``CallToolResult`` (a tool error
included), ``failed`` with the JSON-RPC error, or ``input_required`` with the
questions the tool asked; answers from ``tasks/update`` run the tool again.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import signal
import threading
from typing import Any

from asgiref.sync import AsyncToSync
from django.conf import settings

from ..conf import mcp_settings
from ..engine import Exchange, engine
from ..exceptions import InputRequired
from ..i18n import language
from ..models import MCPTask
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..sync import run_bookkeeping
from ..unavailable import DatabaseUnavailable, database_error
from . import store
from .framework import task_decorator
from .notify import announce

logger = logging.getLogger("django_mcp")

#: Tries of a bookkeeping query while the database is unavailable (about a minute in all).
RETRIES = 16
#: Seconds between two looks at the task's row while the tool runs (cancellation; heartbeat as due).
WATCH_INTERVAL = 0.5


class TaskExchange(Exchange):
    """The ``Runtime`` of a task's run: questions come from stored answers, never from a live stream."""

    def __init__(self, server: Any, row: MCPTask, user: Any, auth: Any) -> None:
        request = jsonrpc.Request(
            id=f"task-{row.pk[:12]}", method="tools/call", params={"name": row.tool, "arguments": row.arguments}
        )
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
        self.attempt = row.attempts
        self.in_task = True
        self.answers = dict(row.answers or {})
        self.progress_token = row.pk  # progress always counts in a task: its message is the statusMessage
        #: The newest progress message; the watcher stores it as the task's ``statusMessage``.
        self.message = ""

    async def ask(self, method: str, params: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        """Answered from the task's stored answers in either era: a worker has no stream to ask on."""
        return self.answer_for(method, params, key)

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
    from ..dispatch import default_site
    from ..server import servers

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
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import AnonymousUser

    if user_id is None:
        return AnonymousUser()
    return get_user_model()._default_manager.filter(pk=user_id).first()


async def _call(server: Any, ex: TaskExchange) -> dict[str, Any]:
    with language(ex.locale):
        result = await server.handle("tools/call", ex.params, ex)
    return engine.finalize("tools/call", ex.revision, result)


async def execute(task_id: str) -> None:
    """One run of task ``task_id``, start to stored outcome."""
    row = await _book(store.claim, task_id)
    if row is None:  # cancelled before it started, ended, or claimed by another run
        return
    attempt = row.attempts
    user = await _book(_load_user, row.user_id)
    if user is None or (row.user_id is not None and not user.is_active):
        error = {"code": jsonrpc.INVALID_REQUEST, "message": "The user who started this task is no longer active"}
        await _book(store.finish, task_id, attempt, MCPTask.FAILED, error=error, message=error["message"])
        return
    from ..auth.bearer import AuthInfo

    auth = AuthInfo(user, row.oauth_client, frozenset(row.scopes)) if row.scopes is not None else None
    server = resolve_server(row.server)
    ex = TaskExchange(server, row, user, auth)
    work = asyncio.ensure_future(_call(server, ex))
    _running[task_id] = (asyncio.get_running_loop(), work, ex)
    try:
        await _watch(task_id, attempt, work, ex)
    finally:
        _running.pop(task_id, None)


async def _watch(task_id: str, attempt: int, work: asyncio.Future[dict[str, Any]], ex: TaskExchange) -> None:
    """Renew the heartbeat while the tool runs, stop it once the task is cancelled, then store the outcome."""
    beat_every = max(WATCH_INTERVAL, mcp_settings.TASK_HEARTBEAT_TIMEOUT / 4)
    since_beat = 0.0
    stored_message = ""
    while not work.done():
        await asyncio.wait({work}, timeout=WATCH_INTERVAL)
        if work.done():
            break
        since_beat += WATCH_INTERVAL
        try:
            if since_beat >= beat_every:
                since_beat = 0.0
                alive = await run_bookkeeping(store.beat, task_id, attempt)
            else:
                alive = await run_bookkeeping(store.still_running, task_id, attempt)
            if alive and ex.message != stored_message:
                stored_message = ex.message
                await run_bookkeeping(store.progress, task_id, attempt, stored_message)
        except Exception:  # the database is away for a moment: the tool runs on, the next look retries
            logger.warning("django_mcp: task %s: could not reach its row", task_id[:8], exc_info=True)
            continue
        if not alive:  # cancelled (or handed to another run): stop the tool
            ex.cancelled.set()
            work.cancel()
            await asyncio.wait({work})
            return
    await _store(task_id, attempt, work)


async def _store(task_id: str, attempt: int, work: asyncio.Future[dict[str, Any]]) -> None:
    if await _outcome(task_id, attempt, work):
        row = await _book(MCPTask.objects.filter(pk=task_id).first)
        if row is not None:
            await announce(row)


async def _outcome(task_id: str, attempt: int, work: asyncio.Future[dict[str, Any]]) -> bool:
    """Store how the run ended; whether the task's status changed."""
    try:
        result = work.result()
    except InputRequired as need:
        return bool(await _book(store.park, task_id, attempt, need.requests))
    except ProtocolError as exc:
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return bool(await _book(store.finish, task_id, attempt, MCPTask.FAILED, error=error, message=exc.message))
    except asyncio.CancelledError:
        return False
    except Exception as exc:
        lost = database_error(exc)
        if lost is not None:
            raise  # the database went away mid-run: the framework records the failure; the heartbeat recovers it
        logger.exception("django_mcp: task %s failed", task_id[:8])
        error = {"code": jsonrpc.INTERNAL_ERROR, "message": "Internal error"}
        return bool(await _book(store.finish, task_id, attempt, MCPTask.FAILED, error=error, message="Internal error"))
    return bool(await _book(store.finish, task_id, attempt, MCPTask.COMPLETED, result=result))


#: The runs of this process, by task id: their event loop, the tool's future and its exchange.
_running: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[dict[str, Any]], TaskExchange]] = {}


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
    """SIGTERM/SIGINT mid-run: the worker's own handler (stop after this task), then stop this task now."""
    previous = _previous_handlers.get(signum)
    if callable(previous):
        previous(signum, frame)  # db_worker: finish the loop after this task (a second signal exits)
    raise KeyboardInterrupt


_previous_handlers: dict[int, Any] = {}
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT") if hasattr(signal, name))


@task_decorator()  # type: ignore[untyped-decorator]  # django.tasks or its backport, typed as Any here
def run_tool_call(task_id: str) -> None:
    """The Tasks framework entry point: run MCP task ``task_id`` (its row says what and for whom)."""
    # db_worker's first SIGTERM waits for the running task to end, however long the tool runs; a task
    # can be handed to the next worker instead (``requeue``), so stop it now. Signals reach the main thread.
    watch_signals = threading.current_thread() is threading.main_thread()
    if watch_signals:
        for signum in _STOP_SIGNALS:
            _previous_handlers[signum] = signal.signal(signum, _stop_now)
    try:
        # The loop on this thread (a worker's main thread), not async_to_sync's thread of its own: a stop
        # signal's interrupt then leaves the loop, which cancels the tool, instead of leaving it running.
        if getattr(AsyncToSync.executors, "current", None) is None:
            asyncio.run(execute(task_id))
        else:  # in-process backend under an async caller (a test client): a clean thread, as a worker has
            runner = threading.Thread(target=asyncio.run, args=(execute(task_id),), daemon=True)
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
