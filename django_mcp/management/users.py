"""The one way management commands name a user: active, by natural key, or a ``CommandError``."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def active_user(username: str) -> Any:
    """The active user called ``username``; commands never fall back to another user."""
    model = get_user_model()
    try:
        user = model._default_manager.get_by_natural_key(username)
    except model.DoesNotExist:
        raise CommandError(f"No user named {username!r}") from None
    if not user.is_active:
        raise CommandError(f"User {username!r} is inactive")
    return user


def any_user(username: str) -> Any:
    """The user called ``username``, active or not (revoking what a deactivated account still holds)."""
    model = get_user_model()
    try:
        return model._default_manager.get_by_natural_key(username)
    except model.DoesNotExist:
        raise CommandError(f"No user named {username!r}") from None
