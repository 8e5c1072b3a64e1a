"""Transport-independent request processing: the handler, result shaping, error mapping.

The door (``dispatch.handle``) builds an ``Exchange`` for one JSON-RPC request (its
revision, session or per-request ``_meta``, caller, and an *outlet* for the messages
that belong to it: progress, logs, server->client requests), checks it, and hands it
to ``Engine.run``, which returns the response message, or None for a cancelled request.
Nothing else calls ``Engine.run``: every transport, the test client and the task worker
come through the door.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Hashable
from typing import Any, Protocol

import mcp_types
from django.contrib.auth.models import AnonymousUser
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    SERVER_INFO_META_KEY,
)
from pydantic import ValidationError

from ..conf import mcp_settings
from ..context import LOG_LEVELS
from ..exceptions import BeginTask, MCPError, RequestCancelled
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ProtocolError
from ..protocol.shaping import shape_for
from ..protocol.validation import validate_client_result, validate_request, validate_server_result
from ..protocol.versions import at_least, is_stateless, negotiate
from ..server import CACHEABLE, InputRequired, MCPServer
from ..state.hub import hub, session_group
from ..state.sessions import SessionState, store
from .i18n import language
from .request_state import load_state, sign_state
from .sync_pool import drop_shared_connections
from .timers import Later
from .unavailable import Unavailable, database_error

logger = logging.getLogger("django_mcp")

_ids = itertools.count(1)
_PROCESS = secrets.token_hex(3)
_INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_CAPABILITY_FOR = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
_ANSWER_TYPES: dict[str, type[Any]] = {
    "elicitation/create": mcp_types.ElicitResult,
    "sampling/createMessage": mcp_types.CreateMessageResult,
    "roots/list": mcp_types.ListRootsResult,
}


def _anonymous() -> Any:
    return AnonymousUser()


UNSET: Any = object()


def _is_task_handle(result: dict[str, Any]) -> bool:
    """A ``CreateTaskResult`` answering ``tools/call`` (validated by its own shape, not ``CallToolResult``'s)."""
    return result.get("resultType") == "task" or ("task" in result and "content" not in result)


class Outlet(Protocol):
    async def send(self, message: dict[str, Any]) -> None: ...

    # Optional: ``carries_requests = False`` when the client cannot answer a server->client request
    # while the call runs (a response buffered until the end, as in WSGI mode).

    # Optional: ``async def close(self) -> None`` ends the response early (SSE polling).


class Exchange:
    """One request in flight; the ``Runtime`` behind ``Context``."""

    def __init__(
        self,
        server: MCPServer,
        request: jsonrpc.Request,
        revision: str,
        session: SessionState | None,
        user: Any,
        outlet: Outlet | None,
        *,
        locale: str | None = None,
        auth: Any = None,
        target: Any = UNSET,
        peer: tuple[dict[str, Any], dict[str, Any]] | None = None,
    ) -> None:
        self.server = server
        self._target = target
        self.locale = locale  # the caller's Accept-Language (HTTP), activated while the handler runs
        self.request = request
        self.request_id: str | int | None = request.id
        self.method = request.method
        self.params: dict[str, Any] = request.params or {}
        self.revision = revision
        self.session = session
        self.session_id = session.id if session else None
        self.user = user if user is not None else _anonymous()
        self.auth = auth  # django_mcp.auth.bearer.AuthInfo when an OAuth token authenticated the request
        self.outlet = outlet
        self._cancelled: asyncio.Event | None = None
        #: Whether this ``tools/call`` becomes a task, or the error that refuses it: decided once (tasks.methods).
        self.task_decision: bool | ProtocolError | None = None
        meta = self.params.get("_meta") or {}
        self.meta: dict[str, Any] = meta if isinstance(meta, dict) else {}
        self.progress_token = self.meta.get("progressToken")
        self.stateless = is_stateless(revision)
        self.client_info: dict[str, Any]
        self.client_capabilities: dict[str, Any]
        self.log_level: str | None
        if peer is not None:  # a task's run: the client as it was when the task was created
            self.client_info, self.client_capabilities = peer
            self.log_level = None
        elif self.stateless:
            self.client_info = self.meta.get(CLIENT_INFO_META_KEY) or {}
            self.client_capabilities = self.meta.get(CLIENT_CAPABILITIES_META_KEY) or {}
            self.log_level = self.meta.get(LOG_LEVEL_META_KEY)
        else:
            assert session is not None
            self.client_info = session.client_info
            self.client_capabilities = session.client_capabilities
            self.log_level = session.log_level
        self._asked = 0
        self.answers: dict[str, Any] = {}  # stateless: every answer the client sent (state + inputResponses)
        self.used: dict[str, Any] = {}  # stateless: the answers this run consumed, carried to the next round
        #: Set by ``tools/call`` when this call becomes a task at the tool's ``Context.begin_task()``.
        self.task_pending = False

    @property
    def target(self) -> Any:
        """The tool, prompt or resource this request names (``MCPServer.target``), looked up once."""
        if self._target is UNSET:
            self._target = self.server.target(self.method, self.params)
        return self._target

    @property
    def cancelled(self) -> asyncio.Event:
        """Set when the client cancels; made on first use (most requests never look)."""
        if self._cancelled is None:
            self._cancelled = asyncio.Event()
        return self._cancelled

    # -- Runtime protocol -----------------------------------------------------------
    def allowed(self, scopes: list[str]) -> bool:
        """Whether the caller's token grants ``scopes``; callers without a token were let in by the transport."""
        return not scopes or self.auth is None or bool(self.auth.allows(scopes))

    def log_enabled(self, level: str) -> bool:
        if self.log_level is None:
            # Stateless: no level in _meta means no logs. Handshake: no setLevel means the server decides.
            return not self.stateless
        try:
            return LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)
        except ValueError:
            return False

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        if self.outlet is None:
            return
        if method == "notifications/progress" and self.stateless and not at_least(self.revision, "2026-07-28"):
            return
        await self.outlet.send(jsonrpc.notification_message(method, shape_for(method, self.revision, params)))

    async def ask(self, method: str, params: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        """A server->client request: sent on the stream (handshake) or as input_required (stateless)."""
        capability = _CAPABILITY_FOR.get(method)
        if capability and capability not in self.client_capabilities:
            raise MCPError(
                f"The client did not declare the {capability!r} capability",
                {"requiredCapabilities": {capability: {}}},
                code=jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY if self.stateless else jsonrpc.INVALID_REQUEST,
            )
        if self.stateless:
            return self.answer_for(method, params, key)
        if self.session is not None and not await store.is_initialized(self.session):
            # The lifecycle spec: no server requests before the client's notifications/initialized.
            raise MCPError(f"Cannot send {method} before notifications/initialized", code=jsonrpc.INVALID_REQUEST)
        answer = await engine.client_request(self, method, shape_for(method, self.revision, params))
        if self.task_pending:  # a task is about to be made of this call: its run reuses what was answered
            self.used[key if key is not None else f"{method.split('/')[0]}-{self._asked}"] = answer
        self._asked += 1
        return answer

    async def begin_task(self) -> None:
        """``Context.begin_task()``: from here on the call runs as a task, when it is to become one."""
        if self.task_pending:
            raise BeginTask(dict(self.used))

    def answer_for(self, method: str, params: dict[str, Any], key: str | None) -> dict[str, Any]:
        """The answer the client already gave to this question, else ``InputRequired`` (multi round-trip)."""
        if key is None:
            key = f"{method.split('/')[0]}-{self._asked}"
        self._asked += 1
        if key in self.answers:
            answer = self.check_answer(method, key, self.answers[key])
            self.used[key] = answer
            return answer
        raise InputRequired(key, method, params, self.used)

    def check_answer(self, method: str, key: str, answer: Any) -> dict[str, Any]:
        """An ``inputResponses`` entry must be the result type of the request it answers (else -32602)."""
        model = _ANSWER_TYPES.get(method)
        if not isinstance(answer, dict):
            raise ProtocolError(jsonrpc.INVALID_PARAMS, f"Invalid inputResponses[{key!r}]: expected an object")
        if model is not None:
            try:
                model.model_validate(answer)
            except ValidationError as exc:
                raise ProtocolError(
                    jsonrpc.INVALID_PARAMS,
                    f"Invalid inputResponses[{key!r}] for {method}",
                    {"errors": [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors(include_url=False)[:20]]},
                ) from None
        return answer

    def load_answers(self) -> None:
        """Answers of earlier rounds (signed ``requestState``) plus this round's ``inputResponses``.

        Responses without a state are accepted (the client may answer before being
        asked); keys nobody asks for are ignored, and only consumed answers are
        carried into the next round's state.
        """
        state = self.params.get("requestState")
        responses = self.params.get("inputResponses")
        if responses is not None and not isinstance(responses, dict):
            raise ProtocolError(jsonrpc.INVALID_PARAMS, "inputResponses must be an object")
        answers: dict[str, Any] = {}
        if state is not None:
            if not isinstance(state, str):
                raise ProtocolError(jsonrpc.INVALID_PARAMS, "requestState must be a string")
            answers = load_state(state, self.method, self.params, self._user_key())
        answers.update(responses or {})
        self.answers = answers

    def input_required(self, need: InputRequired) -> dict[str, Any]:
        """The ``input_required`` result asking ``need``'s questions, the answers so far signed into its state."""
        state = sign_state(self.method, self.params, self._user_key(), self.used)
        return {"resultType": "input_required", "inputRequests": need.requests, "requestState": state}

    def _user_key(self) -> str:
        return str(getattr(self.user, "pk", None) or "")

    async def close_stream(self) -> None:
        close = getattr(self.outlet, "close", None)
        if close is not None and not self.stateless:
            await close()

    async def set_log_level(self, level: str) -> None:
        if self.session is not None:
            self.session.log_level = level
            await store.update(self.session, log_level=level)

    async def subscribe(self, uri: str, on: bool) -> None:
        if self.session is None:
            return
        await store.set_subscription(self.session, uri, on)


def negotiate_initialize(request: jsonrpc.Request) -> tuple[str, dict[str, Any]]:
    """The revision an ``initialize`` gets and its params; raises -32602 for a malformed one."""
    params = request.params or {}
    revision = negotiate(params.get("protocolVersion"))
    validate_request("initialize", revision, request.params)
    return revision, params


class Engine:
    def __init__(self) -> None:
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._inflight: dict[tuple[str, str | int], tuple[asyncio.Task[Any], Exchange]] = {}
        self._listening: dict[str, int] = {}
        self.running: dict[asyncio.Task[Any], Exchange] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._late = Later(0.05)
        self._tracked: set[Hashable] = set()

    # -- requests -------------------------------------------------------------------
    async def run(self, ex: Exchange) -> dict[str, Any] | None:
        """Run one request the door has let in; the response message, or None if the client cancelled.

        Every exception becomes the JSON-RPC error it stands for (one mapping for every caller):
        ``InputRequired`` an ``input_required`` result, a lost database a retryable error, anything
        unexpected -32603 (logged). Only a cancellation the client did not ask for propagates.
        """
        request = ex.request
        key = (ex.session_id, request.id) if ex.session is not None and ex.session_id else None
        task = asyncio.current_task()
        if task is not None:
            self.running[task] = ex
            if key is not None:
                self._inflight[key] = (task, ex)
        try:
            if ex.stateless and request.method in _INPUT_METHODS:
                ex.load_answers()
            if ex.locale:
                with language(ex.locale):
                    result = await ex.server.handle(request.method, ex.params, ex)
            else:  # the common case, without a context manager
                result = await ex.server.handle(request.method, ex.params, ex)
            return self.answer(ex, result)
        except InputRequired as need:
            return jsonrpc.result_message(request.id, self._stamp(ex.server, ex.input_required(need)))
        except ProtocolError as exc:
            return jsonrpc.error_message(request.id, self.protocol_error(ex, exc))
        except (asyncio.CancelledError, RequestCancelled):
            if ex._cancelled is not None and ex._cancelled.is_set():
                return None
            raise
        except Exception as exc:
            lost = database_error(exc)
            if lost is not None:  # an async handler's ORM call: retryable, not a bug
                await drop_shared_connections()
                return jsonrpc.error_message(request.id, lost)
            logger.exception("MCP request %s failed", request.method)
            return jsonrpc.error_message(request.id, ProtocolError(jsonrpc.INTERNAL_ERROR, "Internal error"))
        finally:
            if task is not None:
                self.running.pop(task, None)
            if key is not None:
                self._inflight.pop(key, None)

    def answer(self, ex: Exchange, result: dict[str, Any]) -> dict[str, Any]:
        """The response message carrying a handler's ``result``: finalized and shaped for the request's revision.

        Public so that a middleware replacing a result (a timed-out call, an oversized result) answers
        exactly as the engine does.
        """
        result = self.finalize(ex.method, ex.revision, result)
        if ex.stateless:
            self._stamp(ex.server, result)
        return jsonrpc.result_message(ex.request.id, result)

    @staticmethod
    def protocol_error(ex: Exchange, exc: ProtocolError) -> ProtocolError:
        """The error as this request's revision spells it."""
        if ex.stateless and exc.code == jsonrpc.RESOURCE_NOT_FOUND:
            # 2026-07-28 retired -32002: an unknown resource is invalid params (SEP-2164).
            return ProtocolError(jsonrpc.INVALID_PARAMS, exc.message, exc.data)
        return exc

    def running_in(self, session_id: str, request_id: Any) -> Exchange | None:
        """The exchange of request ``request_id`` of ``session_id`` running on this worker, if any."""
        running = self._inflight.get((session_id, request_id))
        return running[1] if running is not None else None

    def finalize(self, method: str, revision: str, result: dict[str, Any]) -> dict[str, Any]:
        if is_stateless(revision):
            result.setdefault("resultType", "complete")
            if method in CACHEABLE:
                result.setdefault("ttlMs", mcp_settings.CACHE_TTL_MS)
                result.setdefault("cacheScope", mcp_settings.CACHE_SCOPE)
        shaped = shape_for(method, revision, result)
        if mcp_settings.VALIDATE_RESULTS and not (method == "tools/call" and _is_task_handle(shaped)):
            validate_server_result(method, revision, shaped)
        return shaped

    def _stamp(self, server: MCPServer, result: dict[str, Any]) -> dict[str, Any]:
        """2026-07-28 results name the server in ``_meta`` (a handler's own value wins)."""
        meta = result.get("_meta")
        if not isinstance(meta, dict):
            meta = result["_meta"] = {}
        meta.setdefault(SERVER_INFO_META_KEY, server.server_info())
        return result

    # -- cancellation ---------------------------------------------------------------
    async def cancel(self, session_id: str, request_id: Any) -> None:
        running = self._inflight.get((session_id, request_id))
        if running is not None:
            self.cancel_task(running[0])
        else:
            await hub.publish(session_group(session_id), {"kind": "cancel", "id": request_id, "session": session_id})

    # -- server -> client requests (handshake era) ------------------------------------
    async def client_request(self, ex: Exchange, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if ex.outlet is None or ex.session_id is None or not getattr(ex.outlet, "carries_requests", True):
            # No stream the client could answer on while the call waits (stdio batches, WSGI mode).
            raise MCPError("This transport cannot carry server-to-client requests", code=jsonrpc.INVALID_REQUEST)
        rid = f"{_PROCESS}-{next(_ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        await self._listen(ex.session_id)
        try:
            await ex.outlet.send(jsonrpc.request_message(rid, method, params))
            try:
                answer = await asyncio.wait_for(future, mcp_settings.CLIENT_REQUEST_TIMEOUT)
            except asyncio.TimeoutError:
                await ex.outlet.send(
                    jsonrpc.notification_message("notifications/cancelled", {"requestId": rid, "reason": "timed out"})
                )
                raise MCPError(f"The client did not answer {method} in time", code=jsonrpc.REQUEST_TIMEOUT) from None
        finally:
            self.pending.pop(rid, None)
            await self._unlisten(ex.session_id)
        if answer.get("error") is not None:
            err = answer["error"]
            raise MCPError(str(err.get("message", "Client error")), err.get("data"), code=int(err.get("code", -32603)))
        result = answer.get("result") or {}
        validate_client_result(method, ex.revision, result)
        return result

    async def deliver_response(self, session_id: str, response: jsonrpc.Response) -> None:
        """A client's answer arrived on some worker: resolve the waiter here or publish it."""
        future = self.pending.get(str(response.id))
        if future is not None:
            if not future.done():
                future.set_result({"result": response.result, "error": response.error})
            return
        await hub.publish(
            session_group(session_id),
            {"kind": "response", "id": response.id, "result": response.result, "error": response.error},
        )

    def _on_session_message(self, payload: dict[str, Any]) -> None:
        kind = payload.get("kind")
        if kind == "response":
            future = self.pending.get(str(payload.get("id")))
            if future is not None and not future.done():
                future.set_result({"result": payload.get("result"), "error": payload.get("error")})
        elif kind == "cancel":
            running = self._inflight.get((str(payload.get("session", "")), payload.get("id", "")))
            if running is not None:
                self.cancel_task(running[0])

    async def _listen(self, session_id: str) -> None:
        n = self._listening.get(session_id, 0)
        self._listening[session_id] = n + 1
        if n == 0:
            try:
                await hub.join(session_group(session_id), self._on_session_message)
            except Unavailable as exc:
                # Answers and cancellations posted to this worker still arrive; others wait for the layer.
                logger.warning("django_mcp: not listening for session messages (%s)", exc)

    async def _unlisten(self, session_id: str) -> None:
        n = self._listening.get(session_id, 0) - 1
        if n <= 0:
            self._listening.pop(session_id, None)
            await hub.leave(session_group(session_id), self._on_session_message)
        else:
            self._listening[session_id] = n

    def _spawn(self, loop: asyncio.AbstractEventLoop, coro: Any) -> None:
        """Run a bookkeeping coroutine in the background, keeping a reference until it is done."""
        t = loop.create_task(coro)
        self._background.add(t)
        t.add_done_callback(self._background.discard)

    def cancel_task(self, task: asyncio.Task[Any]) -> None:
        """Cancel a running request: its ``Context.cancelled`` turns true, then the task is cancelled."""
        ex = self.running.get(task)
        if ex is not None:
            ex.cancelled.set()
        task.cancel()

    def track(self, key: Hashable, session_id: str | None) -> None:
        """Make a request cancellable from another worker once it outlives 50 ms; ``untrack`` when it ends."""
        if session_id is None:
            return

        def join() -> None:
            self._tracked.add(key)
            self._spawn(asyncio.get_running_loop(), self._listen(session_id))

        self._late.add(key, join)

    def untrack(self, key: Hashable, session_id: str | None) -> None:
        if session_id is None:
            return
        self._late.discard(key)
        if key in self._tracked:
            self._tracked.discard(key)
            self._spawn(asyncio.get_running_loop(), self._unlisten(session_id))


engine = Engine()
