"""What an OAuth grant allows now: the rights a piece of work (an MCP task) runs with, re-read when it runs.

A task outlives the request that created it, so it keeps a reference to the access token
that authorized it instead of the token's rights: the token's primary key and its refresh
token family. django-oauth-toolkit revokes an access token by deleting its row (the revoke
endpoint, the admin, ``django_mcp.auth.clients.revoke_tokens`` when a client is disabled),
and refreshing it deletes the old row too, leaving the family's next token in its place.
So the grant stands while the token still exists, or while its family still holds an
unrevoked refresh token; its rights are those of whichever token that is, as they are now.
Nothing is pushed to a worker: it asks here, whichever process revoked the token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..models import MCPClient
from .clients import oauth_installed

#: Why a grant no longer stands: the words a refused task's error and statusMessage carry.
REVOKED = "The access token that created this task was revoked"
CLIENT_DISABLED = "The OAuth client that created this task was disabled"


@dataclass(frozen=True)
class Grant:
    """A reference to the token behind some work: its primary key and refresh token family ("": none)."""

    token_id: str = ""
    family: str = ""


@dataclass(frozen=True)
class Standing:
    """A grant as it is now: the current token's scopes, or why it no longer stands (``refusal``).

    ``scopes`` None: no token limits the work by scope (it was created without one).
    """

    scopes: frozenset[str] | None = frozenset()
    refusal: str = ""


def grant_of(auth: Any) -> Grant:
    """The grant behind ``auth`` (an ``AuthInfo``); empty without a stored token (the test client, stdio ``--user``).

    Sync: one query for the token's refresh token family.
    """
    token = getattr(auth, "token", None)
    if getattr(auth, "authenticator", ""):  # the project's own API token, not a DOT row: nothing to follow
        return Grant()
    if token is None or getattr(token, "pk", None) is None or not oauth_installed():
        return Grant()
    from oauth2_provider.models import get_refresh_token_model  # reason: DOT's models need it in INSTALLED_APPS

    family = (
        get_refresh_token_model()
        .objects.filter(access_token_id=token.pk)
        .exclude(token_family=None)
        .values_list("token_family", flat=True)
        .first()
    )
    return Grant(str(token.pk), str(family) if family else "")


def client_disabled(client_id: str) -> bool:
    return bool(client_id) and MCPClient.objects.filter(client_id=client_id, disabled=True).exists()


def standing(grant: Grant, client_id: str) -> Standing:
    """Whether ``grant`` (of OAuth client ``client_id``) still stands, and the scopes it grants now (sync).

    Refused when an administrator disabled the client, or when neither the token nor a live
    successor from its refresh family exists any more (revoked: deleted, or its family revoked).
    """
    if client_disabled(client_id):
        return Standing(refusal=CLIENT_DISABLED)
    if not grant.token_id or not oauth_installed():
        return Standing(refusal=REVOKED)
    # reason: DOT's models need it in INSTALLED_APPS
    from oauth2_provider.models import get_access_token_model, get_refresh_token_model

    scope = get_access_token_model().objects.filter(pk=grant.token_id).values_list("scope", flat=True).first()
    if scope is None and grant.family:
        # Refreshed since: the family's one unrevoked refresh token is bound to the token in force now.
        scope = (
            get_refresh_token_model()
            .objects.filter(token_family=grant.family, revoked__isnull=True, access_token__isnull=False)
            .values_list("access_token__scope", flat=True)
            .first()
        )
    if scope is None:
        return Standing(refusal=REVOKED)
    return Standing(scopes=frozenset(str(scope).split()))


__all__ = ["CLIENT_DISABLED", "REVOKED", "Grant", "Standing", "client_disabled", "grant_of", "standing"]
