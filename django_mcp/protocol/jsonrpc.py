"""JSON-RPC 2.0 envelopes: parsing, classification and construction.

Bodies are parsed once with ``pydantic_core`` (fast, strict UTF-8); the envelope
shape is checked by hand because it is on every request's hot path, while the
params of each method are validated against ``mcp-types`` in ``validation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pydantic_core
from mcp_types import jsonrpc as wire

PARSE_ERROR: Final = wire.PARSE_ERROR
INVALID_REQUEST: Final = wire.INVALID_REQUEST
METHOD_NOT_FOUND: Final = wire.METHOD_NOT_FOUND
INVALID_PARAMS: Final = wire.INVALID_PARAMS
INTERNAL_ERROR: Final = wire.INTERNAL_ERROR
HEADER_MISMATCH: Final = wire.HEADER_MISMATCH
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = wire.MISSING_REQUIRED_CLIENT_CAPABILITY
UNSUPPORTED_PROTOCOL_VERSION: Final = wire.UNSUPPORTED_PROTOCOL_VERSION
URL_ELICITATION_REQUIRED: Final = wire.URL_ELICITATION_REQUIRED
REQUEST_TIMEOUT: Final = wire.REQUEST_TIMEOUT
#: MCP's "resource not found" (2025-11-25 and earlier).
RESOURCE_NOT_FOUND: Final = -32002

RequestId = int | str


class ProtocolError(Exception):
    """An error that has a JSON-RPC code and goes on the wire as an error response."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


@dataclass(slots=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None
    #: The bytes it came in, when it came alone in a body (0: not known); the audit records it as its size.
    size: int = 0


@dataclass(slots=True)
class Notification:
    method: str
    params: dict[str, Any] | None


@dataclass(slots=True)
class Response:
    """A client's answer (result or error) to a request the server sent."""

    id: RequestId
    result: dict[str, Any] | None
    error: dict[str, Any] | None


Message = Request | Notification | Response


@dataclass(slots=True)
class Invalid:
    """A batch item that is not a valid message; answered with -32600 in place."""

    id: RequestId | None
    error: ProtocolError


def loads(body: bytes | str) -> Any:
    """Parse a JSON body; invalid JSON or invalid UTF-8 is a -32700 parse error.

    ``NaN`` and ``Infinity`` are not JSON (RFC 8259), whatever JavaScript's and Python's parsers accept:
    refused like any other non-JSON. A number too large for a float (``1e999``) is JSON: it becomes
    infinity, which the audit log stores as text.
    """
    try:
        return pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        raise ProtocolError(PARSE_ERROR, "Parse error: body is not valid JSON", str(exc)) from None


def check_batch(items: list[Any], limit: int) -> None:
    """Refuse a whole batch (-32600, nothing in it runs) when it holds more than ``limit`` messages.

    One request body must not buy an unbounded amount of work ahead of other callers;
    the error names the limit so a client can split its batch.
    """
    if not items:
        raise ProtocolError(INVALID_REQUEST, "Invalid request: empty batch")
    if len(items) > limit:
        raise ProtocolError(
            INVALID_REQUEST,
            f"Invalid request: a batch holds at most {limit} messages (MAX_BATCH_SIZE), this one has {len(items)}",
            {"limit": "MAX_BATCH_SIZE", "max": limit, "received": len(items)},
        )


class Encoded(dict[str, Any]):
    """A reply that carries its own JSON bytes, made once for the size cap, the audit and the transport.

    Only made where nothing can change the reply after it is serialized (``Call.encode``); ``dumps``
    then returns the bytes as they are.
    """

    __slots__ = ("raw",)

    def __init__(self, reply: dict[str, Any], raw: bytes) -> None:
        super().__init__(reply)
        self.raw = raw


def dumps(obj: Any) -> bytes:
    if type(obj) is Encoded:
        return obj.raw
    return pydantic_core.to_json(obj)


def _valid_id(value: Any) -> bool:
    # JSON-RPC allows null ids, MCP does not; booleans are not integers on the wire.
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def classify(obj: Any) -> Message:
    """Turn one decoded JSON value into a message, or raise -32600 for a bad envelope."""
    if not isinstance(obj, dict):
        raise ProtocolError(INVALID_REQUEST, "Invalid request: a JSON-RPC message must be an object")
    if obj.get("jsonrpc") != "2.0":
        raise ProtocolError(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
    has_id = "id" in obj
    if has_id and not _valid_id(obj["id"]):
        raise ProtocolError(INVALID_REQUEST, 'Invalid request: "id" must be a string or an integer')
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method:
            raise ProtocolError(INVALID_REQUEST, 'Invalid request: "method" must be a non-empty string')
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            raise ProtocolError(INVALID_REQUEST, 'Invalid request: "params" must be an object')
        if has_id:
            return Request(obj["id"], method, params)
        return Notification(method, params)
    if has_id and ("result" in obj) != ("error" in obj):
        result, error = obj.get("result"), obj.get("error")
        if result is not None and not isinstance(result, dict):
            raise ProtocolError(INVALID_REQUEST, 'Invalid response: "result" must be an object')
        if error is not None and not (isinstance(error, dict) and isinstance(error.get("code"), int)):
            raise ProtocolError(INVALID_REQUEST, 'Invalid response: "error" must have an integer "code"')
        return Response(obj["id"], result, error)
    raise ProtocolError(INVALID_REQUEST, "Invalid request: not a JSON-RPC request, notification or response")


def id_of(obj: Any) -> RequestId | None:
    """Best-effort id of a rejected message, for the error response."""
    if isinstance(obj, dict) and _valid_id(obj.get("id")):
        return obj["id"]  # type: ignore[no-any-return]
    return None


def result_message(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: RequestId | None, error: ProtocolError) -> dict[str, Any]:
    """An error response; without a known id the ``id`` member is omitted, never null (2025-11-25+)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "error": error.to_error()}
    if request_id is not None:
        msg["id"] = request_id
    return msg


def notification_message(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def request_message(request_id: RequestId, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg
