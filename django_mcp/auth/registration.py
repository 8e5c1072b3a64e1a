"""Who may register an OAuth client, and which redirect URIs an MCP client may use.

MCP hosts register themselves (RFC 7591) before any user is involved, so
anonymous registration is on by default (``ALLOW_ANONYMOUS_REGISTRATION``);
registering grants nothing until a user consents. A redirect URI must be
``https``, or ``http`` on a loopback host (RFC 8252 native clients); anything
else is refused at registration and again at authorization time.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from oauth2_provider.dcr import IsAuthenticatedDCRPermission

from ..conf import mcp_settings

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def redirect_uri_allowed(uri: Any) -> bool:
    """``https://host/...`` or ``http://<loopback>[:port]/...``; no fragment, no userinfo."""
    if not isinstance(uri, str) or "#" in uri:
        return False
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError:
        return False
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return False
    if parts.scheme == "https":
        return True
    return parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS


class MCPRegistrationPermission:
    """``DCR_REGISTRATION_PERMISSION_CLASSES`` entry: anonymous when allowed, else DOT's signed-in rule."""

    def has_permission(self, request: Any) -> bool:
        if mcp_settings.ALLOW_ANONYMOUS_REGISTRATION:
            return True
        return bool(IsAuthenticatedDCRPermission().has_permission(request))


__all__ = ["MCPRegistrationPermission", "redirect_uri_allowed"]
