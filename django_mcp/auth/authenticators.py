"""The project's own API tokens at the MCP endpoint: DRF-style authentication classes.

``DJANGO_MCP["AUTHENTICATION_CLASSES"]`` names classes whose ``authenticate(request)`` returns
``(user, auth)``, ``None`` (not its token) or raises (DRF's ``AuthenticationFailed`` /
``NotAuthenticated`` / ``PermissionDenied``, Django's ``PermissionDenied``). They run on a
Django request carrying the client's real headers and address, so the project's own rules
(expiry, allowed addresses, an inactive user) decide as they do for its REST API. The
``auth`` they return travels with the call (``AuthInfo.token``); ``TOKEN_SCOPES`` maps
``(user, auth)`` to the site's OAuth scopes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.handlers.asgi import ASGIRequest
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from ..conf import mcp_settings

#: Longest refusal message an authenticator's exception may put in the answer and the header.
MAX_MESSAGE = 200
#: What a class's refusal says when its message is empty.
DEFAULT_MESSAGE = "The access token is invalid."
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]+")


class Refused(Exception):
    """An authenticator refused the credentials: the message is safe to show (bounded, printable ASCII)."""


_classes: list[type] | None = None


def _reset(*, setting: str, **kwargs: Any) -> None:
    global _classes
    if setting == "DJANGO_MCP":
        _classes = None


setting_changed.connect(_reset)


def authentication_classes() -> list[type]:
    """The configured classes, imported once (``manage.py check`` reports a bad entry: ``E220``/``E221``)."""
    global _classes
    if _classes is None:
        _classes = [import_string(c) if isinstance(c, str) else c for c in mcp_settings.AUTHENTICATION_CLASSES]
    return _classes


def keyword(cls: type) -> str | None:
    """The ``Authorization`` scheme a class reads (DRF's ``TokenAuthentication.keyword``), if it says."""
    value = getattr(cls, "keyword", None)
    return value if isinstance(value, str) and value else None


def schemes() -> set[str]:
    """Every ``Authorization`` scheme that reaches the classes, lower case: ``bearer`` and their keywords."""
    found = {"bearer"}
    found.update(k.lower() for k in map(keyword, authentication_classes()) if k)
    return found


def safe_message(exc: BaseException) -> str:
    """An exception's message fit for a header and a client: printable ASCII, at most ``MAX_MESSAGE`` chars."""
    detail = getattr(exc, "detail", None)
    text = str(detail if detail is not None else exc)
    text = _UNPRINTABLE.sub(" ", text).strip()
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 3].rstrip() + "..."
    return text or DEFAULT_MESSAGE


def _is_refusal(exc: Exception) -> bool:
    if isinstance(exc, PermissionDenied):
        return True
    try:
        from rest_framework import exceptions  # reason: DRF is optional; its refusals are recognised when present
    except ImportError:
        return False
    return isinstance(exc, (exceptions.AuthenticationFailed, exceptions.NotAuthenticated, exceptions.PermissionDenied))


def _request(scope: dict[str, Any], scheme: str, credentials: str, cls: type) -> Any:
    """The request a class sees: the client's headers and address; a Bearer header in the class's own scheme.

    A class that names its ``keyword`` (DRF's ``TokenAuthentication``: ``Token``) gets a
    ``Bearer <key>`` header as ``<keyword> <key>``, because MCP hosts send ``Bearer``.
    """
    request = ASGIRequest({**scope, "query_string": b""}, io.BytesIO(b""))
    own = keyword(cls)
    if own is not None and scheme == "bearer" and own.lower() != "bearer":
        request.META["HTTP_AUTHORIZATION"] = f"{own} {credentials}"
    try:
        from rest_framework.request import Request  # reason: DRF is optional; DRF's classes expect its Request
    except ImportError:
        return request
    return Request(request)


def run(scope: dict[str, Any], scheme: str, credentials: str) -> tuple[Any, Any, str] | None:
    """``(user, auth, class path)`` of the first class that accepts the credentials; None when none does.

    Sync (the classes query the database): the caller runs it in the bookkeeping pool. Raises
    ``Refused`` with the class's message when one refuses; any other exception is the class's bug.
    """
    for cls in authentication_classes():
        own = keyword(cls)
        if own is not None and scheme not in ("bearer", own.lower()):
            continue
        try:
            result = cls().authenticate(_request(scope, scheme, credentials, cls))
        except Exception as exc:
            if _is_refusal(exc):
                raise Refused(safe_message(exc)) from exc
            raise
        if result is not None:
            user, auth = result
            return user, auth, f"{cls.__module__}.{cls.__qualname__}"
    return None


def token_scopes(user: Any, auth: Any, site_scopes: Iterable[str]) -> frozenset[str]:
    """What a project token may do, as the site's OAuth scopes: ``TOKEN_SCOPES(user, auth)`` or all of them.

    The hook returns scope names (or None: every scope of the site); names the site does not
    have are dropped.
    """
    site = frozenset(site_scopes)
    hook = mcp_settings.TOKEN_SCOPES
    if hook is None:
        return site
    if isinstance(hook, str):
        hook = import_string(hook)
    granted = hook(user, auth)
    return site if granted is None else site & frozenset(granted)


__all__ = ["Refused", "authentication_classes", "run", "safe_message", "schemes", "token_scopes"]
