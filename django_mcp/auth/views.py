"""django-oauth-toolkit's metadata and registration views, pointed at the MCP endpoint.

Only what MCP needs differs from DOT: the RFC 9728 ``resource`` is the MCP
endpoint's URL exactly as clients know it (trailing slash included, so the
official SDK's RFC 8707 check matches), only the endpoint's own path-suffixed
document exists, and registration refuses redirect URIs MCP clients must not use.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import DynamicClientRegistrationView, OAuthProtectedResourceMetadataView

from ..conf import mcp_settings
from .registration import redirect_uri_allowed


class ProtectedResourceMetadataView(OAuthProtectedResourceMetadataView):  # type: ignore[misc]
    """RFC 9728 metadata of the MCP endpoint, at the root and at the path-suffixed well-known URL."""

    def get(self, request: HttpRequest, *args: Any, resource_path: str = "", **kwargs: Any) -> HttpResponse:
        if resource_path and resource_path.strip("/") != mcp_settings.ENDPOINT.strip("/"):
            return JsonResponse({"error": "not_found"}, status=404)
        response: HttpResponse = super().get(request, *args, **kwargs)
        return response

    def get_resource(self, request: HttpRequest) -> str:
        if oauth2_settings.OAUTH2_PROTECTED_RESOURCE_IDENTIFIER:
            return str(oauth2_settings.OAUTH2_PROTECTED_RESOURCE_IDENTIFIER)
        return request.build_absolute_uri(mcp_settings.ENDPOINT)

    def get_resource_name(self) -> str:
        return str(
            oauth2_settings.OAUTH2_PROTECTED_RESOURCE_NAME or mcp_settings.SERVER_TITLE or mcp_settings.SERVER_NAME
        )


class RegistrationView(DynamicClientRegistrationView):  # type: ignore[misc]
    """RFC 7591 registration with the MCP redirect URI rule (https, or http on loopback)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            data = json.loads(request.body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            uris = data.get("redirect_uris")
            if isinstance(uris, list):
                bad = [u for u in uris if not redirect_uri_allowed(u)]
                if bad:
                    return JsonResponse(
                        {
                            "error": "invalid_redirect_uri",
                            "error_description": "Redirect URIs must use https, or http on a loopback address "
                            f"(127.0.0.1, [::1], localhost): {bad[0]!r} does not",
                        },
                        status=400,
                    )
        response: HttpResponse = super().post(request, *args, **kwargs)
        return response


__all__ = ["ProtectedResourceMetadataView", "RegistrationView"]
