"""Identity assertion grants (ID-JAG): the company IdP vouches for a user, our token endpoint issues the token.

The MCP extension ``io.modelcontextprotocol/enterprise-managed-authorization`` (draft-ietf-oauth-
identity-assertion-authz-grant): the MCP host signs its user in at the company IdP, exchanges that
sign-in there for an ID-JAG (RFC 8693), and presents it to django-oauth-toolkit's token endpoint as an
RFC 7523 ``jwt-bearer`` grant, authenticated as the client the ID-JAG names. No consent page: the IdP's
policy decided. An assertion is accepted when, in this order:

- its ``typ`` is ``oauth-id-jag+jwt``, its algorithm on ``JWT_ALGORITHMS`` (public-key only), its
  unverified ``iss`` one of ``IDJAG_ISSUERS`` (nothing else is ever fetched) and its signature that
  issuer's published key (``jwks.py``, jwcrypto);
- ``aud`` is this authorization server's issuer, ``exp`` and ``iat`` present and sound (``JWT_LEEWAY``),
  ``client_id`` the authenticated client, ``resource`` this MCP endpoint, ``sub`` present;
- its ``jti`` was never exchanged before (``SpentAssertion``, in the database every worker shares);
- ``JWT_USER_CLAIM`` names one active Django user (``jwt_tokens.find_user``).

The token's scopes are what the client may hold (``allowed_scopes``), within the assertion's ``scope``
and the request's ``scope`` when given, less those ``SCOPE_GROUPS`` reserves to other groups.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import datetime
from datetime import timezone as dt_timezone
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from ..conf import mcp_settings
from ..models import SpentAssertion
from ..state.writelock import write_transaction
from .audience import audience_accepted
from .group_scopes import permitted_scopes
from .jwt_tokens import MAX_CLAIM, TokenRefused, claims_issuer, find_user, verified_claims

#: RFC 7523 §2.1: the grant type an ID-JAG is presented with.
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: The ``typ`` header of an ID-JAG (compared in lower case).
ID_JAG_TYPES = frozenset({"oauth-id-jag+jwt"})
#: The MCP extension's identifier.
EXTENSION = "io.modelcontextprotocol/enterprise-managed-authorization"
WHAT = "identity assertion"


class AssertionRefused(Exception):
    """Not exchanged: ``error`` is the OAuth error code (RFC 6749 §5.2), the message its description."""

    def __init__(self, description: str, error: str = "invalid_grant") -> None:
        super().__init__(description)
        self.error = error


@dataclass(frozen=True)
class Exchanged:
    user: Any
    scopes: list[str]


def _strings(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise AssertionRefused(f"The {WHAT}'s claims are malformed.")


def _number(claims: dict[str, Any], name: str) -> float:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AssertionRefused(f"The {WHAT} has no {name}.")
    return float(value)


def _check(claims: dict[str, Any], issuer: str, our_issuer: str, client_id: str, endpoint_url: str) -> float:
    """The claim checks; the assertion's expiry (epoch seconds)."""
    if claims.get("iss") != issuer:
        raise AssertionRefused(f"The {WHAT} is from another issuer.")
    audiences = _strings(claims.get("aud")) or []
    if our_issuer.rstrip("/") not in [a.rstrip("/") for a in audiences]:
        raise AssertionRefused(f"The {WHAT} is not for this authorization server (aud).")
    now, leeway = time.time(), float(mcp_settings.JWT_LEEWAY)
    expires, issued = _number(claims, "exp"), _number(claims, "iat")
    if now > expires + leeway:
        raise AssertionRefused(f"The {WHAT} has expired.")
    if issued > now + leeway:
        raise AssertionRefused(f"The {WHAT} is issued in the future (iat).")
    if claims.get("client_id") != client_id:
        raise AssertionRefused(f"The {WHAT} is for another client (client_id).")
    resources = _strings(claims.get("resource"))  # required by the MCP profile (enterprise-managed-authorization §4.3)
    if not resources or not audience_accepted(resources, endpoint_url):
        raise AssertionRefused(f"The {WHAT} is for another resource, or names none (resource).")
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise AssertionRefused(f"The {WHAT} has no subject (sub).")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti or len(jti) > MAX_CLAIM:
        raise AssertionRefused(f"The {WHAT} has no jti.")
    return expires


def spend(issuer: str, jti: str, expires: float) -> None:
    """Record ``jti`` as used until ``expires`` (plus the leeway); ``AssertionRefused`` if it already was."""
    checksum = hashlib.sha256(f"{issuer}\0{jti}".encode()).hexdigest()
    until = datetime.fromtimestamp(expires + float(mcp_settings.JWT_LEEWAY), tz=dt_timezone.utc)
    try:
        with write_transaction(SpentAssertion.objects.db):
            SpentAssertion.objects.filter(expires__lt=timezone.now()).delete()  # past their expiry: harmless
            SpentAssertion.objects.create(checksum=checksum, expires=until)
    except IntegrityError as exc:
        raise AssertionRefused(f"The {WHAT} was already used (jti).") from exc


def exchange(
    assertion: str,
    *,
    our_issuer: str,
    client_id: str,
    endpoint_url: str,
    client_scopes: list[str],
    requested: list[str] | None,
) -> Exchanged:
    """The user and scopes ``assertion`` grants ``client_id`` (already authenticated); ``AssertionRefused`` otherwise.

    Sync: may fetch the issuer's keys, writes the spent ``jti``.
    """
    issuer = claims_issuer(assertion)
    if issuer is None or issuer not in mcp_settings.IDJAG_ISSUERS:
        raise AssertionRefused(f"The {WHAT} is not from a trusted identity provider.")
    try:
        claims = verified_claims(assertion, issuer, ID_JAG_TYPES, WHAT, typ_required=True)
    except TokenRefused as exc:
        raise AssertionRefused(str(exc)) from exc
    expires = _check(claims, issuer, our_issuer, client_id, endpoint_url)
    spend(issuer, str(claims["jti"]), expires)
    try:
        user = find_user(claims, WHAT)
    except TokenRefused as exc:
        raise AssertionRefused(str(exc)) from exc
    scopes = list(client_scopes)
    asserted = _scope_list(claims.get("scope"))
    if asserted is not None:
        scopes = [s for s in scopes if s in asserted]
    if requested is not None:
        scopes = [s for s in scopes if s in requested]
    return Exchanged(user, permitted_scopes(user, scopes))


def _scope_list(value: Any) -> set[str] | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise AssertionRefused(f"The {WHAT}'s scope is malformed.")
    return set(value.split())


__all__ = ["EXTENSION", "GRANT_TYPE", "AssertionRefused", "Exchanged", "exchange", "spend"]
