"""Host and Origin validation (DNS-rebinding protection) and the loopback rule of development mode.

``Host`` must match ``ALLOWED_HOSTS`` (Django's own rules, so a rebinding attack
with a foreign host name fails even on localhost). A browser ``Origin`` must be
the endpoint's own origin or one listed in ``DJANGO_MCP["ALLOWED_ORIGINS"]``.
"""

from __future__ import annotations

import functools
from ipaddress import ip_address
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed
from django.http.request import split_domain_port, validate_host

from ..conf import mcp_settings

#: Verdicts per ``Host`` value: every request asks, and clients send the same few hosts.
_verdicts: dict[str, bool] = {}
_MAX_VERDICTS = 1024


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def host_allowed(host: str) -> bool:
    verdict = _verdicts.get(host)
    if verdict is None:
        domain, _port = split_domain_port(host)
        verdict = bool(domain) and validate_host(domain, _allowed_hosts())
        if len(_verdicts) < _MAX_VERDICTS:  # a flood of made-up hosts is judged, not remembered
            _verdicts[host] = verdict
    return verdict


def origin_allowed(origin: str, host: str) -> bool:
    if origin in mcp_settings.ALLOWED_ORIGINS or "*" in mcp_settings.ALLOWED_ORIGINS:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    # Same-origin requests: the Origin's host[:port] is the Host we were reached at.
    return parts.netloc.lower() == host.lower()


_LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})
_FORWARDING_HEADERS = frozenset({b"forwarded", b"x-forwarded-for", b"x-real-ip"})


def is_loopback(host: object) -> bool:
    """Whether ``host`` (an address from an ASGI scope) is this machine's loopback interface."""
    if not isinstance(host, str) or not host:
        return False
    return _loopback(host)


@functools.lru_cache(maxsize=1024)
def _loopback(host: str) -> bool:
    """Cached: parsing an address with ``ipaddress`` cost about 10 µs, twice per development-mode request."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def unauthenticated_refusal(scope: dict[str, Any], headers: dict[bytes, bytes]) -> str | None:
    """Why a request may not use development mode (``AUTH = "none"``), or None when it may.

    Without authentication the endpoint answers only on loopback: the address the
    connection arrived at (``scope["server"]``) and the peer (``scope["client"]``)
    must both be loopback, and a request relayed by a proxy or a tunnel (it carries
    ``Forwarded``/``X-Forwarded-For``) is refused too, since its real client is
    elsewhere. A scope without addresses comes from an in-process test client. ``headers``: the
    request's headers by lower-case name (one set lookup, not a scan of the scope's list).
    """
    if mcp_settings.AUTH != "none":
        return None
    server, client = scope.get("server"), scope.get("client")
    if server is not None and not is_loopback(server[0] if server else None):
        return "Forbidden: AUTH 'none' (development mode) serves loopback only; set DJANGO_MCP['AUTH'] = 'oauth'"
    if client is not None and not is_loopback(client[0] if client else None):
        return "Forbidden: AUTH 'none' (development mode) answers loopback clients only"
    if not _FORWARDING_HEADERS.isdisjoint(headers):
        return "Forbidden: AUTH 'none' (development mode) refuses proxied requests; set DJANGO_MCP['AUTH'] = 'oauth'"
    return None


def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting in ("ALLOWED_HOSTS", "DEBUG"):
        _verdicts.clear()


setting_changed.connect(_forget)
