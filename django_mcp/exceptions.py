"""Exceptions with a wire meaning, and the one function that maps any exception to the wire.

``MCPError`` and subclasses become JSON-RPC errors (their ``code`` is a class
attribute, as in DRF). ``Refused`` is the one refusal: an ``MCPError`` that also
carries the HTTP ``status`` and ``headers()`` a transport answers with when it
refuses a request before (or instead of) running it. ``to_wire`` turns any
exception into that answer, for every transport. ``ToolError`` becomes an
``isError`` tool result that the model can read and act on. Anything else raised
by user code becomes an ``isError`` result with a generic message: no traceback
ever reaches a client.
"""

from __future__ import annotations

import functools
import inspect
import logging
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import InterfaceError, OperationalError, ProgrammingError

from .conf import mcp_settings
from .protocol import jsonrpc

logger = logging.getLogger("django_mcp")

Headers = list[tuple[bytes, bytes]]


class MCPError(jsonrpc.ProtocolError):
    """A JSON-RPC error response. Subclass and set ``code``/``default_message``."""

    code: int = jsonrpc.INTERNAL_ERROR
    default_message = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None, *, code: int | None = None) -> None:
        super().__init__(code if code is not None else type(self).code, message or self.default_message, data)


class Refused(MCPError):
    """A refusal: its JSON-RPC error, and the HTTP status and headers where the transport has them.

    Subclass and set ``code``, ``status`` and ``default_message`` (override ``headers()`` for
    headers that depend on the instance), or pass them to one instance. Raise it from a
    middleware, or let the door raise its own: each transport answers it through ``to_wire``;
    stdio, which has no statuses, writes the JSON-RPC error alone. Raised inside a handler it
    is the JSON-RPC error of that request, as any ``MCPError`` (the response has begun).
    """

    code = jsonrpc.INVALID_REQUEST
    default_message = "Forbidden"
    status = 403

    def __init__(
        self,
        message: str | None = None,
        data: Any = None,
        *,
        code: int | None = None,
        status: int | None = None,
        headers: Headers | None = None,
        request_id: Any = None,
    ) -> None:
        super().__init__(message, data, code=code)
        if status is not None:
            self.status = status
        self._headers: Headers = headers or []
        #: The id of the request refused, when known where it is raised (``to_wire`` puts it in the error).
        self.request_id = request_id

    def headers(self) -> Headers:
        """Headers the HTTP answer carries (``Retry-After``, ``WWW-Authenticate``, ``Allow``...)."""
        return self._headers

    @classmethod
    def of(cls, error: jsonrpc.ProtocolError, request_id: Any = None) -> Refused:
        """A protocol error found before the request ran (a bad envelope, header or body), as a refusal.

        Its status follows its code (``status_of``): the 2026-07-28 rule, which the handshake era shares.
        """
        return cls(error.message, error.data, code=error.code, status=status_of(error.code), request_id=request_id)


class BadRequest(Refused):
    status = 400
    default_message = "Bad Request"


class SessionNotFound(Refused):
    status = 404
    default_message = "Session not found"


class MethodNotAllowed(Refused):
    status = 405
    default_message = "Method Not Allowed"


class NotAcceptable(Refused):
    status = 406
    default_message = "Not Acceptable"


class PayloadTooLarge(Refused):
    status = 413
    default_message = "Request body too large"


class UnsupportedMediaType(Refused):
    status = 415
    default_message = "Unsupported Media Type: Content-Type must be application/json"


class RateLimited(Refused):
    """A caller over one of its limits (``django_mcp.limits.middleware``): 429 with ``Retry-After``.

    ``limit`` names which (``"user"``, ``"tool"``, ``"tasks.active.user"``...); stdio, which has no
    statuses, writes the JSON-RPC error alone, whose data carries the same delay.
    """

    code = -32029
    default_message = "Rate limit exceeded"
    status = 429
    reason = "rate_limited"

    def __init__(self, limit: str, retry_after: int, message: str | None = None) -> None:
        self.limit, self.retry_after = limit, max(1, int(retry_after))
        data = {"reason": self.reason, "retryable": True, "retryAfter": self.retry_after, "limit": limit}
        super().__init__(message or f"Rate limit exceeded ({limit}): retry after {self.retry_after} s", data)

    def headers(self) -> Headers:
        return [(b"retry-after", str(self.retry_after).encode())]


class Unavailable(Refused):
    """Retry later: the database, the channel layer or the event store is gone, or a pool is full.

    The server's trouble, not the request's: HTTP 503 with ``Retry-After`` before a response
    starts; inside a request (a tool call, a read, a middleware) the JSON-RPC error that says so.
    """

    code = jsonrpc.INTERNAL_ERROR
    default_message = "Service unavailable, retry shortly"
    status = 503
    reason = "unavailable"

    def __init__(self, message: str | None = None, retry_after: int | None = None) -> None:
        self.retry_after = int(retry_after if retry_after is not None else mcp_settings.UNAVAILABLE_RETRY_AFTER)
        super().__init__(message, {"reason": self.reason, "retryable": True, "retryAfter": self.retry_after})

    def headers(self) -> Headers:
        return [(b"retry-after", str(self.retry_after).encode())]


class DatabaseUnavailable(Unavailable):
    default_message = "Service unavailable: the database cannot be reached, retry shortly"
    reason = "database_unavailable"


class DatabaseNotMigrated(DatabaseUnavailable):
    """A table or column the code queries does not exist: ``migrate`` has not run, or not all of it.

    Still 503 (the server cannot serve), but retrying will not help until an operator migrates: no
    ``Retry-After``, ``retryable`` false. The missing table is logged, never told to the client.
    """

    default_message = "Service unavailable: the database is not migrated (run manage.py migrate)"
    reason = "database_not_migrated"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message)
        self.data = {"reason": self.reason, "retryable": False}

    def headers(self) -> Headers:
        return []


class BackendUnavailable(Unavailable):
    """The channel layer or the event store (Redis) is down, or its connection pool is exhausted."""

    default_message = "Service unavailable: a backend cannot be reached, retry shortly"
    reason = "backend_unavailable"


class Busy(Unavailable):
    """Every sync worker stayed busy for ``SYNC_QUEUE_TIMEOUT`` seconds."""

    default_message = "Service busy: no worker thread became free in time, retry shortly"
    reason = "busy"


class InvalidParams(MCPError):
    code = jsonrpc.INVALID_PARAMS
    default_message = "Invalid params"


class MethodNotFound(MCPError):
    code = jsonrpc.METHOD_NOT_FOUND
    default_message = "Method not found"


class ResourceNotFound(MCPError):
    code = jsonrpc.RESOURCE_NOT_FOUND
    default_message = "Resource not found"

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}", {"uri": uri})


class ToolError(Exception):
    """Raise from a tool to return an ``isError`` result with this message."""


class RequestCancelled(Exception):
    """Raised inside a handler whose request the client cancelled."""


class InputRequired(Exception):
    """Raised by ``Exchange.ask`` in the stateless era: the client must answer and retry.

    ``requests`` maps each unanswered question's key to its ``{method, params}``;
    ``Context.gather`` merges several into one ``input_required`` result.
    """

    def __init__(self, key: str, method: str, params: dict[str, Any], answers: dict[str, Any]) -> None:
        super().__init__(method)
        self.key, self.method, self.params, self.answers = key, method, params, answers
        self.requests: dict[str, dict[str, Any]] = {key: {"method": method, "params": params}}

    def merge(self, other: InputRequired) -> InputRequired:
        self.requests.update(other.requests)
        self.answers = {**self.answers, **other.answers}
        return self


class BeginTask(Exception):
    """Raised by ``Context.begin_task()`` when the call is to become a task: the run moves to a worker.

    ``answers`` are what the client answered so far; the worker's run of the tool
    receives them, so it does not ask again.
    """

    def __init__(self, answers: dict[str, Any]) -> None:
        super().__init__("begin_task")
        self.answers = answers


#: What each backend says for a missing table or column: SQLite's message, PostgreSQL's SQLSTATE
#: (undefined_table, undefined_column), MySQL's error numbers (ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR).
_SQLITE_MISSING = ("no such table:", "no such column:")
_PG_MISSING = frozenset({"42P01", "42703"})
_MYSQL_MISSING = frozenset({1146, 1054})
#: The missing tables already logged by this process (bounded): one clear line each, not one per request.
_logged_missing: set[str] = set()


def schema_missing(exc: BaseException) -> bool:
    """Whether ``exc`` is the database saying a table or column does not exist (migrations not applied)."""
    if not isinstance(exc, (OperationalError, ProgrammingError)):
        return False
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) in _PG_MISSING or getattr(cause, "pgcode", None) in _PG_MISSING:
        return True
    args = getattr(cause, "args", None) or exc.args
    if args and isinstance(args[0], int) and args[0] in _MYSQL_MISSING:
        return True
    return str(exc).startswith(_SQLITE_MISSING)


def database_error(exc: BaseException) -> DatabaseUnavailable | None:
    """``DatabaseUnavailable`` for an exception that means the database cannot serve now, else None.

    ``OperationalError`` (connection refused or lost, server shutting down, lock or
    statement timeouts) and ``InterfaceError`` (a connection already closed) are
    transient by nature; integrity or programming errors are bugs and stay what they are,
    except a missing table or column: ``DatabaseNotMigrated``.
    """
    if isinstance(exc, DatabaseUnavailable):
        return exc
    if schema_missing(exc):
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        if detail not in _logged_missing and len(_logged_missing) < 100:
            _logged_missing.add(detail)
            logger.error("Database not migrated (%s): run manage.py migrate", detail)
        return DatabaseNotMigrated()
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("Database unavailable: %s: %s", type(exc).__name__, str(exc).strip()[:200])
        return DatabaseUnavailable()
    return None


def unavailable(exc: BaseException) -> Unavailable | None:
    """The ``Unavailable`` an exception stands for (itself, or a lost database), else None."""
    if isinstance(exc, Unavailable):
        return exc
    return database_error(exc)


# -- the wire -------------------------------------------------------------------------------------
#: The HTTP status of each JSON-RPC error a request can be refused with before it runs (the
#: 2026-07-28 rule: its errors are statuses too). Other codes: 400 for a refusal, 200 in a response.
STATUS = {
    jsonrpc.INVALID_PARAMS: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.HEADER_MISMATCH: 400,
    jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    jsonrpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
}


def status_of(code: int) -> int:
    """The HTTP status of a request refused with JSON-RPC error ``code`` before it ran."""
    return STATUS.get(code, 400)


def response_status(response: dict[str, Any]) -> int:
    """The HTTP status of a 2026-07-28 response: an error the table knows is a status too, else 200."""
    err = response.get("error")
    return STATUS.get(err["code"], 200) if err else 200


class Wire(NamedTuple):
    """What a transport sends for an exception: HTTP status and headers (HTTP only), and the JSON-RPC error."""

    status: int
    headers: Headers
    message: dict[str, Any]


def to_wire(exc: BaseException, request_id: Any = None) -> Wire:
    """Any exception as the answer a transport gives: the one mapping every transport uses.

    A ``Refused`` (the door's refusals, a middleware's, an auth challenge, an unavailable
    backend) answers with its own status, headers and error; ``request_id`` fills in an id the
    refusal was raised without. Another ``MCPError`` keeps its error, with the status its code
    has (500 for one the table does not know). A lost database is ``DatabaseUnavailable`` (503); anything
    else is a logged bug: 500 and a generic JSON-RPC error, no detail for the client.
    """
    if isinstance(exc, jsonrpc.ProtocolError) and not isinstance(exc, Refused):  # an error meant for the client
        return Wire(STATUS.get(exc.code, 500), [], jsonrpc.error_message(request_id, exc))
    if not isinstance(exc, Refused):
        lost = database_error(exc)
        if lost is None:
            logger.exception("MCP endpoint failed", exc_info=exc)
            error = jsonrpc.ProtocolError(jsonrpc.INTERNAL_ERROR, "Internal error")
            return Wire(500, [], jsonrpc.error_message(request_id, error))
        exc = lost
    elif isinstance(exc, Unavailable) and not isinstance(exc, DatabaseNotMigrated):  # that one is logged where found
        logger.warning("MCP endpoint: %s", exc)
    rid = exc.request_id if exc.request_id is not None else request_id
    return Wire(exc.status, exc.headers(), jsonrpc.error_message(rid, exc))


def exception_handler(
    exc: BaseException, context: Mapping[str, Any] | None = None, *, tool: str | None = None
) -> dict[str, Any] | None:
    """Map an exception raised by a tool to a tool result, or None to re-raise it.

    ``context`` describes the call, as DRF's exception handler context does:
    ``tool`` (its name), ``user``, ``session_id``, ``request_id``, ``client_id``,
    ``revision``, ``arguments``, ``server`` and ``ctx`` (the ``Context``). Swap
    this function with the ``EXCEPTION_HANDLER`` setting (same signature). The
    ``tool=`` keyword is the deprecated form of ``context["tool"]``.
    """
    if tool is not None:
        warnings.warn(
            "exception_handler(exc, tool=...) is deprecated: pass the context dict, "
            "exception_handler(exc, {'tool': ...})",
            DeprecationWarning,
            stacklevel=2,
        )
    else:
        tool = (context or {}).get("tool")
    if isinstance(exc, jsonrpc.ProtocolError):
        return None
    if isinstance(exc, ToolError):
        message = str(exc) or "Tool failed"
    else:
        if isinstance(exc, PermissionDenied):
            message = str(exc) or "Permission denied"
        elif isinstance(exc, ValidationError):
            message = "; ".join(exc.messages)
        else:
            logger.exception("Tool %r raised", tool)
            message = f"Tool {tool!r} failed with an internal error ({type(exc).__name__})"
    return {"content": [{"type": "text", "text": message}], "isError": True}


ExceptionHandler = Callable[..., "dict[str, Any] | None"]


def _detect_legacy(handler: ExceptionHandler) -> bool:
    """Whether ``handler`` is the old ``handler(exc, *, tool)``: it takes no second positional argument."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):  # no signature to read: assume the current form
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    warnings.warn(
        f"EXCEPTION_HANDLER {getattr(handler, '__qualname__', handler)!r} takes (exc, *, tool): "
        "it is called that way for now, but the signature is deprecated. "
        "Accept (exc, context); the tool's name is context['tool'].",
        DeprecationWarning,
        stacklevel=3,
    )
    return True


_legacy_cached = functools.lru_cache(maxsize=32)(_detect_legacy)


def is_legacy_handler(handler: ExceptionHandler) -> bool:
    """``_detect_legacy``, read once per handler (the warning is given once)."""
    try:
        return _legacy_cached(handler)
    except TypeError:  # an unhashable callable: read it every time
        return _detect_legacy(handler)


def handle_exception(
    handler: ExceptionHandler, exc: BaseException, context: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Call the ``EXCEPTION_HANDLER``: ``handler(exc, context)``, or ``handler(exc, tool=...)`` for an old one."""
    if is_legacy_handler(handler):
        return handler(exc, tool=context.get("tool"))
    return handler(exc, context)
