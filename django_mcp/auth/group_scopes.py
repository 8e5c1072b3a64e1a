"""Scopes reserved to groups: ``DJANGO_MCP["SCOPE_GROUPS"]`` decides who may hold a scope.

DOT issues a scope to whoever consents to it; a company wants "only librarians may
lend books", with librarians being a group at its identity provider. The project's
login (an OIDC relying party, docs/auth.md) copies the IdP's groups onto the Django
user's groups at each sign-in; this module then narrows every scope list DOT is about
to show or issue -- the consent page, the authorization code, each token and refresh --
to the scopes the user's groups allow. A scope not named in the setting stays open to
every user; a listed one needs membership of one of its groups (docs/auth-internals.md, "Scopes
reserved to groups").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..conf import mcp_settings


def permitted_scopes(user: Any, scopes: Iterable[str]) -> list[str]:
    """``scopes`` without those ``SCOPE_GROUPS`` reserves to groups ``user`` is not in (order kept).

    One query, only when a requested scope is reserved; an anonymous or missing user holds no reserved scope.
    """
    scopes = list(scopes)
    rules: dict[str, list[str]] = {s: list(g) for s, g in mcp_settings.SCOPE_GROUPS.items()}
    reserved = [s for s in scopes if s in rules]
    if not reserved:
        return scopes
    mine: set[str] = set()
    if user is not None and getattr(user, "is_authenticated", False) and user.pk is not None:
        wanted = {g for s in reserved for g in rules[s]}
        mine = set(user.groups.filter(name__in=wanted).values_list("name", flat=True))
    return [s for s in scopes if s not in rules or mine.intersection(rules[s])]


__all__ = ["permitted_scopes"]
