"""2026-07-28 request headers: ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` checks.

Header values that cannot be plain ASCII travel as ``=?base64?<standard base64>?=``;
decoding is strict (canonical padding and alphabet) and a malformed value is a
header mismatch (-32020), like a missing or different one.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Any

from .jsonrpc import HEADER_MISMATCH, ProtocolError

_SENTINEL = re.compile(r"\A=\?base64\?(.*)\?=\Z", re.DOTALL)
#: The body field each method's ``Mcp-Name`` mirrors (SEP-2243; ``tasks/*`` from the tasks extension, SEP-2663).
NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def mismatch(message: str) -> ProtocolError:
    return ProtocolError(HEADER_MISMATCH, f"Header mismatch: {message}")


def decode_value(raw: str) -> str:
    """The value a header carries, after OWS trimming and sentinel Base64 decoding."""
    value = raw.strip(" \t")
    plain = value.isascii() and value.isprintable()  # the common case, without a loop over characters
    if not plain and any((ord(c) < 0x20 and c != "\t") or ord(c) > 0x7E for c in value):
        raise mismatch("header value contains invalid characters")
    if not value.startswith("=?"):
        return value
    m = _SENTINEL.match(value)
    if m is None:
        return value
    payload = m.group(1)
    try:
        decoded = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise mismatch("malformed base64 header value") from None
    if base64.b64encode(decoded).decode("ascii") != payload:
        raise mismatch("non-canonical base64 header value")
    try:
        return decoded.decode("utf-8")
    except UnicodeDecodeError:
        raise mismatch("base64 header value is not UTF-8") from None


def check_standard(method: str, params: dict[str, Any], header: Callable[[str], str | None]) -> None:
    """``Mcp-Method`` always, ``Mcp-Name`` for the three named methods (when the body names one)."""
    got = header("mcp-method")
    if got is None:
        raise mismatch("Mcp-Method header is required")
    if got.strip(" \t") != method:
        raise mismatch(f"Mcp-Method header value {got.strip()!r} does not match body value {method!r}")
    key = NAME_PARAM.get(method)
    if key is None or not isinstance(params.get(key), str):
        return
    raw = header("mcp-name")
    if raw is None:
        raise mismatch("Mcp-Name header is required")
    value = decode_value(raw)
    if value != params[key]:
        raise mismatch(f"Mcp-Name header value {value!r} does not match body value {params[key]!r}")


#: ``header_params`` per input schema, by identity (a tool's schema is built once and kept).
_params_of: dict[int, tuple[dict[str, Any], list[tuple[tuple[str, ...], str, str]]]] = {}


def schema_header_params(schema: dict[str, Any]) -> list[tuple[tuple[str, ...], str, str]]:
    """``header_params(schema)``, remembered for the schema object (checked on every ``tools/call``)."""
    hit = _params_of.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    found = header_params(schema)
    if len(_params_of) >= 4096:
        _params_of.clear()
    _params_of[id(schema)] = (schema, found)
    return found


def header_params(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str, str]]:
    """(path, header name, type) of every property marked ``x-mcp-header`` through plain ``properties``."""
    found: list[tuple[tuple[str, ...], str, str]] = []
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        header = prop.get("x-mcp-header")
        if isinstance(header, str):
            found.append(((*path, name), header, str(prop.get("type", "string"))))
        if prop.get("type") == "object":
            found.extend(header_params(prop, (*path, name)))
    return found


def _as_header_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def check_params(schema: dict[str, Any], arguments: dict[str, Any] | None, header: Callable[[str], str | None]) -> None:
    """Each ``Mcp-Param-{Name}`` must mirror its argument: present when the value is, equal after decoding."""
    for path, name, typ in schema_header_params(schema):
        value: Any = arguments or {}
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        raw = header(f"mcp-param-{name.lower()}")
        if value is None:
            if raw is not None:
                raise mismatch(f"Mcp-Param-{name} header sent without a value in the body")
            continue
        if raw is None:
            raise mismatch(f"Mcp-Param-{name} header is required")
        got = decode_value(raw)
        if typ == "integer" and not isinstance(value, bool):
            try:
                same = float(got) == float(value)
            except ValueError:
                same = False
        else:
            same = got == _as_header_text(value)
        if not same:
            raise mismatch(f"Mcp-Param-{name} header value {got!r} does not match body value {value!r}")
