"""``path("", include("django_mcp.urls"))``: discovery and the OAuth side of an MCP site.

Mounted at the site root, it serves the Server Card (``<ENDPOINT>server-card``) and the AI
Catalog (``/.well-known/ai-catalog.json``, see ``django_mcp.discovery``) and, when
django-oauth-toolkit is installed (in DOT's ``oauth2_provider`` namespace, so DOT's own views
find each other):

- ``/.well-known/oauth-protected-resource`` and ``/.well-known/oauth-protected-resource/<endpoint>``
  (RFC 9728, pointing at this site as the authorization server);
- ``/.well-known/oauth-authorization-server`` (RFC 8414) and, when OIDC is on,
  ``/.well-known/openid-configuration``;
- ``/oauth/authorize/``, ``/oauth/token/``, ``/oauth/revoke_token/``, ``/oauth/introspect/``,
  ``/oauth/register/`` (RFC 7591/7592) from django-oauth-toolkit.

Include it instead of ``oauth2_provider.urls`` (one namespace, one set of endpoints).
The MCP endpoint itself is routed by ``django_mcp.asgi``.

Under a prefix (a project that mounts apps only below one): ``path("plugins/mcp/", include("django_mcp.urls"))``
with ``URL_PREFIX = ENDPOINT = "/plugins/mcp/"``; every path above is then below the prefix, and the
authorization-server metadata is also served at ``<prefix>.well-known/openid-configuration`` (the one
URL of the MCP spec's discovery order for an issuer with a path that lies under it).
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.urls import include, path, re_path

from .conf import endpoint_under_prefix, mcp_settings
from .discovery import ai_catalog_view, server_card_view


def discovery_patterns(endpoint: str | None = None) -> list[Any]:
    """The AI Catalog and the Server Card of the endpoint at ``endpoint`` (default: ENDPOINT under URL_PREFIX)."""
    base = endpoint.strip("/") if endpoint else endpoint_under_prefix()
    card = f"{base}/server-card" if base else "server-card"
    return [
        path(".well-known/ai-catalog.json", ai_catalog_view, name="mcp-ai-catalog"),
        path(card, server_card_view, name="mcp-server-card"),
    ]


def oauth_patterns(prefix: str = "oauth/") -> list[Any]:
    from oauth2_provider import views as dot  # reason: DOT's views import its models (only with it installed)
    from oauth2_provider.settings import oauth2_settings  # reason: as above

    from .auth.token_endpoint import ServerMetadataView, TokenView  # reason: as above
    from .auth.views import (  # reason: as above (they subclass DOT's views)
        AuthorizationView,
        IssuerPathMetadataView,
        ProtectedResourceMetadataView,
        RegistrationManagementView,
        RegistrationView,
    )

    patterns: list[Any] = [
        path(
            ".well-known/oauth-authorization-server",
            ServerMetadataView.as_view(),
            name="oauth-server-metadata",
        ),
        path(
            ".well-known/oauth-protected-resource",
            ProtectedResourceMetadataView.as_view(),
            name="oauth-resource-metadata",
        ),
        path(
            ".well-known/oauth-protected-resource/<path:resource_path>",
            ProtectedResourceMetadataView.as_view(),
            name="oauth-resource-metadata-path",
        ),
        path(f"{prefix}authorize/", AuthorizationView.as_view(), name="authorize"),
        path(f"{prefix}token/", TokenView.as_view(), name="token"),
        path(f"{prefix}revoke_token/", dot.RevokeTokenView.as_view(), name="revoke-token"),
        path(f"{prefix}introspect/", dot.IntrospectTokenView.as_view(), name="introspect"),
        path(f"{prefix}register/", RegistrationView.as_view(), name="dcr-register"),
        path(
            f"{prefix}register/<str:client_id>/",
            RegistrationManagementView.as_view(),
            name="dcr-register-management",
        ),
    ]
    if oauth2_settings.OIDC_ENABLED:
        patterns += [
            re_path(
                r"^\.well-known/openid-configuration/?$",
                dot.ConnectDiscoveryInfoView.as_view(),
                name="oidc-connect-discovery-info",
            ),
            path(".well-known/jwks.json", dot.JwksInfoView.as_view(), name="jwks-info"),
            path(f"{prefix}userinfo/", dot.UserInfoView.as_view(), name="user-info"),
            path(f"{prefix}logout/", dot.RPInitiatedLogoutView.as_view(), name="rp-initiated-logout"),
        ]
    elif mcp_settings.URL_PREFIX != "/":
        # Under a prefix the issuer has a path, and <issuer>/.well-known/openid-configuration is the only URL
        # of the MCP spec's discovery order below it: the RFC 8414 document is served there too.
        patterns.append(
            re_path(r"^\.well-known/openid-configuration/?$", IssuerPathMetadataView.as_view(), name="issuer-metadata")
        )
    return patterns


urlpatterns: list[Any] = discovery_patterns()
if apps.is_installed("oauth2_provider"):  # a project without OAuth (AUTH = "none") includes this too
    urlpatterns.append(path("", include((oauth_patterns(), "oauth2_provider"))))
