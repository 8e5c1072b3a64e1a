"""Host and Origin validation for the MCP endpoints (DNS-rebinding protection).

``Host`` must match ``ALLOWED_HOSTS`` (Django's own rules, so a rebinding attack
with a foreign host name fails even on localhost). A browser ``Origin`` must be
the endpoint's own origin or one listed in ``DJANGO_MCP["ALLOWED_ORIGINS"]``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from ..conf import mcp_settings


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def host_allowed(host: str) -> bool:
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, _allowed_hosts())


def origin_allowed(origin: str, host: str) -> bool:
    if origin in mcp_settings.ALLOWED_ORIGINS or "*" in mcp_settings.ALLOWED_ORIGINS:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    # Same-origin requests: the Origin's host[:port] is the Host we were reached at.
    return parts.netloc.lower() == host.lower()
