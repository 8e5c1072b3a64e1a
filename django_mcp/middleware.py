"""MCP middleware: code that wraps every request through the door, as Django's middleware wraps views.

``DJANGO_MCP["MIDDLEWARE"]`` lists dotted paths. Each names a factory (usually a class) called once
with ``call_next``; the object it returns is called with a ``Call`` for every request that enters
the door (``dispatch.handle``) — Streamable HTTP, legacy SSE, stdio, the WSGI view, the test client
and the task worker alike — and returns the JSON-RPC response message (or None when the client
cancelled the request)::

    class Timing:
        def __init__(self, call_next):
            self.call_next = call_next

        async def __call__(self, call):
            started = time.monotonic()
            response = await self.call_next(call)
            call.state["seconds"] = time.monotonic() - started
            return response

A sync middleware (``__call__`` a plain function) works too, as in Django: it gets a sync
``call_next`` and runs in a thread, which costs a thread hop per request; the built-in ones are async.
A middleware refuses a request by raising an ``MCPError`` (the JSON-RPC error the client gets) or a
``Refused`` (the same, with an HTTP status and headers where the transport has them: 429 and
``Retry-After`` for ``RateLimited``); it changes arguments through ``call.arguments`` and results by
editing ``response["result"]``. The first listed is the outermost. A factory that raises Django's
``MiddlewareNotUsed`` is left out of the chain, as in Django (a feature switched off by a setting costs nothing).

A reply is serialized once (``Call.encode``) when every middleware in the chain declares
``keeps_replies = True``: it never edits a response an inner one returned (the built-in ones
declare it). One that edits responses leaves it out, and the reply is serialized where it is sent.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync, iscoroutinefunction, sync_to_async
from django.core.exceptions import MiddlewareNotUsed
from django.utils.module_loading import import_string

from . import access
from .protocol import jsonrpc
from .protocol.jsonrpc import ProtocolError
from .runtime.engine import engine
from .server import MCPServer, hooks

if TYPE_CHECKING:
    from datetime import datetime

    from .exceptions import Refused
    from .runtime.engine import Exchange

#: ``await call_next(call)``: the rest of the chain, then the engine; the response message or None.
CallNext = Callable[["Call"], Awaitable["dict[str, Any] | None"]]

#: Where a request came from: ``Call.transport``.
TRANSPORTS = ("http", "sse", "stdio", "wsgi", "test", "task", "browser")


class Call:
    """One request as a middleware sees it: what is asked, of what, by whom, through what.

    ``state`` is a dict the middlewares of one request share (as attributes on Django's request).
    """

    __slots__ = (
        "address", "auth", "client_id", "exchange", "method", "refused", "scope", "sealed", "started", "state",
        "task_id", "transport", "user",
    )  # fmt: skip

    def __init__(
        self,
        exchange: Exchange,
        user: Any,
        auth: Any,
        client_id: str,
        transport: str,
        scope: dict[str, Any] | None = None,
        address: str | None = None,
    ) -> None:
        self.exchange = exchange
        #: The JSON-RPC method (``"tools/call"``, ...): every middleware asks, so it is a plain attribute.
        self.method: str = exchange.method
        self.user = user
        #: The verified OAuth token (``django_mcp.auth.bearer.AuthInfo``), None without one.
        self.auth = auth
        #: The OAuth client's id, "" without a token.
        self.client_id = client_id
        self.transport = transport
        #: The ASGI scope of the HTTP request that carries it (its ``headers``, ``client``, ``server`` and
        #: ``http_version``; ASGI-shaped from ``request.META`` in WSGI mode); None over stdio, in the test
        #: client and in a task's run.
        self.scope = scope
        #: The client's network address (the ASGI scope's ``client``, the WSGI ``REMOTE_ADDR``); None over
        #: stdio, in the test client and in a task's run. Behind a proxy, the proxy's unless the server is
        #: told to trust its forwarding headers (``uvicorn --proxy-headers``, daphne ``--proxy-headers``).
        self.address = address
        #: The MCP task this request runs (``transport == "task"``), else None.
        self.task_id: str | None = getattr(exchange, "task_id", None)
        #: ``time.monotonic()`` when the request entered the door.
        self.started = time.monotonic()
        self.state: dict[str, Any] = {}
        #: Every middleware of the chain keeps replies as they are (``keeps_replies``): set by the door.
        self.sealed = False
        #: The ``Refused`` an inner middleware or the door raised (a missing scope, a rate limit), else None.
        #: The response ``call_next`` returned is its JSON-RPC error; the transport answers its status and headers.
        self.refused: Refused | None = None

    @property
    def params(self) -> dict[str, Any]:
        """The request's params (a dict the handler reads: change it to change what runs)."""
        return self.exchange.params

    @property
    def arguments(self) -> dict[str, Any]:
        """``tools/call`` and ``prompts/get``: the arguments ({} when none were sent)."""
        value = self.exchange.params.get("arguments")
        return value if isinstance(value, dict) else {}

    @arguments.setter
    def arguments(self, value: dict[str, Any]) -> None:
        self.exchange.params["arguments"] = value

    @property
    def request_id(self) -> Any:
        return self.exchange.request_id

    @property
    def revision(self) -> str:
        """The protocol revision the request speaks (``"2025-11-25"``, ``"2026-07-28"``, ...)."""
        return self.exchange.revision

    @property
    def session_id(self) -> str | None:
        """The handshake-era session (``Mcp-Session-Id``); None in the 2026-07-28 stateless era."""
        return self.exchange.session_id

    @property
    def scopes(self) -> frozenset[str] | None:
        """The token's scopes; None without a token."""
        return self.auth.scopes if self.auth is not None else None

    @property
    def target(self) -> Any:
        """The ``Tool``, ``Prompt`` or resource the request names (None: no target, or an unknown one)."""
        return self.exchange.target

    @property
    def name(self) -> str | None:
        """The tool's or prompt's name, or the resource's URI, as the client sent it."""
        params = self.exchange.params
        value = params.get("uri") if self.exchange.method.startswith("resources/") else params.get("name")
        return value if isinstance(value, str) else None

    @property
    def server(self) -> MCPServer:
        """The ``MCPServer`` (site) that serves the request."""
        return self.exchange.server

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``params._meta`` ({} when none was sent): a trace context, a progress token..."""
        return self.exchange.meta

    @property
    def request_size(self) -> int | None:
        """The bytes the request came in, when it came alone in a body; None when not known (a batch, stdio)."""
        return self.exchange.request.size or None

    @property
    def expires(self) -> datetime | None:
        """In a task's run: when the task expires (its deadline when no timeout is set); None elsewhere."""
        return getattr(self.exchange, "expires", None)

    @property
    def trace_context(self) -> dict[str, Any] | None:
        """In a task's run: the trace context of the ``tools/call`` that created the task; None elsewhere."""
        return getattr(self.exchange, "trace_context", None)

    @property
    def becomes_task(self) -> bool:
        """Whether this ``tools/call`` is to run as an MCP task rather than answer at once.

        Decided once per request, as the handler will decide after the middleware: False for a
        call the handler will refuse (a tool and client that cannot agree), and in a task's own run.
        """
        tool, tasks = self.exchange.target, hooks.tasks
        if tasks is None or tool is None or self.method != "tools/call":
            return False
        if tool.task_support is None and "task" not in self.params:
            return False
        if getattr(self.exchange, "in_task", False):
            return False
        try:
            return bool(tasks.wants_task(tool, self.params, self.exchange))
        except ProtocolError:  # the handler refuses it with this same error
            return False

    async def permitted(self, obj: Any) -> bool:
        """Whether the caller has the rights ``obj`` (a tool, prompt or resource) asks for: scopes, permissions, check.

        For a middleware that says why something is refused only to a caller who could have used it.
        """
        return await access.permitted(obj, self.exchange)

    def answer(self, result: dict[str, Any]) -> dict[str, Any]:
        """The response carrying ``result`` in place of the handler's, finalized and shaped as the engine does.

        For a middleware that answers itself: a timed-out call, an oversized result.
        """
        return engine.answer(self.exchange, result)

    def signal_cancelled(self) -> None:
        """Turn the handler's ``Context.cancelled`` true: a sync tool still running can see it and stop."""
        self.exchange.cancelled.set()

    def encode(self, response: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """``response`` and its JSON bytes, made once per request.

        When the chain is sealed, the reply returned carries its bytes (``jsonrpc.Encoded``): return it
        instead of ``response``, and the middleware around and the transport use them as they are.
        """
        if type(response) is jsonrpc.Encoded:
            return response, response.raw
        raw = jsonrpc.dumps(response)
        if self.sealed and type(response) is dict:
            return jsonrpc.Encoded(response, raw), raw
        return response, raw

    def __repr__(self) -> str:
        return f"<Call {self.method} {self.name or ''} via {self.transport}>"


def build(
    paths: Sequence[str | Callable[..., Any]], core: CallNext, guard: Callable[[CallNext], CallNext]
) -> CallNext | None:
    """The chain of ``paths`` around ``core``, the first listed outermost (Django's order).

    ``guard`` wraps ``core`` and each middleware, as Django's ``convert_exception_to_response``
    does: an exception raised inside reaches the middleware around it as the response it stands for.
    A factory raising ``MiddlewareNotUsed`` is skipped; None when every one was (no chain to run).
    """
    handler: CallNext = guard(core)
    used = False
    for path in reversed(paths):
        factory = import_string(path) if isinstance(path, str) else path
        try:
            wrapped = _wrap(factory, handler)
        except MiddlewareNotUsed:
            continue
        handler, used = guard(wrapped), True
    return handler if used else None


def keeps_replies(paths: Sequence[str | Callable[..., Any]]) -> bool:
    """Whether every middleware of ``paths`` declares ``keeps_replies = True`` (a sealed chain, ``Call.encode``)."""
    return all(getattr(import_string(p) if isinstance(p, str) else p, "keeps_replies", False) for p in paths)


def _wrap(factory: Callable[..., Any], inner: CallNext) -> CallNext:
    """One middleware around ``inner``: as it is if async, else in a thread with a sync ``call_next``."""
    if is_async(factory):
        return factory(inner)  # type: ignore[no-any-return]
    instance = factory(async_to_sync(inner))
    # Not thread_sensitive: one shared thread would run every request's middleware (and the call it wraps) in turn.
    return sync_to_async(instance, thread_sensitive=False)


def is_async(factory: Callable[..., Any]) -> bool:
    """A class is async when its ``__call__`` is a coroutine function; a function factory when it says so
    with ``async_capable = True`` (Django's ``async_only_middleware`` decorator sets it), as in Django."""
    if isinstance(factory, type):
        return iscoroutinefunction(factory.__call__)
    return bool(getattr(factory, "async_capable", False))


__all__ = ["TRANSPORTS", "Call", "CallNext", "build", "is_async", "keeps_replies"]
