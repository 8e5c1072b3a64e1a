"""django-oauth-toolkit's token endpoint and metadata, plus the identity assertion grant (``id_jag.py``).

oauthlib knows no RFC 7523 ``jwt-bearer`` grant, so this view answers that one grant itself and hands
every other to DOT unchanged. What it issues is a DOT access token like any other (stored, revocable,
introspectable, bound by RFC 8707 to this MCP endpoint), made by DOT's own token generator and validator;
no refresh token, so the IdP's decision is asked again when it expires.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from oauth2_provider.scopes import get_scopes_backend
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import OAuthServerMetadataView
from oauth2_provider.views import TokenView as DOTTokenView
from oauthlib.common import Request as OAuthRequest

from ..conf import mcp_settings
from ..runtime.unavailable import Unavailable
from .audience import audience_accepted, canonical_uri
from .id_jag import GRANT_TYPE, AssertionRefused, exchange

logger = logging.getLogger("django_mcp.auth")


def _error(status: int, error: str, description: str, **headers: str) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    response["Cache-Control"] = "no-store"
    for name, value in headers.items():
        response[name] = value
    return response


class TokenView(DOTTokenView):  # type: ignore[misc]
    """DOT's token endpoint; with ``IDJAG_ISSUERS`` set, also the ``jwt-bearer`` grant of an ID-JAG."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.POST.get("grant_type") != GRANT_TYPE or not mcp_settings.IDJAG_ISSUERS:
            response: HttpResponse = super().post(request, *args, **kwargs)
            return response  # without the setting oauthlib answers unsupported_grant_type
        try:
            return self._identity_assertion(request)
        except Unavailable as exc:  # the IdP's keys or the database: retry later, never a 500
            return _error(503, "temporarily_unavailable", exc.message, **{"Retry-After": str(exc.retry_after)})
        except DatabaseError:
            logger.exception("The identity assertion grant could not be recorded.")
            retry = str(mcp_settings.UNAVAILABLE_RETRY_AFTER)
            return _error(503, "temporarily_unavailable", "Retry shortly.", **{"Retry-After": retry})

    def _identity_assertion(self, request: HttpRequest) -> HttpResponse:
        core = self.get_oauthlib_core()
        uri, method, body, headers = core._extract_params(request)
        oauth_request = OAuthRequest(uri, method, body, headers)
        validator = core.server.request_validator
        if not validator.authenticate_client(oauth_request) or oauth_request.client is None:
            # RFC 7523 §3.1 via RFC 6749 §5.2: only a confidential client can present an assertion grant.
            return _error(401, "invalid_client", "Client authentication failed.", **{"WWW-Authenticate": "Basic"})
        application = oauth_request.client
        assertion = request.POST.get("assertion") or ""
        if not assertion:
            return _error(400, "invalid_request", "The assertion parameter is missing.")
        endpoint_url = request.build_absolute_uri(mcp_settings.ENDPOINT)
        asked = request.POST.getlist("resource")
        if asked and not all(audience_accepted([r], endpoint_url) for r in asked):
            # RFC 8707 §2: this server issues tokens for its MCP endpoint only.
            return _error(400, "invalid_target", "This server issues tokens for its MCP endpoint only.")
        scope = request.POST.get("scope")
        try:
            exchanged = exchange(
                assertion,
                our_issuer=str(oauth2_settings.oauth2_authorization_server_issuer(request)),
                client_id=str(application.client_id),
                endpoint_url=endpoint_url,
                client_scopes=list(get_scopes_backend().get_available_scopes(application=application)),
                requested=scope.split() if scope is not None else None,
            )
        except AssertionRefused as exc:
            return _error(400, exc.error, str(exc))
        if not exchanged.scopes:
            return _error(400, "invalid_scope", "The assertion grants this client no scope of this site.")
        oauth_request.user = exchanged.user
        oauth_request.scopes = exchanged.scopes
        oauth_request.grant_type = GRANT_TYPE
        oauth_request.resource = [canonical_uri(endpoint_url)]
        token = core.server.default_token_type.create_token(oauth_request, refresh_token=False)
        token.pop("refresh_token", None)
        validator.save_bearer_token(token, oauth_request)
        response = JsonResponse(token)
        response["Cache-Control"] = "no-store"
        response["Pragma"] = "no-cache"
        return response


class ServerMetadataView(OAuthServerMetadataView):  # type: ignore[misc]
    """RFC 8414 metadata; ``grant_types_supported`` names the ``jwt-bearer`` grant when ID-JAGs are accepted."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().get(request, *args, **kwargs)
        if not mcp_settings.IDJAG_ISSUERS or response.status_code != 200:
            return response
        document = json.loads(response.content)
        grants = list(document.get("grant_types_supported") or [])
        if GRANT_TYPE not in grants:
            document["grant_types_supported"] = [*grants, GRANT_TYPE]
        answer = JsonResponse(document)
        for name, value in response.items():
            if name.lower() not in ("content-type", "content-length"):
                answer[name] = value
        return answer


__all__ = ["ServerMetadataView", "TokenView"]
