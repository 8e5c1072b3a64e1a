"""Exact audience (RFC 8707 ``resource``) of a token presented at an MCP endpoint.

DOT's own resource validator matches by URL prefix, so a token issued for the
site root would be good for every path under it, ``/mcp/`` included. Here the
token must name this endpoint's canonical URI (what its RFC 9728 metadata calls
``resource``), or one of ``ACCEPTED_AUDIENCES``. Compared after normalising case
of scheme and host, default ports and a trailing slash, nothing more.

DOT's ``RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR`` is :func:`validate_resource`:
while the MCP bearer check runs it leaves the decision to :func:`audience_accepted`
(so an accepted audience on another host works), everywhere else in the project
(DOT-protected APIs) it is DOT's prefix rule unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from urllib.parse import urlsplit

from ..conf import mcp_settings


def normalise(uri: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname or parts.username is not None or parts.query or parts.fragment:
        return None
    scheme = parts.scheme.lower()
    if port == {"http": 80, "https": 443}.get(scheme):
        port = None
    return scheme, parts.hostname.lower(), port, parts.path.rstrip("/")


def canonical_uri(endpoint_url: str) -> str:
    """The endpoint's RFC 9728 ``resource``: DOT's ``OAUTH2_PROTECTED_RESOURCE_IDENTIFIER`` when set."""
    from oauth2_provider.settings import oauth2_settings  # reason: DOT loads only once OAuth is on

    return str(oauth2_settings.OAUTH2_PROTECTED_RESOURCE_IDENTIFIER or endpoint_url)


def audience_accepted(audiences: Iterable[str], endpoint_url: str) -> bool:
    """Whether one of the token's audiences is exactly this endpoint (or an accepted audience)."""
    wanted = {normalise(canonical_uri(endpoint_url))}
    wanted.update(normalise(u) for u in mcp_settings.ACCEPTED_AUDIENCES)
    wanted.discard(None)
    return any(normalise(a) in wanted for a in audiences if isinstance(a, str))


_in_mcp_check: ContextVar[bool] = ContextVar("django_mcp_audience", default=False)


@contextmanager
def mcp_audience_check() -> Iterator[None]:
    """Within this block DOT's resource validator defers to the MCP bearer check's exact rule."""
    marker = _in_mcp_check.set(True)
    try:
        yield
    finally:
        _in_mcp_check.reset(marker)


def validate_resource(request_uri: str, audiences: list[str]) -> bool:
    """``OAUTH2_PROVIDER["RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR"]``: see the module docstring."""
    if _in_mcp_check.get():
        return True
    # reason: needs DOT's models (OAuth on)
    from oauth2_provider.oauth2_validators import validate_resource_as_url_prefix

    return bool(validate_resource_as_url_prefix(request_uri, audiences))


__all__ = ["audience_accepted", "canonical_uri", "mcp_audience_check", "normalise", "validate_resource"]
