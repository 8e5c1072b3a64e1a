"""HTTP request guards every Streamable HTTP front end applies, written once: origin, auth, types, size.

Not the system checks (``django_mcp.checks``, ``django_mcp.auth.checks``): these run on each request.

The Channels consumer (``transports.http.MCPConsumer``) and the plain Django view
(``django_mcp.transports.wsgi.mcp_view``, WSGI mode) call these with what they were given:
an ASGI-shaped ``scope`` (the view builds one from its ``HttpRequest``) and the
request headers as lower-case ``bytes`` names. Each raises a ``Refused`` (the auth
``Challenge`` is one) that both front ends answer through ``exceptions.to_wire``.
"""

from __future__ import annotations

from typing import Any

from ..auth.bearer import authenticate_scope
from ..conf import mcp_settings
from ..exceptions import MethodNotAllowed, NotAcceptable, PayloadTooLarge, Refused, UnsupportedMediaType
from .base import JSON_CT, SSE_CT
from .security import host_allowed, origin_allowed, unauthenticated_refusal

#: What a POST must be sent as.
JSON_TYPE = "application/json"


def header(headers: dict[bytes, bytes], name: bytes) -> str | None:
    value = headers.get(name)
    return None if value is None else value.decode("latin-1")


def check_origin(scope: dict[str, Any], headers: dict[bytes, bytes]) -> None:
    """Development mode's loopback rule, then ``Host`` and ``Origin`` (DNS rebinding): 403."""
    if (refusal := unauthenticated_refusal(scope, headers)) is not None:
        raise Refused(refusal)
    host = header(headers, b"host") or ""
    if not host_allowed(host):
        raise Refused("Forbidden: Host not allowed")
    origin = header(headers, b"origin")
    if origin is not None and not origin_allowed(origin, host):
        raise Refused("Forbidden: Origin not allowed")


async def authenticate(scope: dict[str, Any], headers: dict[bytes, bytes]) -> None:
    """With ``AUTH = "oauth"``: a valid bearer token (recorded in ``scope``) or a 401/403 ``Challenge``."""
    if mcp_settings.AUTH == "oauth":
        await authenticate_scope(scope, headers)


def accepts(headers: dict[bytes, bytes], *types: bytes) -> bool:
    """Whether ``Accept`` lists every one of ``types`` (or ``*/*``)."""
    accept = headers.get(b"accept", b"").lower()
    if not accept:
        return False
    if b"*/*" in accept:
        return True
    return all(t in accept for t in types)


def check_post(headers: dict[bytes, bytes]) -> None:
    """A POST's ``Content-Type`` (415), ``Accept`` (406) and declared ``Content-Length`` (413)."""
    ctype = (header(headers, b"content-type") or "").split(";")[0].strip().lower()
    if ctype != JSON_TYPE:
        raise UnsupportedMediaType()
    if not accepts(headers, JSON_CT, SSE_CT):
        raise NotAcceptable("Not Acceptable: Accept must include application/json and text/event-stream")
    declared = headers.get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > mcp_settings.MAX_BODY_SIZE:
        raise too_large()


def too_large() -> PayloadTooLarge:
    return PayloadTooLarge(f"Request body larger than {mcp_settings.MAX_BODY_SIZE} bytes")


def method_not_allowed(method: str, allow: bytes = b"GET, POST, DELETE") -> MethodNotAllowed:
    return MethodNotAllowed(f"Method {method} not allowed", headers=[(b"allow", allow)])


__all__ = [
    "accepts",
    "authenticate",
    "check_origin",
    "check_post",
    "header",
    "method_not_allowed",
    "too_large",
]
