"""The project's token authentication (its REST API uses it too) and how its tokens map to MCP scopes."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed

from .models import ApiToken

#: The prefix of this project's keys: other bearer tokens (OAuth, DRF's authtoken) are not its business.
PREFIX = "pat_"


class ApiTokenAuthentication(BaseAuthentication):  # type: ignore[misc]
    """``Authorization: Bearer pat_...``; expiry and allowed addresses are the token's own rules.

    Like many projects' authenticators it does not look at ``user.is_active`` itself.
    """

    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() != b"bearer" or not parts[1].startswith(PREFIX.encode()):
            return None
        if parts[1].startswith(b"pat_blocked"):  # a policy refusal in Django's words
            raise PermissionDenied("Blocked by the API policy.")
        if parts[1].startswith(b"pat_noisy"):  # a long message, not in ASCII, with a header-breaking quote
            raise AuthenticationFailed('Cl\u00e9 "refus\u00e9e"\r\nX-Injected: 1 ' + "x" * 500)
        token = ApiToken.objects.select_related("user").filter(key=parts[1].decode("latin-1")).first()
        if token is None:
            raise AuthenticationFailed("Unknown API token.")
        if token.expires is not None and token.expires <= timezone.now():
            raise AuthenticationFailed("API token expired.")
        if token.allowed_ips and request.META.get("REMOTE_ADDR") not in token.allowed_ips.split():
            raise AuthenticationFailed("API token not allowed from this address.")
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return "Bearer"


def token_scopes(user: Any, auth: Any) -> set[str] | None:
    """A read-only project token gets the read scopes only; every other token all of the site's."""
    if isinstance(auth, ApiToken) and not auth.write_enabled:
        return {"mcp", "notes:read"}
    return None
