"""Exceptions with a wire meaning, and the one function that maps any exception to the wire.

``MCPError`` and subclasses become JSON-RPC errors (their ``code`` is a class
attribute, as in DRF). ``ToolError`` becomes an ``isError`` tool result that the
model can read and act on. Anything else raised by user code becomes an
``isError`` result with a generic message: no traceback ever reaches a client.
"""

from __future__ import annotations

import logging
from typing import Any

from .protocol import jsonrpc

logger = logging.getLogger("django_mcp")


class MCPError(jsonrpc.ProtocolError):
    """A JSON-RPC error response. Subclass and set ``code``/``default_message``."""

    code: int = jsonrpc.INTERNAL_ERROR
    default_message = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None, *, code: int | None = None) -> None:
        super().__init__(code if code is not None else type(self).code, message or self.default_message, data)


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


def exception_handler(exc: BaseException, *, tool: str | None = None) -> dict[str, Any] | None:
    """Map an exception raised by a tool to a tool result, or None to re-raise it.

    Swap it with the ``EXCEPTION_HANDLER`` setting (same signature).
    """
    if isinstance(exc, jsonrpc.ProtocolError):
        return None
    if isinstance(exc, ToolError):
        message = str(exc) or "Tool failed"
    else:
        from django.core.exceptions import PermissionDenied, ValidationError

        if isinstance(exc, PermissionDenied):
            message = str(exc) or "Permission denied"
        elif isinstance(exc, ValidationError):
            message = "; ".join(exc.messages)
        else:
            logger.exception("Tool %r raised", tool)
            message = f"Tool {tool!r} failed with an internal error ({type(exc).__name__})"
    return {"content": [{"type": "text", "text": message}], "isError": True}
