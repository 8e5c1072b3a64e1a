"""``manage.py mcp_client``: staff create OAuth clients and initial access tokens for the MCP endpoint.

Open registration (RFC 7591) only creates authorization-code clients, which act for a
user who consents. A machine client (``client_credentials``) acts as a service user
with that user's permissions and may ask only for the scopes listed here, so staff
create it, or issue an initial access token that lets one registration create it.

    manage.py mcp_client create --name ci --grant client_credentials --scopes "mcp books:read" --service-user ci-bot
    manage.py mcp_client initial-token --scopes mcp --service-user ci-bot --uses 1 --expires 1d
    manage.py mcp_client set CLIENT_ID --scopes "mcp" [--service-user NAME]

And what the admin's MCP clients page does, for projects without the admin:

    manage.py mcp_client list [--disabled] [--format csv]
    manage.py mcp_client show CLIENT                 # a client ID, or a name only one client has
    manage.py mcp_client disable CLIENT [CLIENT ...] # refused at once, every token revoked, sessions ended
    manage.py mcp_client enable CLIENT [CLIENT ...]
    manage.py mcp_client revoke CLIENT [CLIENT ...]  # every token of the clients; they stay enabled
    manage.py mcp_client revoke --user alice [CLIENT ...]  # every token of a user (through these clients)
    manage.py mcp_client initial-tokens              # the initial access tokens not yet used up
    manage.py mcp_client delete-initial-token ID     # revoke one (the admin deletes it)

Secrets and tokens are printed once; only hashes are stored.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from ...auth import initial_tokens
from ...auth.clients import (
    applications,
    disable_clients,
    enable_clients,
    last_use,
    registration_scope,
    revoke_tokens,
    revoke_user_tokens,
    with_activity,
)
from ...auth.registration import redirect_uri_allowed
from ...models import InitialAccessToken, MCPClient, MCPSession
from ..arguments import bounded, short_id, shown
from ..output import add_format_argument, write
from ..users import active_user, any_user
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
        listing = sub.add_parser("list", help="Every client: registration, last use, live tokens, state.")
        listing.add_argument("--disabled", action="store_true", help="Only disabled clients.")
        add_format_argument(listing)
        show = sub.add_parser("show", help="One client: registration, scopes, service user, tokens, open sessions.")
        show.add_argument("client", metavar="CLIENT", help="Its client ID, or a name only one client has.")
        add_format_argument(show)
        for action, text in (
            ("disable", "Disable clients: refused everywhere at once; every token and grant revoked, sessions ended."),
            ("enable", "Enable disabled clients again (their revoked tokens stay revoked)."),
        ):
            cmd = sub.add_parser(action, help=text)
            cmd.add_argument("clients", nargs="+", metavar="CLIENT", help="Client IDs, or names one client has.")
        revoke = sub.add_parser(
            "revoke", help="Revoke every token of clients, or of a user (--user, through the clients given if any)."
        )
        revoke.add_argument("clients", nargs="*", metavar="CLIENT", help="Client IDs, or names one client has.")
        revoke.add_argument("--user", metavar="USERNAME", help="Revoke this user's tokens (active or not).")
        iats = sub.add_parser("initial-tokens", help="Initial access tokens: id, scopes, service user, uses, expiry.")
        add_format_argument(iats)
        drop = sub.add_parser("delete-initial-token", help="Revoke initial access tokens (by the ids they list).")
        drop.add_argument("ids", nargs="+", type=int, metavar="ID")

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

    # -- what the admin's MCP clients page does ---------------------------------------------------------
    @staticmethod
    def client_id(ref: str) -> str:
        """The client ID ``ref`` names: a client ID, or a name exactly one application has."""
        bounded("CLIENT", ref, 255)
        if applications([ref]).exists() or MCPClient.objects.filter(client_id=ref).exists():
            return ref
        from oauth2_provider.models import get_application_model  # reason: DOT's models need it in INSTALLED_APPS

        named = list(get_application_model().objects.filter(name=ref).values_list("client_id", flat=True)[:2])
        if len(named) == 1:
            return str(named[0])
        if named:
            raise CommandError(f"Several clients are named {shown(ref)}: give its client ID")
        raise CommandError(f"No OAuth client with client ID or name {shown(ref)}")

    def do_list(self, options: dict[str, Any]) -> None:
        clients = with_activity(MCPClient.objects.order_by("client_id"))
        if options["disabled"]:
            clients = clients.filter(disabled=True)
        rows = (
            {
                "client_id": c.client_id,
                "name": getattr(c, "_name", None) or "",
                "registration": getattr(c, "_source", None) or "",
                "registered": getattr(c, "_registered", None),
                "last_use": last_use(c),
                "active_tokens": getattr(c, "_tokens", None) or 0,
                "state": "disabled" if c.disabled else "enabled",
                "scopes": c.allowed_scopes,
            }
            for c in clients
        )
        columns = ("client_id", "name", "registration", "registered", "last_use", "active_tokens", "state", "scopes")
        write(self.stdout, rows, columns, options["format"])

    def do_show(self, options: dict[str, Any]) -> None:
        from oauth2_provider.models import get_access_token_model  # reason: DOT's models need it in INSTALLED_APPS

        client_id = self.client_id(options["client"])
        record = MCPClient.objects.get_or_create(client_id=client_id)[0]
        c = with_activity(MCPClient.objects.filter(pk=record.pk)).select_related("service_user").get()
        app = applications([client_id]).first()
        facts: list[dict[str, Any]] = [
            {"field": "client_id", "value": c.client_id},
            {"field": "name", "value": getattr(c, "_name", None) or ""},
            {"field": "registration", "value": getattr(c, "_source", None) or ""},
            {"field": "registered", "value": getattr(c, "_registered", None)},
            {"field": "grant_type", "value": f"{app.authorization_grant_type} ({app.client_type})" if app else ""},
            {"field": "redirect_uris", "value": " ".join(app.redirect_uris.split()) if app else ""},
            {"field": "allowed_scopes", "value": c.allowed_scopes},
            {"field": "service_user", "value": str(c.service_user or "")},
            {"field": "state", "value": "disabled" if c.disabled else "enabled"},
            {"field": "disabled_at", "value": c.disabled_at},
            {"field": "last_use", "value": last_use(c)},
            {"field": "active_tokens", "value": getattr(c, "_tokens", None) or 0},
        ]
        registration = registration_scope()
        tokens = (
            get_access_token_model()
            .objects.filter(application__client_id=client_id)
            .exclude(scope=registration)
            .select_related("user")
            .order_by("-created")[:50]
        )
        facts += [
            {"field": f"token #{t.pk}", "value": f"{t.user or '-'} · {t.scope} · expires {t.expires.isoformat()}"}
            for t in tokens
        ]
        sessions = MCPSession.objects.filter(oauth_client=client_id, ended__isnull=True).select_related("user")[:50]
        facts += [
            {"field": f"session {short_id(s.pk)}", "value": f"{s.user or '-'} · {s.protocol_version} · {s.last_seen}"}
            for s in sessions
        ]
        write(self.stdout, facts, ("field", "value"), options["format"])

    def do_disable(self, options: dict[str, Any]) -> None:
        ids = [self.client_id(ref) for ref in options["clients"]]
        n = disable_clients(ids)
        self.stdout.write(f"Disabled {n} client{'' if n == 1 else 's'}; their tokens are revoked.")

    def do_enable(self, options: dict[str, Any]) -> None:
        n = enable_clients([self.client_id(ref) for ref in options["clients"]])
        self.stdout.write(f"Enabled {n} client{'' if n == 1 else 's'}.")

    def do_revoke(self, options: dict[str, Any]) -> None:
        ids = [self.client_id(ref) for ref in options["clients"]]
        if options.get("user") is not None:
            user = any_user(bounded("--user", options["user"], 150) or "")
            n = revoke_user_tokens([user.pk], ids or None)
        elif ids:
            n = revoke_tokens(ids)
        else:
            raise CommandError("Give the clients whose tokens to revoke, or --user")
        self.stdout.write(f"Revoked {n} access token{'' if n == 1 else 's'}.")

    def do_initial_tokens(self, options: dict[str, Any]) -> None:
        rows = (
            {
                "id": t.pk,
                "description": str(t),
                "scopes": t.scopes,
                "service_user": str(t.service_user or ""),
                "uses_left": "unlimited" if t.uses_left is None else t.uses_left,
                "expires": t.expires,
                "created": t.created,
            }
            for t in InitialAccessToken.objects.select_related("service_user")
        )
        columns = ("id", "description", "scopes", "service_user", "uses_left", "expires", "created")
        write(self.stdout, rows, columns, options["format"])

    def do_delete_initial_token(self, options: dict[str, Any]) -> None:
        ids = options["ids"]
        unknown = sorted(set(ids) - set(InitialAccessToken.objects.filter(pk__in=ids).values_list("pk", flat=True)))
        if unknown:
            raise CommandError(f"No initial access token with id {', '.join(map(str, unknown))}")
        n, _ = InitialAccessToken.objects.filter(pk__in=ids).delete()
        self.stdout.write(f"Deleted {n} initial access token{'' if n == 1 else 's'}.")
