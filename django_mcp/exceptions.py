"""Exceptions with a wire meaning, and the one function that maps any exception to the wire.

``MCPError`` and subclasses become JSON-RPC errors (their ``code`` is a class
attribute, as in DRF). ``ToolError`` becomes an ``isError`` tool result that the
model can read and act on. Anything else raised by user code becomes an
``isError`` result with a generic message: no traceback ever reaches a client.
"""

from __future__ import annotations

import functools
import inspect
import logging
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError

from .protocol import jsonrpc

logger = logging.getLogger("django_mcp")


class MCPError(jsonrpc.ProtocolError):
    """A JSON-RPC error response. Subclass and set ``code``/``default_message``."""

    code: int = jsonrpc.INTERNAL_ERROR
    default_message = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None, *, code: int | None = None) -> None:
        super().__init__(code if code is not None else type(self).code, message or self.default_message, data)


class Refused(MCPError):
    """A refusal with an HTTP status (and headers) where the transport has one; the JSON-RPC error elsewhere.

    Raise it (or a subclass) from a middleware: the door answers it as it answers its own refusals.
    """

    code = jsonrpc.INVALID_REQUEST
    default_message = "Forbidden"
    status = 403

    def headers(self) -> list[tuple[bytes, bytes]]:
        return []


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

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(b"retry-after", str(self.retry_after).encode())]


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
