"""``manage.py mcp_token``: mint an OAuth access token for a user, for scripts, CI and local clients.

The token is an ordinary django-oauth-toolkit AccessToken (stored the way DOT
stores tokens, hashed when DOT hashes them), so the MCP endpoint verifies it
like any other: its user, scopes, expiry and audience (RFC 8707 ``resource``)
all apply, and revoking it in the admin ends it. Without ``--application`` the
token belongs to an application named ``mcp_token``, created on first use; it
has no redirect URI, so nobody can use it to send users through consent.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any
from uuid import uuid4

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone
from oauthlib.common import generate_token

from ...auth.clients import is_client_disabled
from ...conf import mcp_settings
from ..users import active_user

DEFAULT_APPLICATION = "mcp_token"
_DURATION = re.compile(r"^(\d+)([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> int:
    """``3600``, ``90s``, ``30m``, ``12h`` or ``7d`` -> seconds."""
    match = _DURATION.match(text.strip().lower())
    if not match or int(match.group(1)) <= 0:
        raise CommandError(f"--expires {text!r}: give a positive number of seconds, or 30m, 12h, 7d")
    return int(match.group(1)) * _UNITS[match.group(2)]


class Command(BaseCommand):
    help = "Create an OAuth access token (django-oauth-toolkit) for a user and print it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, metavar="USERNAME", help="The user the token acts for.")
        parser.add_argument(
            "--scope",
            action="append",
            metavar="SCOPE",
            help="A scope to grant (repeat, or space-separated). Default: the scopes backend's default scopes.",
        )
        parser.add_argument(
            "--application",
            metavar="CLIENT_ID_OR_NAME",
            help=f"The OAuth application of the token (default: {DEFAULT_APPLICATION!r}, created if missing).",
        )
        parser.add_argument(
            "--expires", default=None, metavar="DURATION", help="Lifetime: seconds, or 30m, 12h, 7d (default: DOT's)."
        )
        parser.add_argument(
            "--resource",
            action="append",
            metavar="URL",
            help="The audience (RFC 8707), e.g. https://example.com/mcp/ (repeatable; needed with REQUIRE_AUDIENCE).",
        )
        parser.add_argument("--refresh", action="store_true", help="Also create a refresh token (printed second).")
        parser.add_argument("--json", action="store_true", help="Print a JSON object instead of the bare token.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not apps.is_installed("oauth2_provider"):
            raise CommandError("mcp_token needs 'oauth2_provider' in INSTALLED_APPS.")
        # reason: DOT's models need it in INSTALLED_APPS
        from oauth2_provider.models import get_access_token_model, get_refresh_token_model, set_token_value
        from oauth2_provider.scopes import get_scopes_backend  # reason: DOT loads only once handle() found it installed
        from oauth2_provider.settings import oauth2_settings  # reason: DOT loads only once handle() found it installed

        user = active_user(options["user"])
        application = self.load_application(options.get("application"))
        if is_client_disabled(application):
            raise CommandError(f"Application {application.client_id!r} is disabled in the admin.")
        backend = get_scopes_backend()
        known = set(backend.get_all_scopes())
        scopes = [s for chunk in options.get("scope") or [] for s in chunk.split()]
        if not scopes:
            scopes = list(backend.get_default_scopes(application=application))
        unknown = sorted(set(scopes) - known)
        if unknown:
            raise CommandError(f"Unknown scope(s) {', '.join(unknown)}; known: {', '.join(sorted(known)) or 'none'}")
        resources = list(options.get("resource") or [])
        if not resources and self.audience_required():
            raise CommandError(
                "Give --resource with the MCP endpoint's URL (e.g. https://example.com/mcp/): "
                "DJANGO_MCP['REQUIRE_AUDIENCE'] refuses tokens without an audience."
            )
        seconds = (
            parse_duration(options["expires"])
            if options.get("expires")
            else oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS
        )
        raw = generate_token()
        refresh_raw = generate_token() if options.get("refresh") else None
        with transaction.atomic():
            token = get_access_token_model()(
                user=user,
                application=application,
                scope=" ".join(scopes),
                expires=timezone.now() + timedelta(seconds=seconds),
                resource=resources,
            )
            set_token_value(token, raw)
            token.save()
            if refresh_raw is not None:
                # A family, as DOT's own issuance gives one: refresh reuse protection revokes by it, and an MCP
                # task created with the access token follows it to the refreshed token (django_mcp.auth.grants).
                refresh = get_refresh_token_model()(
                    user=user, application=application, access_token=token, resource=resources, token_family=uuid4()
                )
                set_token_value(refresh, refresh_raw)
                refresh.save()
        if options.get("json"):
            out: dict[str, Any] = {
                "access_token": raw,
                "token_type": "Bearer",
                "expires_in": seconds,
                "scope": " ".join(scopes),
            }
            if refresh_raw is not None:
                out["refresh_token"] = refresh_raw
            self.stdout.write(json.dumps(out))
            return
        self.stdout.write(raw)
        if refresh_raw is not None:
            self.stdout.write(refresh_raw)
        if int(options.get("verbosity", 1)) > 1:
            self.stderr.write(
                f"Access token for {user} ({application.client_id}), scopes {' '.join(scopes) or '-'}, "
                f"valid {seconds}s. Send it as 'Authorization: Bearer <token>'."
            )

    @staticmethod
    def audience_required() -> bool:
        return bool(mcp_settings.AUTH == "oauth" and mcp_settings.REQUIRE_AUDIENCE)

    @staticmethod
    def load_application(ref: str | None) -> Any:
        from oauth2_provider.models import get_application_model  # reason: DOT's models need it in INSTALLED_APPS

        model = get_application_model()
        if ref is None:
            app = model.objects.filter(name=DEFAULT_APPLICATION, redirect_uris="").order_by("pk").first()
            if app is None:
                app = model.objects.create(
                    name=DEFAULT_APPLICATION,
                    client_type=model.CLIENT_CONFIDENTIAL,
                    authorization_grant_type=model.GRANT_CLIENT_CREDENTIALS,
                    redirect_uris="",
                )
            return app
        app = model.objects.filter(client_id=ref).first()
        if app is not None:
            return app
        named = list(model.objects.filter(name=ref)[:2])
        if len(named) == 1:
            return named[0]
        if named:
            raise CommandError(f"Several applications are named {ref!r}: give its client ID")
        raise CommandError(f"No OAuth application with client ID or name {ref!r}")
