"""JWT access tokens from an external authorization server (``JWT_ISSUER``): verified here, no database of tokens.

The company's identity provider (Entra ID, Okta, Keycloak...) issues the token; this endpoint
is only its resource server. A token is accepted when, in this order:

- its JWS algorithm is on ``JWT_ALGORITHMS`` (public-key signatures only: never ``none``, never
  an HMAC "secret" that could be the issuer's public key, RFC 8725 §2.1, §3.1);
- its ``typ`` is absent, ``JWT`` or ``at+jwt`` (RFC 9068 §2.1; any other type is another kind of JWT);
- its ``kid`` names a key the issuer publishes (``jwks.py``: fetched, cached, refetched at a bounded rate)
  and the signature verifies with it (jwcrypto);
- ``iss`` is ``JWT_ISSUER`` exactly, ``aud`` names this endpoint (or ``ACCEPTED_AUDIENCES``, RFC 8707),
  ``exp`` is present and not past, ``nbf`` and ``iat`` not in the future, each give or take ``JWT_LEEWAY``;
- the claim ``JWT_USER_CLAIM`` names exactly one active Django user (created on first use only with
  ``JWT_CREATE_USERS``).

Its scopes are those of ``scope`` (RFC 9068) or ``scp`` (Entra, Okta), plus the site scopes
``JWT_ROLE_SCOPES`` grants for each role or group in the ``JWT_ROLES_CLAIMS``, less those
``SCOPE_GROUPS`` reserves to Django groups the user is not in.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError
from jwcrypto import jws
from jwcrypto.common import base64url_decode

from ..conf import JWT_ASYMMETRIC_ALGORITHMS, mcp_settings
from ..state.writelock import write_transaction
from . import jwks
from .audience import audience_accepted
from .group_scopes import permitted_scopes

#: Longest JWT read (a token with many groups is a few kB; anything longer is refused unread).
MAX_TOKEN = 16 * 1024
#: Longest claim value used to find a user or a client.
MAX_CLAIM = 254
#: ``typ`` header values of an access token (compared in lower case; RFC 9068 §2.1, RFC 7515 §4.1.9).
ACCESS_TOKEN_TYPES = frozenset({"jwt", "at+jwt", "application/at+jwt"})


class TokenRefused(Exception):
    """The JWT is not acceptable here: the message says why, fit for the ``WWW-Authenticate`` header."""


@dataclass(frozen=True)
class Verified:
    user: Any
    client_id: str
    scopes: frozenset[str]
    claims: dict[str, Any]


def _segment(token: str, index: int) -> Any:
    try:
        return json.loads(base64url_decode(token.split(".")[index]))
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def claims_issuer(token: str) -> str | None:
    """The unverified ``iss`` of a compact JWS, when it looks like one: which verifier the token is for."""
    if len(token) > MAX_TOKEN or token.count(".") != 2:
        return None
    claims = _segment(token, 1)
    issuer = claims.get("iss") if isinstance(claims, dict) else None
    return issuer if isinstance(issuer, str) else None


def verify(token: str, endpoint_url: str) -> Verified:
    """The user, client and scopes of ``token`` presented at ``endpoint_url``; ``TokenRefused`` otherwise.

    Sync (it may fetch the issuer's keys and queries the user table): run in the bookkeeping pool.
    """
    issuer = str(mcp_settings.JWT_ISSUER)
    claims = _verified_claims(token, issuer)
    _check_claims(claims, issuer, endpoint_url)
    user = find_user(claims)
    client_id = claims.get("client_id") or claims.get("azp") or ""
    client_id = client_id[:MAX_CLAIM] if isinstance(client_id, str) else ""
    return Verified(user, client_id, granted_scopes(user, claims), claims)


def _verified_claims(token: str, issuer: str) -> dict[str, Any]:
    return verified_claims(token, issuer, ACCESS_TOKEN_TYPES, "access token", typ_required=False)


def verified_claims(token: str, issuer: str, types: frozenset[str], what: str, *, typ_required: bool) -> dict[str, Any]:
    """The claims of ``token`` once its algorithm, ``typ`` and ``issuer``'s signature check; else ``TokenRefused``.

    ``issuer`` must be a configured one: its keys are fetched. ``what`` names the JWT in the messages.
    """
    if len(token) > MAX_TOKEN:
        raise TokenRefused(f"The {what} is too long.")
    header = _segment(token, 0)
    if not isinstance(header, dict):
        raise TokenRefused(f"The {what} is not a signed JWT.")
    alg = header.get("alg")
    if alg not in mcp_settings.JWT_ALGORITHMS or alg not in JWT_ASYMMETRIC_ALGORITHMS:
        raise TokenRefused(f"The {what}'s signature algorithm is not accepted.")
    typ = header.get("typ")
    if (typ is None and typ_required) or (typ is not None and (not isinstance(typ, str) or typ.lower() not in types)):
        raise TokenRefused(f"The JWT is not an {what} (typ).")
    kid = header.get("kid", "")
    if not isinstance(kid, str) or len(kid) > MAX_CLAIM:
        raise TokenRefused(f"The {what}'s key id is malformed.")
    key = jwks.signing_key(issuer, kid)
    if key is None:
        raise TokenRefused(f"The {what} is signed with a key the issuer does not publish.")
    if key.get("alg") not in (None, alg):  # a key published for one algorithm verifies no other (RFC 8725 §3.1)
        raise TokenRefused(f"The {what}'s algorithm is not its key's.")
    signed = jws.JWS()
    try:
        signed.deserialize(token)
        signed.allowed_algs = [alg]
        signed.verify(key)
    except Exception as exc:  # jwcrypto raises several types; each is a bad signature here
        raise TokenRefused(f"The {what}'s signature is invalid.") from exc
    try:
        claims = json.loads(signed.payload)
    except ValueError as exc:
        raise TokenRefused(f"The {what}'s claims are not JSON.") from exc
    if not isinstance(claims, dict):
        raise TokenRefused(f"The {what}'s claims are not a JSON object.")
    return claims


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TokenRefused(f"The access token's {name} is not a number.")
    return float(value)


def _check_claims(claims: dict[str, Any], issuer: str, endpoint_url: str) -> None:
    if claims.get("iss") != issuer:
        raise TokenRefused("The access token is from another issuer.")
    now, leeway = time.time(), float(mcp_settings.JWT_LEEWAY)
    expires = _number(claims, "exp")
    if expires is None:
        raise TokenRefused("The access token has no expiry (exp).")
    if now > expires + leeway:
        raise TokenRefused("The access token has expired.")
    not_before = _number(claims, "nbf")
    if not_before is not None and not_before > now + leeway:
        raise TokenRefused("The access token is not valid yet (nbf).")
    issued = _number(claims, "iat")
    if issued is not None and issued > now + leeway:
        raise TokenRefused("The access token is issued in the future (iat).")
    audience = claims.get("aud")
    audiences = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
    if not audience_accepted(audiences, endpoint_url):
        raise TokenRefused("The access token is not valid for this resource.")


def _strings(value: Any) -> list[str]:
    """A claim that is a space-separated string or a list of strings, as a list."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def token_scopes(claims: dict[str, Any]) -> frozenset[str]:
    """``scope`` or ``scp``, plus what ``JWT_ROLE_SCOPES`` grants the roles and groups the token carries."""
    scopes = set(_strings(claims.get("scope"))) | set(_strings(claims.get("scp")))
    mapping = mcp_settings.JWT_ROLE_SCOPES
    for claim in mcp_settings.JWT_ROLES_CLAIMS:
        for role in _strings(claims.get(claim)):
            scopes.update(mapping.get(role, ()))
    return frozenset(scopes)


def granted_scopes(user: Any, claims: dict[str, Any]) -> frozenset[str]:
    """The token's scopes, less those ``SCOPE_GROUPS`` reserves to groups ``user`` is not in (as for DOT's tokens)."""
    return frozenset(permitted_scopes(user, sorted(token_scopes(claims))))


def user_field() -> str:
    """The user model's field the ``JWT_USER_CLAIM`` value is matched against."""
    return str(mcp_settings.JWT_USER_FIELD or get_user_model().USERNAME_FIELD)


def find_user(claims: dict[str, Any], what: str = "access token") -> Any:
    """The one active Django user the token names (``JWT_USER_CLAIM`` = ``JWT_USER_FIELD``), or ``TokenRefused``.

    An email is matched without regard to case; two users matching (colliding emails) is a refusal,
    never a guess. ``JWT_CREATE_USERS`` creates the missing user, with no usable password.
    """
    claim = mcp_settings.JWT_USER_CLAIM
    value = claims.get(claim)
    if not isinstance(value, str) or not value or len(value) > MAX_CLAIM:
        raise TokenRefused(f"The {what} names no user ({claim}).")
    model, field = get_user_model(), user_field()
    lookup = {f"{field}__iexact" if field == "email" else field: value}
    found = list(model._default_manager.filter(**lookup)[:2])
    if len(found) > 1:
        raise TokenRefused(f"The {what}'s {claim} matches more than one user.")
    if not found:
        if not mcp_settings.JWT_CREATE_USERS:
            raise TokenRefused(f"The {what}'s {claim} matches no user of this site.")
        found = [_create_user(model, field, value, lookup)]
    user = found[0]
    if not getattr(user, "is_active", True):
        raise TokenRefused(f"The {what}'s user is inactive.")
    return user


def _create_user(model: Any, field: str, value: str, lookup: dict[str, str]) -> Any:
    fields = {field: value, model.USERNAME_FIELD: value}
    try:
        with write_transaction(model._default_manager.db):
            user = model(**fields)
            user.set_unusable_password()
            user.save()
            return user
    except IntegrityError:  # created meanwhile by a concurrent first call
        return model._default_manager.get(**lookup)


__all__ = [
    "TokenRefused",
    "Verified",
    "claims_issuer",
    "find_user",
    "granted_scopes",
    "token_scopes",
    "verified_claims",
    "verify",
]
