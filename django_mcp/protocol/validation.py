"""Validate incoming messages against the official wire types of their revision.

The per-revision method maps of ``mcp_types.methods`` are the version gate (a
method a revision lacks is "not found") and the shape check (wrong params are
-32602 with pydantic's field errors, trimmed to what a client can act on).
"""

from __future__ import annotations

from typing import Any

from mcp_types import methods
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from pydantic_core import to_json

from .jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, ProtocolError
from .versions import HANDSHAKE_REVISIONS

#: Methods any revision defines, for telling "removed in this revision" from "unknown".
KNOWN_REQUEST_METHODS = frozenset(m for m, _ in methods.CLIENT_REQUESTS)


def _errors(exc: ValidationError) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False)[:20]:
        loc = [p for p in err["loc"] if p not in ("jsonrpc", "id")]
        out.append({"loc": loc, "msg": err["msg"]})
    return out


#: ``(method, revision)`` -> the pydantic-core validator of that request's wire type.
_request_validators: dict[tuple[str, str], Any] = {}


def _request_validator(method: str, revision: str) -> Any:
    key = (method, revision)
    validator = _request_validators.get(key)
    if validator is None:
        if revision not in KNOWN_PROTOCOL_VERSIONS:
            raise ValueError(f"Unknown protocol revision {revision!r}")
        model = methods.CLIENT_REQUESTS.get(key)
        if model is None:
            raise ProtocolError(METHOD_NOT_FOUND, f"Method not found: {method}")
        validator = model.__pydantic_validator__
        _request_validators[key] = validator
    return validator


_HANDSHAKE = frozenset(HANDSHAKE_REVISIONS)
_PAGED = frozenset({"tools/list", "resources/list", "prompts/list", "resources/templates/list"})
_CALL_KEYS = frozenset({"name", "arguments"})
_PAGE_KEYS = frozenset({"cursor"})


def _plainly_valid(method: str, revision: str, params: dict[str, Any] | None) -> bool:
    """The everyday handshake-era shapes, valid in every such revision, recognised without building models.

    ``tools/call`` with just ``name`` (a string) and ``arguments`` (an object), a list with at most a
    string ``cursor``, a bare ``ping``. Anything else (``_meta``, ``task``, odd types) takes the full
    validator, so the verdict is always the wire type's.
    """
    if revision not in _HANDSHAKE:
        return False
    if method == "tools/call":
        if params is None or not params.keys() <= _CALL_KEYS or type(params.get("name")) is not str:
            return False
        arguments = params.get("arguments")
        return arguments is None or type(arguments) is dict
    if method in _PAGED or method == "ping":
        if not params:
            return True
        if method == "ping" or not params.keys() <= _PAGE_KEYS:
            return False
        cursor = params.get("cursor")
        return cursor is None or type(cursor) is str
    return False


_STATELESS_CALL_KEYS = frozenset({"name", "arguments", "_meta", "requestState"})
_STATELESS_PAGE_KEYS = frozenset({"_meta", "cursor"})
#: ``(method, revision, _meta as JSON)`` of requests that passed full validation. A 2026-07-28 client sends
#: the same ``_meta`` (version, clientInfo, clientCapabilities) on every request, and validating it is most
#: of the cost of validating the request.
_good_meta: set[tuple[str, str, bytes]] = set()
_MAX_GOOD_META = 1024
_MAX_META_BYTES = 4096


def _meta_key(method: str, revision: str, params: dict[str, Any] | None) -> tuple[str, str, bytes] | None:
    """The cache key of a stateless request whose members besides ``_meta`` are plainly valid, else None."""
    if revision in _HANDSHAKE or params is None:
        return None
    meta = params.get("_meta")
    if type(meta) is not dict or "progressToken" in meta:  # a per-request token would only churn the cache
        return None
    if method == "tools/call":
        if not params.keys() <= _STATELESS_CALL_KEYS or type(params.get("name")) is not str:
            return None
        arguments, state = params.get("arguments"), params.get("requestState")
        if not (arguments is None or type(arguments) is dict) or not (state is None or type(state) is str):
            return None
    elif method in _PAGED:
        if not params.keys() <= _STATELESS_PAGE_KEYS:
            return None
        cursor = params.get("cursor")
        if not (cursor is None or type(cursor) is str):
            return None
    else:
        return None
    return (method, revision, to_json(meta))


def validate_request(method: str, revision: str, params: dict[str, Any] | None) -> None:
    """What ``mcp_types.methods.validate_client_request`` does, minus its per-call lookups (hot path)."""
    if _plainly_valid(method, revision, params):
        return
    key = _meta_key(method, revision, params)
    if key is not None and key in _good_meta:
        return
    validator = _request_validator(method, revision)
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": 0, "method": method}
    if params is not None:
        frame["params"] = params
    try:
        validator.validate_python(frame, by_name=False)
    except ValidationError as exc:
        raise ProtocolError(INVALID_PARAMS, f"Invalid params for {method}", {"errors": _errors(exc)}) from None
    if key is not None and len(key[2]) <= _MAX_META_BYTES:
        if len(_good_meta) >= _MAX_GOOD_META:
            _good_meta.clear()
        _good_meta.add(key)


def validate_notification(method: str, revision: str, params: dict[str, Any] | None) -> bool:
    """True when the notification is known and valid; unknown or bad ones are ignored (no reply possible)."""
    try:
        methods.validate_client_notification(method, revision, params)
    except (KeyError, ValidationError):
        return False
    return True


def validate_client_result(method: str, revision: str, result: dict[str, Any]) -> None:
    """Check a client's answer to a server request (elicitation, sampling, roots)."""
    try:
        methods.validate_client_result(method, revision, result)
    except KeyError:
        return
    except ValidationError as exc:
        raise ProtocolError(INVALID_PARAMS, f"Invalid result for {method}", {"errors": _errors(exc)}) from None


def validate_server_result(method: str, revision: str, result: dict[str, Any]) -> None:
    """Development check that what we send is valid for the revision (raises ValidationError)."""
    try:
        methods.validate_server_result(method, revision, result)
    except KeyError:
        return
