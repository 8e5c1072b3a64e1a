"""``manage.py mcp_session``: handshake-era MCP sessions without the admin: who is connected, and ending them.

    manage.py mcp_session list [--user alice] [--client 3Zx9...] [--all]
    manage.py mcp_session end Xq3v9k2L          # by the first characters of its id (8 at least)
    manage.py mcp_session end --user alice      # every open session of a user
    manage.py mcp_session end --client 3Zx9...  # every open session through an OAuth client

Ids are printed as their first 16 characters, as the admin keys them: a whole ``Mcp-Session-Id`` is a
credential of its session. Ending one is what the admin's action does: every worker drops it and closes
its streams, and its next request gets 404.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...models import MCPSession
from ...state.sessions import end_sessions_sync
from ..arguments import add_selection, bounded, by_prefix, short_id
from ..output import add_format_argument, write
from ..users import any_user


def _narrowed(options: dict[str, Any], sessions: Any) -> Any:
    if options.get("user") is not None:
        sessions = sessions.filter(user=any_user(bounded("--user", options["user"], 150) or ""))
    if options.get("client") is not None:
        sessions = sessions.filter(oauth_client=bounded("--client", options["client"], 255))
    return sessions


def _client(info: Any) -> str:
    info = info if isinstance(info, dict) else {}
    return f"{info.get('name', '?')} {info.get('version', '')}".strip()


class Command(BaseCommand):
    help = "List MCP sessions; end them by id prefix, by user or by OAuth client."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="Open sessions, most recently seen first.")
        listing.add_argument("--user", metavar="USERNAME")
        listing.add_argument("--client", metavar="CLIENT_ID")
        listing.add_argument("--all", action="store_true", help="Ended sessions too.")
        listing.add_argument("--limit", type=int, default=200, help="Rows at most (default 200).")
        add_format_argument(listing)
        end = sub.add_parser("end", help="End sessions: each id prefix given, or all of --user / --client.")
        add_selection(end, "session", "open")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, "do_" + options["action"])(options)

    def do_list(self, options: dict[str, Any]) -> None:
        if not 0 < options["limit"] <= 100_000:
            raise CommandError("--limit: 1 to 100000")
        sessions = _narrowed(options, MCPSession.objects.select_related("user").order_by("-last_seen"))
        if not options["all"]:
            sessions = sessions.filter(ended__isnull=True)
        rows = (
            {
                "session": short_id(s.pk),
                "user": str(s.user or ""),
                "oauth_client": s.oauth_client,
                "client": _client(s.client_info),
                "revision": s.protocol_version,
                "created": s.created,
                "last_seen": s.last_seen,
                "ended": s.ended,
            }
            for s in sessions[: options["limit"]]
        )
        columns = ("session", "user", "oauth_client", "client", "revision", "created", "last_seen", "ended")
        write(self.stdout, rows, columns, options["format"])

    def do_end(self, options: dict[str, Any]) -> None:
        narrowing = options.get("user") is not None or options.get("client") is not None
        if bool(options["prefixes"]) == narrowing:
            raise CommandError("Give session id prefixes, or --user and/or --client (not both)")
        open_sessions = MCPSession.objects.filter(ended__isnull=True)
        if narrowing:
            ids = list(_narrowed(options, open_sessions).values_list("id", flat=True))
        else:
            ids = [by_prefix(MCPSession.objects.all(), p, "session").pk for p in options["prefixes"]]
        n = end_sessions_sync(ids)
        self.stdout.write(f"Ended {n} session{'' if n == 1 else 's'}.")
