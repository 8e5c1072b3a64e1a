"""The resource-server side: who is calling, verified by django-oauth-toolkit.

The token comes from the ``Authorization: Bearer`` header only. It is checked
with DOT's own ``OAuthLibCore.verify_request`` (so swapped token models, DOT's
introspection mode for a separate authorization server, and the RFC 8707
audience validator all apply), then django_mcp adds what MCP asks for: a token
naming no audience is refused (``REQUIRE_AUDIENCE``), its audience must be this
endpoint exactly (``audience.py``), a token naming no user acts as its client's
service user or is refused, the user must be active,
and every refusal is a ``WWW-Authenticate: Bearer`` challenge pointing at the
RFC 9728 metadata of this endpoint.

A JWT from the external authorization server named by ``JWT_ISSUER`` is verified by
``jwt_tokens.py`` instead (its signature and claims; no token table). A token DOT does not
know goes on to the project's own authentication classes
(``AUTHENTICATION_CLASSES``, ``authenticators.py``), as does a header in one of their
schemes (``Token <key>``): the project's API tokens act at the endpoint under its own rules.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.core.signals import setting_changed

from ..conf import mcp_settings
from ..runtime.sync_pool import run_bookkeeping
from ..runtime.unavailable import Unavailable
from ..state.hub import hub
from . import authenticators, jwt_tokens, token_cache
from .audience import audience_accepted, mcp_audience_check
from .challenge import Challenge
from .clients import is_client_disabled, service_user
from .locations import protected_resource_metadata_path

#: Why a token lacking a scope is refused: the same words over every transport.
INSUFFICIENT_SCOPE = "The access token lacks the scope this request needs"
#: Why a token naming no resource is refused, followed by the ``resource`` to ask the token endpoint for.
NO_RESOURCE = "The access token names no resource; ask the token endpoint for one with"
#: Longest credentials handed to the project's authentication classes (longer: ``invalid_token`` unread).
MAX_CREDENTIALS = 4096
_LEGACY_SUFFIXES = ("/sse", "/messages")


@dataclass(frozen=True)
class AuthInfo:
    """What a verified bearer token grants: the user, the OAuth client and the scopes.

    ``token`` is DOT's access token, a JWT's claims (``JWT_ISSUER``), or the ``auth`` a project
    authentication class returned
    (its API token), named by ``authenticator`` ("" for an OAuth token); such a token has no
    OAuth client (``client_id`` "").
    """

    user: Any
    client_id: str
    scopes: frozenset[str]
    token: Any = field(default=None, compare=False, repr=False)
    authenticator: str = ""

    def allows(self, scopes: list[str]) -> bool:
        return self.scopes.issuperset(scopes)

    @property
    def user_id(self) -> Any:
        return getattr(self.user, "pk", None) if getattr(self.user, "is_authenticated", False) else None


def endpoint_path(path: str) -> str:
    """The MCP endpoint a request path belongs to (the legacy SSE pair lives under it)."""
    trimmed = path.rstrip("/")
    for suffix in _LEGACY_SUFFIXES:
        if trimmed.endswith(suffix):
            return trimmed[: -len(suffix)] + "/"
    return path


def _django_request(scope: dict[str, Any]) -> Any:
    """A Django request for DOT, built from the ASGI scope without its query string or body.

    Dropping the query string is what keeps oauthlib from ever reading an ``access_token`` there.
    """
    return ASGIRequest({**scope, "query_string": b""}, io.BytesIO(b""))


def resource_metadata_url(request: Any) -> str:
    """This endpoint's RFC 9728 document: the path-suffixed well-known URL, or under the prefix (locations.py)."""
    return str(request.build_absolute_uri(protected_resource_metadata_path(endpoint_path(request.path))))


def bearer_header(request: Any, error: str | None = None, description: str | None = None, scope: str = "") -> str:
    from oauth2_provider.www_authenticate import build_bearer_challenge  # reason: DOT loads only once OAuth is on

    params: dict[str, str] = {}
    if error:
        params["error"] = error
        if description:
            params["error_description"] = description
    if scope:
        params["scope"] = scope
    return str(build_bearer_challenge(request, params or None, resource_metadata_url=resource_metadata_url(request)))


_core: Any = None


def oauthlib_core() -> Any:
    """DOT's configured ``OAuthLibCore`` (server, validator, backend classes), built once."""
    global _core
    if _core is None:
        from oauth2_provider.oauth2_backends import get_oauthlib_core  # reason: DOT loads only once OAuth is on

        _core = get_oauthlib_core()
    return _core


def _reset(*, setting: str, **kwargs: Any) -> None:
    global _core, _wanted
    if setting in ("OAUTH2_PROVIDER", "DJANGO_MCP"):
        _core = None
    _endpoint_urls.clear()  # ALLOWED_HOSTS, the proxy headers, FORCE_SCRIPT_NAME... build other URLs
    _wanted = None


setting_changed.connect(_reset)


def _site_scopes() -> str:
    from .scopes import available_scopes  # reason: auth.scopes imports DOT, loaded only once OAuth is on

    return " ".join(sorted(available_scopes()))


def _split(authorization: str | None) -> tuple[str, str | None]:
    """``Authorization`` as (scheme in lower case, credentials); credentials None unless exactly one follows."""
    parts = (authorization or "").split()
    if not parts:
        return "", None
    return parts[0].lower(), parts[1] if len(parts) == 2 else None


def _verify(scope: dict[str, Any], authorization: str | None) -> AuthInfo:
    request = _django_request(scope)
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if "access_token" in query:
        raise Challenge(
            400,
            "Access tokens are accepted in the Authorization header only",
            bearer_header(request, "invalid_request", "Access tokens are accepted in the Authorization header only"),
            "invalid_request",
        )
    from oauth2_provider.utils import parse_bearer_token  # reason: DOT loads only once OAuth is on

    token = parse_bearer_token(authorization) if authorization else None
    own = bool(mcp_settings.AUTHENTICATION_CLASSES)
    scheme, credentials = _split(authorization)
    description = authenticators.DEFAULT_MESSAGE
    issuer = mcp_settings.JWT_ISSUER
    if token is not None and issuer and jwt_tokens.claims_issuer(token) == issuer:
        return _jwt_info(request, token)
    if token is not None:
        with mcp_audience_check():  # the exact audience rule below replaces DOT's prefix match
            valid, oauth_request = oauthlib_core().verify_request(request, scopes=[])
        if valid:
            return _oauth_info(request, oauth_request.access_token)
        error = getattr(oauth_request, "oauth2_error", None) or {}
        description = str(error.get("error_description") or description)
        if not own:
            return _refuse(request, "invalid_token", description)
    elif not own or scheme not in authenticators.schemes():
        return _refuse(request, None, "Authentication required")
    return _project_token(request, scope, scheme, credentials, description)


def _oauth_info(request: Any, access_token: Any) -> AuthInfo:
    """The MCP rules on a token DOT verified: its audience, its client, its user."""
    endpoint = request.build_absolute_uri(endpoint_path(request.path))
    if mcp_settings.REQUIRE_AUDIENCE and not access_token.resource:
        # Said so the client can mend it: tokens for other uses of this authorization server name no
        # resource, and binding them to this endpoint by default would open it to all of them.
        return _refuse(request, "invalid_token", f"{NO_RESOURCE} resource={endpoint} (RFC 8707).")
    if access_token.resource and not audience_accepted(access_token.resource, endpoint):
        return _refuse(request, "invalid_token", "The access token is not valid for this resource.")
    application = access_token.application
    if is_client_disabled(application):
        return _refuse(request, "invalid_token", "The client of this access token is disabled.")
    user = access_token.user
    if user is None:
        # A token naming no user (client credentials) acts as its client's service user, never as an
        # anonymous holder of the token's scopes.
        user = service_user(application) if application is not None else None
        if user is None:
            return _refuse(request, "invalid_token", "The access token acts for no user.")
    if not user.is_active:
        return _refuse(request, "invalid_token", "The access token's user is inactive.")
    return AuthInfo(
        user=user,
        client_id=application.client_id if application is not None else "",
        scopes=frozenset(access_token.scope.split()),
        token=access_token,
    )


def _jwt_info(request: Any, token: str) -> AuthInfo:
    """A JWT access token from ``JWT_ISSUER``: verified by its signature and claims (``jwt_tokens.py``)."""
    try:
        found = jwt_tokens.verify(token, request.build_absolute_uri(endpoint_path(request.path)))
    except jwt_tokens.TokenRefused as refused:
        return _refuse(request, "invalid_token", str(refused))
    return AuthInfo(user=found.user, client_id=found.client_id, scopes=found.scopes, token=found.claims)


def _project_token(
    request: Any, scope: dict[str, Any], scheme: str, credentials: str | None, description: str
) -> AuthInfo:
    """The project's own authentication classes on credentials DOT did not accept."""
    if credentials is None or len(credentials) > MAX_CREDENTIALS:
        return _refuse(request, "invalid_token", authenticators.DEFAULT_MESSAGE)
    try:
        found = authenticators.run(scope, scheme, credentials)
    except authenticators.Refused as refused:
        return _refuse(request, "invalid_token", str(refused))
    if found is None:
        return _refuse(request, "invalid_token", description)
    user, auth, path = found
    if user is None or not getattr(user, "is_authenticated", False):
        return _refuse(request, "invalid_token", "The access token acts for no user.")
    if not getattr(user, "is_active", True):
        return _refuse(request, "invalid_token", "The access token's user is inactive.")
    from .scopes import available_scopes  # reason: auth.scopes imports DOT, loaded only once OAuth is on

    scopes = authenticators.token_scopes(user, auth, available_scopes())
    return AuthInfo(user=user, client_id="", scopes=scopes, token=auth, authenticator=path)


def _refuse(request: Any, error: str | None, description: str) -> AuthInfo:
    raise Challenge(401, description, bearer_header(request, error, description, _site_scopes()), error)


def authorization(headers: dict[bytes, bytes]) -> str | None:
    value = headers.get(b"authorization")
    return None if value is None else value.decode("latin-1")


def verify_token(token: str, url: str) -> AuthInfo:
    """Verify ``token`` as if it were presented at ``url`` (sync; for transports without HTTP, e.g. stdio).

    The audience check compares the token's ``resource`` with ``url``, so pass the
    public URL of the MCP endpoint. Raises ``Challenge`` when the token is refused.
    """
    parts = urlsplit(url)
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": parts.scheme,
        "path": parts.path or "/",
        "query_string": b"",
        "headers": [(b"host", parts.netloc.encode()), (b"authorization", f"Bearer {token}".encode())],
        "server": (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)),
    }
    return _verify(scope, f"Bearer {token}")


async def authenticate(scope: dict[str, Any], headers: dict[bytes, bytes]) -> AuthInfo:
    """Verify the request's bearer token or raise ``Challenge``.

    DOT (and the project's authentication classes) query the database: the check runs in the
    bookkeeping pool, between two ``close_old_connections()``; a database that cannot answer raises
    ``DatabaseUnavailable`` (503). A token this worker verified recently is answered from its
    ``token_cache`` instead: no query, no thread.
    """
    header = authorization(headers)
    key = await _cache_key(scope, header)
    if key is None:
        return await run_bookkeeping(_verify, scope, header)
    cached = token_cache.cache.get(key)
    if cached is not None:
        return cast(AuthInfo, cached)
    generation = token_cache.cache.generation
    info: AuthInfo = await run_bookkeeping(_verify, scope, header)
    token_cache.cache.put(key, info, generation)
    return info


async def _cache_key(scope: dict[str, Any], header: str | None) -> str | None:
    """The request's key in the token cache, or None when the cache may not answer it.

    The endpoint URL is part of the key: the audience a token was checked against. A request the
    check would refuse before DOT looks (a token in the query string, a host not allowed) gets none.
    """
    if header is None or not token_cache.cache.enabled() or b"access_token" in scope.get("query_string", b""):
        return None
    try:
        await hub.start()  # a worker that caches must hear every change from now on
    except Unavailable:
        return None
    if not token_cache.cache.usable():
        return None
    endpoint = _endpoint_url(scope)
    return None if endpoint is None else token_cache.cache.key(header, endpoint)


def _endpoint_url(scope: dict[str, Any]) -> str | None:
    """The endpoint URL Django builds for this request (the audience), None when it refuses the host.

    Remembered by what Django reads to build it, so that a request answered from the token cache
    builds no ``HttpRequest`` (about 20 µs): the scope's scheme, server, prefix and path, and the
    headers ``Host``, ``X-Forwarded-Host``/``-Port`` and ``SECURE_PROXY_SSL_HEADER``'s. Bounded:
    clients choose the ``Host``.
    """
    headers = scope.get("headers") or ()
    wanted = _url_headers()
    seen = tuple((name, value) for name, value in headers if name in wanted)  # daphne gives lists
    key: tuple[Any, ...] | None = (
        scope.get("scheme"),
        scope.get("server"),
        scope.get("root_path", ""),
        scope.get("path"),
        seen,
    )
    try:
        return _endpoint_urls[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable scope value: built each time
        key = None
    try:
        request = _django_request(scope)
        endpoint = str(request.build_absolute_uri(endpoint_path(request.path)))
    except Exception:  # noqa: BLE001 - DisallowedHost and the like: the uncached check answers it
        return None
    if key is not None:
        if len(_endpoint_urls) >= MAX_ENDPOINT_URLS:
            _endpoint_urls.clear()
        _endpoint_urls[key] = endpoint
    return endpoint


def _url_headers() -> frozenset[bytes]:
    global _wanted
    if _wanted is None:
        names = {b"host", b"x-forwarded-host", b"x-forwarded-port"}
        proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
        if proxy:
            names.add(proxy[0].removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1"))
        _wanted = frozenset(names)
    return _wanted


#: Endpoint URLs built, by what they were built from (``_endpoint_url``); emptied when settings change.
_endpoint_urls: dict[Any, str] = {}
_wanted: frozenset[bytes] | None = None
MAX_ENDPOINT_URLS = 256


def insufficient_scope(scope: dict[str, Any], needed: list[str]) -> Challenge:
    """403 for a token lacking a scope a tool/resource/prompt needs: the client may step up."""
    request = _django_request(scope)
    wanted = " ".join(needed)
    header = bearer_header(request, "insufficient_scope", INSUFFICIENT_SCOPE, wanted)
    return Challenge(403, INSUFFICIENT_SCOPE, header, "insufficient_scope", wanted)


async def authenticate_scope(scope: dict[str, Any], headers: dict[bytes, bytes]) -> AuthInfo:
    """The transports' hook: verify, then record ``user`` and ``mcp_auth`` in the ASGI scope.

    Raises ``Challenge``; the transport turns it into its own answer (401/403 over HTTP).
    """
    info = await authenticate(scope, headers)
    scope["user"] = info.user
    scope["mcp_auth"] = info
    return info


__all__ = [
    "INSUFFICIENT_SCOPE",
    "AuthInfo",
    "Challenge",
    "authenticate",
    "authenticate_scope",
    "endpoint_path",
    "insufficient_scope",
    "resource_metadata_url",
    "verify_token",
]
