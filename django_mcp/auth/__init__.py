"""OAuth 2.1 for the MCP endpoint, by configuring django-oauth-toolkit (never re-implementing it).

``settings.py``::

    from django_mcp.auth import oauth2_provider_settings

    DJANGO_MCP = {"AUTH": "oauth", "SCOPES": {"books:read": "Read the catalogue"}}
    OAUTH2_PROVIDER = oauth2_provider_settings()      # your own keys as keyword arguments

``oauth2_provider_settings`` returns DOT's settings as MCP needs them; the
``django_mcp.E03x`` system checks flag any that a project later contradicts.
Nothing here imports django-oauth-toolkit until it is used.
"""

from __future__ import annotations

from typing import Any

# What MCP requires of django-oauth-toolkit. Each key is enforced by a check in auth/checks.py.
REQUIRED: dict[str, Any] = {
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,  # S256 only
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,  # never a token in the query string
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,  # RFC 9207 iss in authorization responses
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "DCR_ENABLED": True,
}

RECOMMENDED: dict[str, Any] = {
    **REQUIRED,
    "SCOPES_BACKEND_CLASS": "django_mcp.auth.scopes.MCPScopes",
    "OAUTH2_VALIDATOR_CLASS": "django_mcp.auth.validators.MCPOAuth2Validator",
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("django_mcp.auth.registration.MCPRegistrationPermission",),
    "CIMD_ENABLED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "client_credentials", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_basic", "client_secret_post"],
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],  # http: loopback only, enforced by the validator
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 24 * 3600,
    # RFC 9700 §4.14: store only a checksum of access and refresh tokens; the bearer string is shown once.
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    # The MCP endpoint checks audiences exactly (auth/audience.py); elsewhere DOT's prefix rule stays.
    "RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR": "django_mcp.auth.audience.validate_resource",
}


def oauth2_provider_settings(**overrides: Any) -> dict[str, Any]:
    """``OAUTH2_PROVIDER`` for an MCP site: the recommended values, then ``overrides``."""
    return {**RECOMMENDED, **overrides}


__all__ = ["RECOMMENDED", "REQUIRED", "oauth2_provider_settings"]
