"""DOT's request validator with the MCP rules it cannot express by settings alone."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.db import router
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings

from ..conf import mcp_settings
from ..models import SpentAuthorizationCode
from ..state.writelock import write_transaction
from .clients import allowed_scopes, is_client_disabled, service_user
from .group_scopes import permitted_scopes
from .registration import redirect_uri_allowed


def _checksum(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class MCPOAuth2Validator(OAuth2Validator):  # type: ignore[misc]  # DOT ships no type hints
    """``OAUTH2_PROVIDER["OAUTH2_VALIDATOR_CLASS"]`` for an MCP site.

    Redirect URIs must be https or loopback http, also for clients registered by
    hand or through a Client ID Metadata Document. A client asks only for the
    scopes staff allowed it (``MCPClient.allowed_scopes``); a client credentials
    client needs allowed scopes and a service user, or gets no token. Replaying an
    authorization code revokes what its first exchange issued (RFC 9700 §4.2.2).
    PKCE (required, S256 only) is DOT's own: ``PKCE_REQUIRED`` and
    ``COMPLIANT_BCP_RFC9700_PKCE_METHOD``, both enforced by the system checks.
    """

    def validate_redirect_uri(self, client_id: str, redirect_uri: str, request: Any, *args: Any, **kwargs: Any) -> bool:
        if not redirect_uri_allowed(redirect_uri):
            return False
        return bool(super().validate_redirect_uri(client_id, redirect_uri, request, *args, **kwargs))

    def _load_application(self, client_id: str, request: Any) -> Any:
        """A client disabled in the admin does not exist for the authorization and token endpoints."""
        application = super()._load_application(client_id, request)
        if application is not None and is_client_disabled(application):
            request.client = None
            return None
        return application

    # -- what a client may ask for ---------------------------------------------------------------
    def validate_grant_type(
        self, client_id: str, grant_type: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if not super().validate_grant_type(client_id, grant_type, client, request, *args, **kwargs):
            return False
        if grant_type == "client_credentials":
            # A machine token acts as a service user or not at all (see docs/auth.md).
            user = service_user(client)
            return bool(user is not None and user.is_active)
        return True

    def validate_scopes(
        self, client_id: str, scopes: list[str], client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if not super().validate_scopes(client_id, scopes, client, request, *args, **kwargs):
            return False
        allowed = allowed_scopes(client)
        if allowed is None:
            # No list: a user consents to each scope; a machine client gets nothing nobody approved.
            return getattr(request, "grant_type", None) != "client_credentials"
        return set(scopes).issubset(allowed)

    def validate_refresh_token(self, refresh_token: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        # DOT refreshes for an inactive user; its tokens would be refused at the endpoint, but a deactivated
        # account is issued nothing at all (invalid_grant), as for a code.
        if not super().validate_refresh_token(refresh_token, client, request, *args, **kwargs):
            return False
        return _active(request)

    # -- scopes reserved to groups (SCOPE_GROUPS) ---------------------------------------------------
    def save_authorization_code(self, client_id: str, code: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        # The consent form's scope field comes back from the browser: narrowed again, not trusted.
        request.scopes = permitted_scopes(getattr(request, "user", None), request.scopes or [])
        return super().save_authorization_code(client_id, code, request, *args, **kwargs)

    # -- authorization code replay ---------------------------------------------------------------
    def save_bearer_token(self, token: dict[str, Any], request: Any, *args: Any, **kwargs: Any) -> Any:
        # Every grant (code, refresh, client credentials) ends here: a user who left a group since the
        # authorization gets the narrower token at the next refresh. ``token`` is the response sent.
        if "scope" in token and mcp_settings.SCOPE_GROUPS:
            # A machine token acts as its client's service user (docs/auth.md): that user's groups decide.
            machine = getattr(request, "grant_type", None) == "client_credentials"
            user = service_user(request.client) if machine else getattr(request, "user", None)
            scopes = permitted_scopes(user, str(token["scope"]).split())
            token["scope"] = " ".join(scopes)
            request.scopes = scopes
        # django-oauth-toolkit's own atomic block reads before it writes (a refresh: the old tokens,
        # select_for_update, then deletes them): on SQLite that upgrade failed at once with "database is
        # locked" (a 500 at the token endpoint) when another connection wrote meanwhile (seen in CI).
        with write_transaction(router.db_for_write(get_access_token_model())):
            result = super().save_bearer_token(token, request, *args, **kwargs)
        if getattr(request, "grant_type", None) == "authorization_code":
            request.mcp_issued = (token.get("access_token") or "", token.get("refresh_token") or "")
        return result

    def invalidate_authorization_code(self, client_id: str, code: str, request: Any, *args: Any, **kwargs: Any) -> None:
        super().invalidate_authorization_code(client_id, code, request, *args, **kwargs)

        access, refresh = getattr(request, "mcp_issued", ("", ""))
        SpentAuthorizationCode.objects.get_or_create(
            code_checksum=_checksum(code),
            defaults={
                "client_id": client_id or getattr(request.client, "client_id", ""),
                "access_token_checksum": _checksum(access) if access else "",
                "refresh_token_checksum": _checksum(refresh) if refresh else "",
            },
        )

    def validate_code(self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            # A user deactivated since consenting (left the company, disabled by the IdP's deprovisioning)
            # gets nothing for the code (invalid_grant).
            return _active(request)
        revoke_spent_code(code, getattr(client, "client_id", client_id))
        return False


def _active(request: Any) -> bool:
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_active)


def revoke_spent_code(code: str, client_id: str) -> int:
    """When ``code`` was already exchanged by ``client_id``: revoke the tokens that exchange issued
    (and their whole refresh family, rotations included). The number of access tokens revoked."""
    spent = SpentAuthorizationCode.objects.filter(code_checksum=_checksum(code), client_id=client_id).first()
    if spent is None:
        return 0
    access_model, refresh_model = get_access_token_model(), get_refresh_token_model()
    with write_transaction():
        n = 0
        if spent.refresh_token_checksum:
            refresh = refresh_model.objects.filter(token_checksum=spent.refresh_token_checksum).first()
            if refresh is not None:
                if refresh.token_family:
                    family = refresh_model.objects.filter(token_family=refresh.token_family)
                    n += access_model.objects.filter(pk__in=family.values("access_token_id")).count()
                    refresh_model.revoke_family(refresh.token_family)
                else:
                    refresh.revoke()
        if spent.access_token_checksum:
            n += access_model.objects.filter(token_checksum=spent.access_token_checksum).delete()[0]
        spent.access_token_checksum = spent.refresh_token_checksum = ""
        spent.save(update_fields=["access_token_checksum", "refresh_token_checksum"])
    return n


def prune_spent_codes(older_than_seconds: int | None = None, dry_run: bool = False) -> int:
    """Forget spent codes older than the refresh-token lifetime (by then their tokens are dead anyway).

    For a periodic cleanup (``mcp_cleanup``); the number of rows deleted (counted only with ``dry_run``).
    """
    seconds = older_than_seconds or oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS or 30 * 24 * 3600
    cutoff = timezone.now() - timedelta(seconds=int(seconds))
    old = SpentAuthorizationCode.objects.filter(created__lt=cutoff)
    return int(old.count() if dry_run else old.delete()[0])


__all__ = ["MCPOAuth2Validator", "prune_spent_codes", "revoke_spent_code"]
