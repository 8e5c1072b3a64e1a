"""The signing keys of a trusted issuer (``JWT_ISSUER``, each of ``IDJAG_ISSUERS``), fetched and kept per process.

The keys come from the issuer's own metadata (RFC 8414, then OpenID Connect discovery), whose
``issuer`` must be the configured one exactly (RFC 8414 §3.3) and whose ``jwks_uri`` must be on
the issuer's origin unless ``JWT_JWKS_URI`` names the key set: nothing but the configured hosts
is ever fetched, and a redirect is not followed. A token signed with a key this process does
not know (a rotation) fetches the keys again, at most once per ``JWT_KEYS_MIN_REFRESH`` seconds
whatever the number of such tokens: a flood of made-up ``kid`` values costs the issuer nothing.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core.signals import setting_changed
from jwcrypto import jwk

from ..conf import mcp_settings
from ..runtime.unavailable import Unavailable

logger = logging.getLogger("django_mcp.auth")

#: Seconds one fetch (metadata or key set) may take.
FETCH_TIMEOUT = 5.0
#: Largest metadata document or key set read, in bytes.
MAX_DOCUMENT = 512 * 1024


class KeysUnavailable(Unavailable):
    """The issuer's metadata or keys cannot be fetched: 503 with ``Retry-After``, never a guess."""

    default_message = "Service unavailable: the authorization server's keys cannot be fetched, retry shortly"
    reason = "keys_unavailable"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is an error: a redirect could lead anywhere


_opener = urllib.request.build_opener(_NoRedirect)


def fetch_json(url: str) -> dict[str, Any]:
    """GET ``url`` as a JSON object (bounded in time and size, no redirect); ``KeysUnavailable`` otherwise."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with _opener.open(request, timeout=FETCH_TIMEOUT) as response:
            body = response.read(MAX_DOCUMENT + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise KeysUnavailable() from exc
    if len(body) > MAX_DOCUMENT:
        raise KeysUnavailable()
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise KeysUnavailable() from exc
    if not isinstance(document, dict):
        raise KeysUnavailable()
    return document


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be, in the MCP specification's order (RFC 8414 §3.1, OIDC discovery)."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def jwks_uri(issuer: str) -> str:
    """The key set's URL: ``JWT_JWKS_URI`` (for ``JWT_ISSUER``), else the metadata's ``jwks_uri`` (same origin)."""
    if mcp_settings.JWT_JWKS_URI and issuer == mcp_settings.JWT_ISSUER:
        return str(mcp_settings.JWT_JWKS_URI)
    for url in metadata_urls(issuer):
        try:
            document = fetch_json(url)
        except KeysUnavailable:
            continue
        if document.get("issuer") != issuer:
            named = str(document.get("issuer"))[:200]
            logger.warning("The metadata at %s names issuer %r, not %r: ignored.", url, named, issuer)
            continue
        uri = document.get("jwks_uri")
        if not isinstance(uri, str) or _origin(uri) != _origin(issuer):
            logger.warning(
                "The metadata at %s names jwks_uri %r, off the issuer's origin: ignored.", url, str(uri)[:200]
            )
            continue
        return uri
    raise KeysUnavailable()


def _parse(document: dict[str, Any]) -> dict[str, jwk.JWK]:
    """The public signing keys of a JWK Set, by ``kid`` (a key without one is kept under "")."""
    keys: dict[str, jwk.JWK] = {}
    for entry in document.get("keys") or []:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig" or entry.get("kty") == "oct":
            continue  # encryption keys and shared secrets never verify a signature here
        try:
            key = jwk.JWK(**{k: v for k, v in entry.items() if k not in ("d", "p", "q", "dp", "dq", "qi")})
        except Exception:  # noqa: BLE001 - a key jwcrypto cannot read is skipped, the others still serve
            logger.warning("Skipped an unreadable key of the issuer's key set (kid %r).", str(entry.get("kid"))[:100])
            continue
        keys[str(entry.get("kid") or "")] = key
    return keys


@dataclass
class _Cache:
    keys: dict[str, jwk.JWK]
    fetched: float  # time.monotonic() of the last fetch attempt


_lock = threading.Lock()
#: The keys of each issuer, by issuer.
_caches: dict[str, _Cache] = {}
#: time.monotonic() of a failed first fetch, by issuer: none again before ``JWT_KEYS_MIN_REFRESH`` has passed.
_failed: dict[str, float] = {}


def _refresh(issuer: str) -> _Cache:
    now = time.monotonic()
    cache, failed = _caches.get(issuer), _failed.get(issuer)
    if cache is None and failed is not None and now - failed < mcp_settings.JWT_KEYS_MIN_REFRESH:
        raise KeysUnavailable(retry_after=math.ceil(mcp_settings.JWT_KEYS_MIN_REFRESH - (now - failed)))
    try:
        keys = _parse(fetch_json(jwks_uri(issuer)))
    except KeysUnavailable:
        if cache is not None:  # keep serving the keys we have; try again after the minimum interval
            cache.fetched = now
            return cache
        _failed[issuer] = now
        raise
    _caches[issuer] = cache = _Cache(keys, now)
    _failed.pop(issuer, None)
    return cache


def signing_key(issuer: str, kid: str) -> jwk.JWK | None:
    """The issuer's key ``kid``: from the cache, else after a fetch the rate bound allows; None if unknown.

    ``issuer`` must be a configured one (``JWT_ISSUER`` or one of ``IDJAG_ISSUERS``): it is fetched.
    """
    with _lock:  # one fetch at a time: concurrent requests with the same new kid wait for it
        cache = _caches.get(issuer)
        now = time.monotonic()
        if cache is None or now - cache.fetched > mcp_settings.JWT_KEYS_MAX_AGE:
            cache = _refresh(issuer)
        elif kid not in cache.keys and now - cache.fetched >= mcp_settings.JWT_KEYS_MIN_REFRESH:
            cache = _refresh(issuer)
        return cache.keys.get(kid)


def forget() -> None:
    """Drop the cached keys (settings changed, or a test)."""
    with _lock:
        _caches.clear()
        _failed.clear()


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "DJANGO_MCP":
        forget()


setting_changed.connect(_reset)


__all__ = ["KeysUnavailable", "forget", "jwks_uri", "metadata_urls", "signing_key"]
