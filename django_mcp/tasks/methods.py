"""The ``tasks/*`` methods and the task branch of ``tools/call``, for both eras.

2025-11-25 (experimental, in the core protocol): the client asks for a task with a
``task`` parameter on ``tools/call`` (``execution.taskSupport`` says which tools
allow it) and gets ``{task}``; ``tasks/get``, ``tasks/result`` (blocks until the
task ends, relaying the tool's questions on its stream), ``tasks/list`` and
``tasks/cancel`` (returns the cancelled task; -32602 once ended).

2026-07-28 (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663): a client
declaring the extension in its request's capabilities gets ``resultType: "task"``
from a task tool; ``tasks/get`` inlines the result, error or ``inputRequests``;
``tasks/update`` delivers answers; ``tasks/cancel`` acknowledges. A client without
the extension gets -32021 from ``tasks/*`` and from a ``task="required"`` tool.

A task is found only for the user and OAuth client that created it (an anonymous
caller's task: only from the session that created it; a 2026-07-28 anonymous task
only by its unguessable id, since that era has no session and no ``tasks/list``):
anyone else gets the same -32602 as for an id that never existed.

Importing this module installs the methods and the ``tools/call`` branch on
``server.hooks`` (``DjangoMCPConfig.ready()`` does): the server imports no tasks code.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Any

from ..conf import mcp_settings
from ..exceptions import InvalidParams, MCPError, MethodNotFound
from ..protocol import cursor
from ..protocol.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY, ProtocolError
from ..protocol.versions import at_least
from ..runtime.sync_pool import run_bookkeeping
from ..server import TaskHooks, hooks
from . import EXTENSION, RELATED_TASK, store
from .notify import announce

if TYPE_CHECKING:
    from ..models import MCPTask
    from ..runtime.engine import Exchange
    from ..server import MCPServer
    from ..tools import Tool

#: Methods of the 2026-07-28 extension: not in that revision's schema, so their params are checked here.
EXTENSION_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
#: 2025-11-25 session methods: the schema package has no types for them either, so the same holds.
SESSION_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})


def unvalidated(method: str, revision: str, stateless: bool) -> bool:
    """Whether ``method`` is a tasks method of this revision, whose params its handler checks (no schema type)."""
    if stateless:
        return method in EXTENSION_METHODS
    return method in SESSION_METHODS and at_least(revision, "2025-11-25")


_REQUIRED: dict[str, Any] = {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


def declared(ex: Exchange) -> bool:
    """Whether the request's client declared the tasks extension (2026-07-28, per request)."""
    extensions = (ex.client_capabilities or {}).get("extensions")
    return isinstance(extensions, dict) and EXTENSION in extensions


def wants_task(tool: Tool, params: dict[str, Any], ex: Exchange) -> bool:
    """Whether this ``tools/call`` becomes a task; raises when the tool and the client cannot agree.

    Decided once per request (the limits, the deadline and the handler all ask): kept on the exchange.
    """
    decided = ex.task_decision
    if decided is None:
        try:
            decided = _decide(tool, params, ex)
        except ProtocolError as exc:
            decided = exc
        ex.task_decision = decided
    if isinstance(decided, ProtocolError):
        raise decided
    return decided


def _decide(tool: Tool, params: dict[str, Any], ex: Exchange) -> bool:
    if ex.stateless:
        if declared(ex):
            return tool.task_support is not None  # the server decides; a legacy ``task`` param changes nothing
        if tool.task_support == "required":
            raise MCPError(
                f"Tool {tool.name!r} runs only as a task: the client must declare the {EXTENSION} extension",
                _REQUIRED,
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            )
        return False
    if not at_least(ex.revision, "2025-11-25"):
        if tool.task_support == "required":
            raise MethodNotFound(f"Tool {tool.name!r} runs only as a task, which needs protocol revision 2025-11-25")
        return False
    asked = isinstance(params.get("task"), dict)
    if asked and tool.task_support is None:
        raise MethodNotFound(f"Tool {tool.name!r} does not support task execution")
    if not asked and tool.task_support == "required":
        raise MethodNotFound(f"Tool {tool.name!r} must be called as a task (with the task parameter)")
    return asked


async def create(
    server: MCPServer, tool: Tool, kwargs: dict[str, Any], params: dict[str, Any], ex: Exchange, answers: dict[str, Any]
) -> dict[str, Any]:
    """Store and enqueue the task; the ``CreateTaskResult`` of the revision, once ``tasks/get`` can find it."""
    requested = params.get("task")
    ttl = store.ttl_for(requested.get("ttl") if isinstance(requested, dict) and not ex.stateless else None)
    arguments = params.get("arguments")
    # Taken here, in the request's own context (the bookkeeping thread has none).
    trace_context = store.trace_carrier() if store.trace_carrier is not None else None
    row = await run_bookkeeping(
        partial(
            store.create,
            server=server.name,
            tool=tool.name,
            arguments=arguments if isinstance(arguments, dict) else {},
            revision=ex.revision,
            owner=owner(ex),
            auth=ex.auth,
            session=ex.session_id,
            client_info=ex.client_info,
            client_capabilities=ex.client_capabilities,
            locale=ex.locale,
            answers=answers,
            ttl_ms=ttl,
            trace_context=trace_context,
        )
    )
    if ex.stateless:
        return {"resultType": "task", **store.task_v2(row, detailed=False)}
    return {"task": store.task_v1(row)}


def owner(ex: Exchange) -> store.Owner:
    """Whose tasks a request reaches: its user's through its OAuth client, or an anonymous caller's session's."""
    return store.owner_of(ex.user, ex.auth, ex.session_id)


def require_extension(ex: Exchange, what: str) -> None:
    """-32021 for a 2026-07-28 request about tasks from a client that did not declare the extension."""
    if ex.stateless and not declared(ex):
        raise MCPError(
            f"{what} needs the {EXTENSION} extension: declare it in the request's client capabilities",
            _REQUIRED,
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        )


async def _find(params: dict[str, Any], ex: Exchange) -> MCPTask:
    require_extension(ex, ex.method)
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise InvalidParams("taskId must be a string")
    row = await run_bookkeeping(store.find, task_id, owner(ex))
    if row is None:
        raise InvalidParams("Failed to retrieve task: Task not found")
    return row


async def _get(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    row = await _find(params, ex)
    return store.task_v2(row, detailed=True) if ex.stateless else store.task_v1(row)


async def _update(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    if not ex.stateless:
        raise MethodNotFound("Method not found: tasks/update")
    row = await _find(params, ex)
    responses = params.get("inputResponses")
    if not isinstance(responses, dict):
        raise InvalidParams("inputResponses must be an object")
    pending = row.input_requests or {} if row.status == row.INPUT_REQUIRED else {}
    for key, value in responses.items():
        asked = pending.get(key)
        if isinstance(asked, dict):
            ex.check_answer(str(asked.get("method", "")), key, value)
    if await run_bookkeeping(store.answer, row, responses):
        await _announce(row)
    return {}


async def _cancel(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    row = await _find(params, ex)
    cancelled = await run_bookkeeping(store.cancel, row)
    if cancelled:
        await _announce(row)
    if ex.stateless:
        return {}  # an acknowledgement, also for a task that had ended (SEP-2663)
    if not cancelled:
        raise InvalidParams(f"Task is already {row.status}: only a working task can be cancelled")
    return store.task_v1(row)  # ``_announce`` reloaded the row: it is the cancelled task


async def _result(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    """2025-11-25 ``tasks/result``: wait for the end, asking the client what the tool asks meanwhile."""
    if ex.stateless:
        raise MethodNotFound("Method not found: tasks/result")
    row = await _find(params, ex)
    mine = owner(ex)
    wait = 0.1
    while not row.is_terminal:
        if row.status == row.INPUT_REQUIRED:
            await _relay(row, ex)
            wait = 0.1
        await asyncio.sleep(wait)
        wait = min(wait * 1.5, 1.0)
        found = await run_bookkeeping(store.find, row.pk, mine)
        if found is None:
            raise InvalidParams("Failed to retrieve task: Task has expired")
        row = found
    related = {RELATED_TASK: {"taskId": row.pk}}
    if row.status == row.COMPLETED:
        result = dict(row.result or {"content": []})
        result.pop("resultType", None)
        result["_meta"] = {**(result.get("_meta") or {}), **related}
        return result
    if row.status == row.FAILED:
        error = row.error or {}
        code, message = int(error.get("code", -32603)), str(error.get("message", "Internal error"))
        raise ProtocolError(code, message, error.get("data"))
    raise MCPError("The task was cancelled", related)


async def _relay(row: MCPTask, ex: Exchange) -> None:
    """The tool's questions as server->client requests on this stream; the answers resume the task."""
    answers: dict[str, Any] = {}
    for key, request in (row.input_requests or {}).items():
        method = str(request.get("method", ""))
        request_params = {**(request.get("params") or {}), "_meta": {RELATED_TASK: {"taskId": row.pk}}}
        answers[key] = await ex.ask(method, request_params, key)
    if not answers:
        return
    if await run_bookkeeping(store.answer, row, answers):
        await _announce(row)


async def _announce(row: MCPTask) -> None:
    await run_bookkeeping(row.refresh_from_db)
    await announce(row)


async def _list(server: MCPServer, params: dict[str, Any], ex: Exchange) -> dict[str, Any]:
    if ex.stateless:
        raise MethodNotFound("Method not found: tasks/list")
    size = mcp_settings.PAGE_SIZE
    offset = cursor.decode(params.get("cursor"), "tasks")
    rows = await run_bookkeeping(store.listing, owner(ex), offset, size)
    result: dict[str, Any] = {"tasks": [store.task_v1(r) for r in rows[:size]]}
    if len(rows) > size:
        result["nextCursor"] = cursor.encode(offset + size, "tasks")
    return result


HANDLERS = {
    "tasks/get": _get,
    "tasks/update": _update,
    "tasks/cancel": _cancel,
    "tasks/result": _result,
    "tasks/list": _list,
}

hooks.methods.update(HANDLERS)
hooks.tasks = TaskHooks(extension=EXTENSION, wants_task=wants_task, create=create)
