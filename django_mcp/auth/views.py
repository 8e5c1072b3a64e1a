"""django-oauth-toolkit's metadata and registration views, pointed at the MCP endpoint.

Only what MCP needs differs from DOT: the RFC 9728 ``resource`` is the MCP
endpoint's URL exactly as clients know it (trailing slash included, so the
official SDK's RFC 8707 check matches), only the endpoint's own path-suffixed
document exists, and registration and its updates follow the rules of
``registration.py`` (grant types, redirect URIs, sizes) and a per-address rate limit.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.utils import parse_bearer_token
from oauth2_provider.views import (
    AuthorizationView as DOTAuthorizationView,
)
from oauth2_provider.views import (
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
    OAuthProtectedResourceMetadataView,
)

from ..conf import mcp_settings
from ..models import MCPClient
from ..state.writelock import write_transaction
from . import initial_tokens
from .group_scopes import permitted_scopes
from .ratelimit import registration_retry_after
from .registration import OPEN_GRANT_TYPES, TRUSTED_GRANT_TYPES, Refusal, check_metadata
from .token_endpoint import ServerMetadataView


class AuthorizationView(DOTAuthorizationView):  # type: ignore[misc]
    """DOT's consent page, listing only the scopes the signed-in user may hold (``SCOPE_GROUPS``).

    What the page shows is what the code will carry: the validator narrows the submitted form again.
    """

    def validate_authorization_request(self, request: HttpRequest) -> tuple[list[str], dict[str, Any]]:
        scopes, credentials = super().validate_authorization_request(request)
        return permitted_scopes(request.user, scopes), credentials


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

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        """``JWT_ISSUER`` when the tokens come from the company's authorization server, else DOT's own."""
        if mcp_settings.JWT_ISSUER:
            return [str(mcp_settings.JWT_ISSUER)]
        return list(super().get_authorization_servers(request))

    def get_resource_name(self) -> str:
        return str(
            oauth2_settings.OAUTH2_PROTECTED_RESOURCE_NAME or mcp_settings.SERVER_TITLE or mcp_settings.SERVER_NAME
        )


class IssuerPathMetadataView(ServerMetadataView):
    """RFC 8414 metadata at ``<issuer>/.well-known/openid-configuration``, for a site under a prefix without OIDC.

    For an issuer with a path (``https://host/plugins/mcp``) that URL is the only one of the MCP spec's
    discovery order under the prefix; DOT's view would derive its ``issuer`` from the
    ``oauth-authorization-server`` marker, absent here, so it is the issuer the PRM names instead.
    """

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().get(request, *args, **kwargs)
        document = json.loads(response.content)
        document["issuer"] = oauth2_settings.oauth2_authorization_server_issuer(request)
        answer = JsonResponse(document)
        answer["Access-Control-Allow-Origin"] = "*"
        return answer


def _refused(refusal: Refusal, **headers: str) -> JsonResponse:
    response = JsonResponse(refusal.body(), status=refusal.status)
    for name, value in headers.items():
        response[name] = value
    return response


def _read_metadata(request: HttpRequest) -> tuple[Any, Refusal | None]:
    """The JSON body within ``REGISTRATION_MAX_BODY_SIZE`` (413 beyond, decided before reading when declared)."""
    limit = mcp_settings.REGISTRATION_MAX_BODY_SIZE
    too_big = Refusal(413, "invalid_client_metadata", f"Registration metadata is limited to {limit} bytes")
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return None, too_big
    body = request.body
    if len(body) > limit:
        return None, too_big
    try:
        return json.loads(body), None
    except ValueError:
        return None, None  # DOT answers invalid_client_metadata


def _client_address(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "unknown")


class RegistrationView(DynamicClientRegistrationView):  # type: ignore[misc]
    """RFC 7591 registration with the MCP rules on top of DOT's.

    Open (anonymous) registration: authorization-code clients only, rate-limited per
    client address. With an initial access token (``Authorization: Bearer``): what
    the token allows, and the new client gets the token's scopes and service user.
    Every registration: https or loopback-http redirect URIs, bounded in count and size.
    """

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        initial = None
        presented = parse_bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        if presented is not None:
            initial = initial_tokens.find(presented)
            if initial is None and not request.user.is_authenticated:
                unknown = Refusal(401, "invalid_token", "Unknown, expired or used initial access token")
                return _refused(unknown, **{"WWW-Authenticate": 'Bearer error="invalid_token"'})
        if initial is None:
            wait = registration_retry_after(_client_address(request))
            if wait is not None:
                busy = Refusal(429, "too_many_requests", "Too many registrations from this address; retry later")
                return _refused(busy, **{"Retry-After": str(wait)})
        data, refusal = _read_metadata(request)
        if refusal is not None:
            return _refused(refusal)
        if isinstance(data, dict):
            allowed = TRUSTED_GRANT_TYPES if initial is not None else OPEN_GRANT_TYPES
            refusal = check_metadata(data, allowed)
            if refusal is None and initial is not None and "client_credentials" in data.get("grant_types", []):
                if initial.service_user is None:  # loaded with the token: no query
                    refusal = Refusal(
                        400,
                        "invalid_client_metadata",
                        "This initial access token names no service user, so it cannot create a "
                        "client_credentials client",
                    )
            if refusal is not None:
                return _refused(refusal)
        setattr(request, "mcp_initial_token", initial)  # noqa: B010 - read by MCPRegistrationPermission
        with write_transaction():
            response: HttpResponse = super().post(request, *args, **kwargs)
            if initial is not None and response.status_code == 201:
                if not initial_tokens.use(initial):
                    transaction.set_rollback(True)
                    return JsonResponse(
                        {"error": "invalid_token", "error_description": "The initial access token is used up"},
                        status=401,
                    )
                client_id = json.loads(response.content)["client_id"]
                MCPClient.objects.update_or_create(
                    client_id=client_id,
                    defaults={"allowed_scopes": initial.scopes, "service_user": initial.service_user},
                )
        return response


class RegistrationManagementView(DynamicClientRegistrationManagementView):  # type: ignore[misc]
    """RFC 7592 read/update/delete; an update (PUT) meets the same rules as a registration.

    The grant types allowed on update are the open ones plus the client's current one,
    so a client registered openly can never turn itself into a machine client.
    """

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        auth = self._authenticate_registration_request(request, client_id)
        if isinstance(auth, HttpResponse):
            return auth
        data, refusal = _read_metadata(request)
        if refusal is not None:
            return _refused(refusal)
        if isinstance(data, dict):
            current = {
                "authorization-code": "authorization_code",
                "client-credentials": "client_credentials",
            }.get(auth.application.authorization_grant_type)
            allowed = OPEN_GRANT_TYPES | ({current} if current else set())
            refusal = check_metadata(data, frozenset(allowed))
            if refusal is not None:
                return _refused(refusal)
        response: HttpResponse = super().put(request, client_id, *args, **kwargs)
        return response


__all__ = ["IssuerPathMetadataView", "ProtectedResourceMetadataView", "RegistrationManagementView", "RegistrationView"]
