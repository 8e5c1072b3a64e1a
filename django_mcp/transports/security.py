"""Host and Origin validation for the MCP endpoints (DNS-rebinding protection).

``Host`` must match ``ALLOWED_HOSTS`` (Django's own rules, so a rebinding attack
with a foreign host name fails even on localhost). A browser ``Origin`` must be
the endpoint's own origin or one listed in ``DJANGO_MCP["ALLOWED_ORIGINS"]``.
"""

from __future__ import annotations

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


def _forget(*, setting: str, **kwargs: Any) -> None:
    if setting in ("ALLOWED_HOSTS", "DEBUG"):
        _verdicts.clear()


setting_changed.connect(_forget)
