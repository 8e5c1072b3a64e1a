"""The relying party's user mapping, as docs/auth.md's recipe writes it: the IdP's ``sub`` names the Django
user, its ``groups`` claim sets the user's Django groups (their permissions, and through ``SCOPE_GROUPS`` the
MCP scopes the user may hold) at each sign-in. A tampered callback (state, nonce) is a one-line 400."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView

log = logging.getLogger("books.login")


class CompanyIdPCallback(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """mozilla-django-oidc refuses a callback whose state or nonce is not this browser's (SuspiciousOperation);
    answered here as a plain 400 with one log line instead of Django's error log with a traceback."""

    def get(self, request: HttpRequest) -> HttpResponse:
        try:
            response: HttpResponse = super().get(request)
        except SuspiciousOperation as refused:
            log.warning("OIDC sign-in refused: %s", refused)
            return HttpResponseBadRequest("Sign-in refused: start again from the application.")
        return response


class CompanyIdP(OIDCAuthenticationBackend):  # type: ignore[misc]
    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        # By the IdP's stable subject, never by email: two IdP accounts sharing an email stay two users.
        sub = claims.get("sub")
        return self.UserModel.objects.filter(username=f"idp-{sub}") if sub else self.UserModel.objects.none()

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    def create_user(self, claims: dict[str, Any]) -> Any:
        user = self.UserModel.objects.create_user(f"idp-{claims['sub']}", email=claims.get("email", ""))
        return self.update_user(user, claims)

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        user.email = claims.get("email", "")[:254]
        user.first_name = str(claims.get("name", ""))[:150]
        user.save(update_fields=["email", "first_name"])
        # Only groups this site already has: the IdP cannot create groups (or their permissions) here.
        names = [g for g in claims.get("groups", []) if isinstance(g, str)]
        user.groups.set(Group.objects.filter(name__in=names))
        return user
