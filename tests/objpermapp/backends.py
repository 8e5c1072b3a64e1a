"""Sign-in for ``Member``, the custom user model (next to ``auth.User``, which the rest of the suite uses)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import BaseBackend

from .models import Member


class MemberBackend(BaseBackend):
    def authenticate(  # type: ignore[override]
        self, request: Any, username: str | None = None, password: str | None = None
    ) -> Member | None:
        member = Member.objects.filter(username=username).first()
        return member if member is not None and password and member.check_password(password) else None

    def get_user(self, user_id: Any) -> Member | None:  # type: ignore[override]
        found: Member | None = Member.objects.filter(pk=user_id).first()
        return found
