"""DOT's request validator with the MCP rules it cannot express by settings alone."""

from __future__ import annotations

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator

from ..auth_clients import is_client_disabled
from .registration import redirect_uri_allowed


class MCPOAuth2Validator(OAuth2Validator):  # type: ignore[misc]  # DOT ships no type hints
    """``OAUTH2_PROVIDER["OAUTH2_VALIDATOR_CLASS"]`` for an MCP site.

    Redirect URIs must be https or loopback http, also for clients registered by
    hand or through a Client ID Metadata Document.
    PKCE (required, S256 only) is DOT's own: ``PKCE_REQUIRED`` and
    ``COMPLIANT_BCP_RFC9700_PKCE_METHOD``, both enforced by the system checks.
    """

    def validate_redirect_uri(self, client_id: str, redirect_uri: str, request: Any, *args: Any, **kwargs: Any) -> bool:
        if not redirect_uri_allowed(redirect_uri):
            return False
        return bool(super().validate_redirect_uri(client_id, redirect_uri, request, *args, **kwargs))

    def _load_application(self, client_id: str, request: Any) -> Any:
        """A client disabled in the admin does not exist for the authorization and token endpoints."""
        application = super()._load_application(client_id, request)
        if application is not None and is_client_disabled(application):
            request.client = None
            return None
        return application


__all__ = ["MCPOAuth2Validator"]
