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

from .jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, ProtocolError

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


def validate_request(method: str, revision: str, params: dict[str, Any] | None) -> None:
    """What ``mcp_types.methods.validate_client_request`` does, minus its per-call lookups (hot path)."""
    validator = _request_validator(method, revision)
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": 0, "method": method}
    if params is not None:
        frame["params"] = params
    try:
        validator.validate_python(frame, by_name=False)
    except ValidationError as exc:
        raise ProtocolError(INVALID_PARAMS, f"Invalid params for {method}", {"errors": _errors(exc)}) from None


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
