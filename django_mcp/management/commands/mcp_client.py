"""``manage.py mcp_client``: staff create OAuth clients and initial access tokens for the MCP endpoint.

Open registration (RFC 7591) only creates authorization-code clients, which act for a
user who consents. A machine client (``client_credentials``) acts as a service user
with that user's permissions and may ask only for the scopes listed here, so staff
create it, or issue an initial access token that lets one registration create it.

    manage.py mcp_client create --name ci --grant client_credentials --scopes "mcp books:read" --service-user ci-bot
    manage.py mcp_client initial-token --scopes mcp --service-user ci-bot --uses 1 --expires 1d
    manage.py mcp_client set CLIENT_ID --scopes "mcp" [--service-user NAME]

Secrets and tokens are printed once; only hashes are stored.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from ...auth import initial_tokens
from ...auth.registration import redirect_uri_allowed
from ...auth_clients import applications
from ...models import MCPClient
from ..users import active_user
from .mcp_token import parse_duration

GRANTS = {"client_credentials": "client-credentials", "authorization_code": "authorization-code"}


def _scopes(text: list[str] | None) -> list[str]:
    from oauth2_provider.scopes import get_scopes_backend  # reason: DOT loads only once handle() found it installed

    scopes = sorted({s for chunk in text or [] for s in chunk.split()})
    known = set(get_scopes_backend().get_all_scopes())
    unknown = sorted(set(scopes) - known)
    if unknown:
        raise CommandError(f"Unknown scope(s) {', '.join(unknown)}; known: {', '.join(sorted(known)) or 'none'}")
    return scopes


class Command(BaseCommand):
    help = "Create OAuth clients (machine clients included) and RFC 7591 initial access tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a client; prints its client_id and secret (once).")
        create.add_argument("--name", required=True)
        create.add_argument("--grant", choices=sorted(GRANTS), default="client_credentials")
        create.add_argument("--scopes", action="append", required=True, help="Scopes it may request (space-separated).")
        create.add_argument("--service-user", metavar="USERNAME", help="The account its machine tokens act as.")
        create.add_argument("--redirect-uri", action="append", default=[], help="For authorization_code clients.")
        create.add_argument("--public", action="store_true", help="A public client (no secret; PKCE).")
        token = sub.add_parser("initial-token", help="Issue an initial access token for one trusted registration.")
        token.add_argument("--scopes", action="append", required=True)
        token.add_argument("--service-user", metavar="USERNAME")
        token.add_argument("--uses", type=int, default=1, help="Registrations it allows (0: unlimited). Default 1.")
        token.add_argument("--expires", metavar="DURATION", default="1d", help="Lifetime: 30m, 12h, 7d (default 1d).")
        token.add_argument("--description", default="")
        edit = sub.add_parser("set", help="Change a client's allowed scopes or service user.")
        edit.add_argument("client_id")
        edit.add_argument("--scopes", action="append")
        edit.add_argument("--service-user", metavar="USERNAME")

    def handle(self, *args: Any, **options: Any) -> None:
        if not apps.is_installed("oauth2_provider"):
            raise CommandError("mcp_client needs 'oauth2_provider' in INSTALLED_APPS.")
        getattr(self, "do_" + options["action"].replace("-", "_"))(options)

    def do_create(self, options: dict[str, Any]) -> None:
        # reason: DOT loads only once handle() found it installed
        from oauth2_provider.generators import generate_client_secret
        from oauth2_provider.models import get_application_model  # reason: DOT's models need it in INSTALLED_APPS

        scopes = _scopes(options["scopes"])
        grant = options["grant"]
        user = active_user(options["service_user"]) if options.get("service_user") else None
        if grant == "client_credentials":
            if user is None:
                raise CommandError("A client_credentials client needs --service-user: its tokens act as that account.")
            if options["public"]:
                raise CommandError("A client_credentials client is confidential: drop --public.")
        uris = options["redirect_uri"]
        if grant == "authorization_code" and not uris:
            raise CommandError("An authorization_code client needs --redirect-uri.")
        bad = [u for u in uris if not redirect_uri_allowed(u)]
        if bad:
            raise CommandError(f"Redirect URI {bad[0]!r}: https, or http on a loopback address, only.")
        model = get_application_model()
        secret = "" if options["public"] else generate_client_secret()
        with transaction.atomic():
            app = model.objects.create(
                name=options["name"],
                client_type=model.CLIENT_PUBLIC if options["public"] else model.CLIENT_CONFIDENTIAL,
                authorization_grant_type=GRANTS[grant],
                client_secret=secret,
                redirect_uris=" ".join(uris),
            )
            MCPClient.objects.update_or_create(
                client_id=app.client_id, defaults={"allowed_scopes": " ".join(scopes), "service_user": user}
            )
        self.stdout.write(f"client_id {app.client_id}")
        if secret:
            self.stdout.write(f"client_secret {secret}")

    def do_initial_token(self, options: dict[str, Any]) -> None:
        scopes = _scopes(options["scopes"])
        user = active_user(options["service_user"]) if options.get("service_user") else None
        if options["uses"] < 0:
            raise CommandError("--uses: 0 (unlimited) or more")
        raw = initial_tokens.issue(
            scopes=scopes,
            service_user=user,
            uses=options["uses"] or None,
            seconds=parse_duration(options["expires"]),
            description=options["description"],
        )
        self.stdout.write(raw)

    def do_set(self, options: dict[str, Any]) -> None:
        if not applications([options["client_id"]]).exists():
            raise CommandError(f"No OAuth application with client ID {options['client_id']!r}")
        record = MCPClient.objects.get_or_create(client_id=options["client_id"])[0]
        if options.get("scopes") is not None:
            record.allowed_scopes = " ".join(_scopes(options["scopes"]))
        if options.get("service_user"):
            record.service_user = active_user(options["service_user"])
        record.save()
        scopes = record.allowed_scopes or "-"
        self.stdout.write(f"{record.client_id}: scopes {scopes}, service user {record.service_user or '-'}")
