"""RFC 7591 initial access tokens: how staff let one registration create a machine client.

Staff issue one with ``manage.py mcp_client initial-token`` (printed once; only
its SHA-256 is stored). A registration presenting it as ``Authorization: Bearer``
may ask for ``client_credentials``; the client gets the token's scopes and
service user, and each registration uses the token up once (``uses_left``).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ..models import InitialAccessToken


def checksum(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def issue(
    *,
    scopes: list[str],
    service_user: Any = None,
    uses: int | None = 1,
    seconds: int | None = None,
    description: str = "",
) -> str:
    """Create an initial access token; the raw value (shown once, never stored)."""
    raw = secrets.token_urlsafe(32)
    InitialAccessToken.objects.create(
        token_checksum=checksum(raw),
        scopes=" ".join(scopes),
        service_user=service_user,
        uses_left=uses,
        expires=timezone.now() + timedelta(seconds=seconds) if seconds else None,
        description=description,
    )
    return raw


def find(raw: str) -> InitialAccessToken | None:
    """The live token matching ``raw`` (not expired, not used up), or None."""
    token: InitialAccessToken | None = (
        InitialAccessToken.objects.filter(token_checksum=checksum(raw)).select_related("service_user").first()
    )
    if token is None or (token.expires is not None and token.expires <= timezone.now()):
        return None
    if token.uses_left is not None and token.uses_left <= 0:
        return None
    return token


def use(token: InitialAccessToken) -> bool:
    """Spend one use (inside the registration's transaction); False when another request took the last one."""
    if token.uses_left is None:
        return True
    with transaction.atomic():
        n = InitialAccessToken.objects.filter(pk=token.pk, uses_left__gt=0).update(uses_left=F("uses_left") - 1)
    return bool(n)


__all__ = ["checksum", "find", "issue", "use"]
