"""``manage.py mcp_switch``: the kill switches without the admin: list them, turn one off or on.

    manage.py mcp_switch list [--off] [--kind tool]
    manage.py mcp_switch off tool delete_book --reason "Bad data in production"
    manage.py mcp_switch on tool delete_book
    manage.py mcp_switch off client 3Zx9...        # the same as mcp_client disable

A tool, resource, resource template or prompt turned off is hidden from every list and refused on every
worker within about a second (``SWITCHES_REVALIDATE_INTERVAL`` at most, for a worker the broadcast misses);
connected clients are told their lists changed. A client turned off is disabled and loses every token it
holds, as the admin's action does. Names are those the project registers (or a switch row already holds).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import switches
from ...auth.clients import applications, disable_clients, enable_clients, oauth_installed
from ...checks import project_servers
from ...models import MCPClient, MCPSwitch
from ..arguments import bounded, shown
from ..output import add_format_argument, write

KINDS = (*switches.LISTS, "client")


class Command(BaseCommand):
    help = "List the kill switches (tools, resources, templates, prompts, OAuth clients); turn one off or on."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="Every registered tool, resource, template and prompt, and its state.")
        listing.add_argument("--kind", choices=KINDS, help="Only this kind.")
        listing.add_argument("--off", action="store_true", help="Only what is off.")
        add_format_argument(listing)
        for action, words in (("off", "Hide and refuse it on every worker"), ("on", "Serve it again")):
            cmd = sub.add_parser(action, help=f"{words}.")
            cmd.add_argument("kind", choices=KINDS)
            cmd.add_argument("name", help="The tool, prompt or template name, the resource URI, or the client ID.")
            if action == "off":
                cmd.add_argument("--reason", default="", help="Why (kept with the switch; shown in its list).")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, "do_" + options["action"])(options)

    def do_list(self, options: dict[str, Any]) -> None:
        servers = project_servers()
        switches.ensure_rows(servers)
        served = {key for key, _obj in switches.registered(servers)}
        rows: list[dict[str, Any]] = []
        if options.get("kind") != "client":
            found = MCPSwitch.objects.select_related("changed_by").order_by("kind", "name")
            if options.get("kind"):
                found = found.filter(kind=options["kind"])
            if options["off"]:
                found = found.filter(enabled=False)
            rows += [
                {
                    "kind": row.kind,
                    "name": row.name,
                    "state": "on" if row.enabled else "off",
                    "served": (row.kind, row.name) in served,
                    "reason": row.reason,
                    "changed_by": str(row.changed_by or ""),
                    "changed_at": row.changed_at,
                }
                for row in found
            ]
        if options.get("kind") in (None, "client") and oauth_installed():
            clients = MCPClient.objects.order_by("client_id")
            clients = clients.filter(disabled=True) if options["off"] else clients
            names = dict(applications(c.client_id for c in clients).values_list("client_id", "name"))
            rows += [
                {
                    "kind": "client",
                    "name": c.client_id,
                    "state": "off" if c.disabled else "on",
                    "served": c.client_id in names,
                    "reason": names.get(c.client_id, ""),
                    "changed_at": c.disabled_at,
                }
                for c in clients
            ]
        columns = ("kind", "name", "state", "served", "reason", "changed_by", "changed_at")
        write(self.stdout, rows, columns, options["format"])

    def do_off(self, options: dict[str, Any]) -> None:
        self.toggle(options, enabled=False)

    def do_on(self, options: dict[str, Any]) -> None:
        self.toggle(options, enabled=True)

    def toggle(self, options: dict[str, Any], *, enabled: bool) -> None:
        kind, name = options["kind"], bounded("name", options["name"], 255) or ""
        state = "on" if enabled else "off"
        if kind == "client":
            if not oauth_installed():
                raise CommandError("Client switches need 'oauth2_provider' in INSTALLED_APPS.")
            if not applications([name]).exists() and not MCPClient.objects.filter(client_id=name).exists():
                raise CommandError(f"No OAuth client with client ID {shown(name)}")
            changed = (enable_clients if enabled else disable_clients)([name])
            tail = "" if enabled else "; its tokens are revoked and its sessions ended"
            self.stdout.write(f"client {name}: {state}{'' if changed else ' already'}{tail}")
            return
        reason = options.get("reason")
        if reason is not None and len(reason) > 2000:
            raise CommandError("--reason: at most 2000 characters")
        known = {key for key, _obj in switches.registered(project_servers())}
        if (kind, name) not in known and not MCPSwitch.objects.filter(kind=kind, name=name).exists():
            raise CommandError(f"No {switches.LABELS[kind].lower()} named {shown(name)} is registered")
        changed = switches.switch(kind, name, enabled=enabled, reason=reason)
        self.stdout.write(f"{kind} {name}: {state}{'' if changed else ' already'}")
