"""Who may register an OAuth client, and which redirect URIs an MCP client may use.

MCP hosts register themselves (RFC 7591) before any user is involved, so
anonymous registration is on by default (``ALLOW_ANONYMOUS_REGISTRATION``);
registering grants nothing until a user consents. That is why open registration
creates authorization-code clients only: a ``client_credentials`` client gets
tokens nobody approved, so it needs staff (the admin, ``manage.py mcp_client``)
or an RFC 7591 initial access token staff issued. A redirect URI must be
``https``, or ``http`` on a loopback host (RFC 8252 native clients); anything
else is refused at registration, at update (RFC 7592) and again at authorization time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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


#: What anyone may register: a client that acts only for a user who consents.
OPEN_GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
#: What a registration with an initial access token may add.
TRUSTED_GRANT_TYPES = OPEN_GRANT_TYPES | {"client_credentials"}
#: RFC 7591 §2 client metadata; anything else counts against ``REGISTRATION_MAX_EXTRA_METADATA``.
KNOWN_METADATA = frozenset(
    {
        "redirect_uris",
        "token_endpoint_auth_method",
        "grant_types",
        "response_types",
        "client_name",
        "client_uri",
        "logo_uri",
        "scope",
        "contacts",
        "tos_uri",
        "policy_uri",
        "jwks_uri",
        "jwks",
        "software_id",
        "software_version",
        "software_statement",
    }
)


@dataclass(frozen=True)
class Refusal:
    """Why registration metadata is refused: an RFC 7591 §3.2.2 error and its HTTP status."""

    status: int
    error: str
    description: str

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


def check_metadata(data: dict[str, Any], grant_types_allowed: frozenset[str]) -> Refusal | None:
    """The MCP rules for registration and update metadata (DOT then checks the rest).

    ``grant_types_allowed`` is ``OPEN_GRANT_TYPES`` for open registration (and for updating a
    client registered that way), more only for a registration staff authorised.
    """
    grants = data.get("grant_types", ["authorization_code"])
    if isinstance(grants, list) and all(isinstance(g, str) for g in grants):
        extra = sorted(set(grants) - grant_types_allowed)
        if extra:
            how = (
                "open registration creates authorization-code clients only; a client_credentials client is "
                "created by staff or registered with an initial access token"
                if grant_types_allowed == OPEN_GRANT_TYPES
                else f"allowed here: {', '.join(sorted(grant_types_allowed))}"
            )
            return Refusal(400, "invalid_client_metadata", f"grant_types {extra} refused: {how}")
    responses = data.get("response_types", ["code"])
    if not isinstance(responses, list) or any(r != "code" for r in responses):
        return Refusal(400, "invalid_client_metadata", "response_types may only contain 'code'")
    uris = data.get("redirect_uris")
    if isinstance(uris, list):
        if len(uris) > mcp_settings.REGISTRATION_MAX_REDIRECT_URIS:
            return Refusal(
                400,
                "invalid_redirect_uri",
                f"At most {mcp_settings.REGISTRATION_MAX_REDIRECT_URIS} redirect URIs per client",
            )
        longest = mcp_settings.REGISTRATION_MAX_URI_LENGTH
        if any(isinstance(u, str) and len(u) > longest for u in uris):
            return Refusal(400, "invalid_redirect_uri", f"A redirect URI may have at most {longest} characters")
        bad = [u for u in uris if not redirect_uri_allowed(u)]
        if bad:
            return Refusal(
                400,
                "invalid_redirect_uri",
                "Redirect URIs must use https, or http on a loopback address "
                f"(127.0.0.1, [::1], localhost): {str(bad[0])[:200]!r} does not",
            )
    unknown = {k: v for k, v in data.items() if k not in KNOWN_METADATA}
    if unknown and len(json.dumps(unknown)) > mcp_settings.REGISTRATION_MAX_EXTRA_METADATA:
        return Refusal(
            400,
            "invalid_client_metadata",
            f"Metadata RFC 7591 does not define may take at most {mcp_settings.REGISTRATION_MAX_EXTRA_METADATA} bytes",
        )
    return None


class MCPRegistrationPermission:
    """``DCR_REGISTRATION_PERMISSION_CLASSES`` entry: an initial access token, anonymous when allowed,
    else DOT's signed-in rule. The grant-type rule applies in every case but the first."""

    def has_permission(self, request: Any) -> bool:
        if getattr(request, "mcp_initial_token", None) is not None:
            return True
        if mcp_settings.ALLOW_ANONYMOUS_REGISTRATION:
            return True
        return bool(IsAuthenticatedDCRPermission().has_permission(request))


__all__ = [
    "OPEN_GRANT_TYPES",
    "TRUSTED_GRANT_TYPES",
    "MCPRegistrationPermission",
    "Refusal",
    "check_metadata",
    "redirect_uri_allowed",
]
