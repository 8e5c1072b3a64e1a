"""``manage.py mcp_task``: MCP tasks without the admin: list them, cancel active ones.

    manage.py mcp_task list [--status working] [--user alice] [--client 3Zx9...] [--tool export_books]
    manage.py mcp_task cancel q7Rk2LmZ        # by the first characters of its id (8 at least)
    manage.py mcp_task cancel --user alice    # every active task of a user
    manage.py mcp_task workers                # the task worker processes, alive or gone

Ids are printed as their first 16 characters (a task id is a capability of its caller). Cancelling is
what the admin's action does: the task ends ``cancelled``; a running tool is told by its worker. Results
and errors are not printed (the admin shows them only with ``view_mcptask_result``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from ...models import MCPTask, MCPTaskWorker
from ...tasks import beat, store
from ..arguments import add_selection, bounded, by_prefix, short_id
from ..output import add_format_argument, write
from ..users import any_user

COLUMNS = ("task", "tool", "status", "user", "oauth_client", "created", "finished", "seconds", "runs", "message")
STATUSES = [choice for choice, _label in MCPTask.STATUS_CHOICES]


def _narrowed(options: dict[str, Any], tasks: Any) -> Any:
    if options.get("user") is not None:
        tasks = tasks.filter(user=any_user(bounded("--user", options["user"], 150) or ""))
    if options.get("client") is not None:
        tasks = tasks.filter(oauth_client=bounded("--client", options["client"], 255))
    if options.get("tool") is not None:
        tasks = tasks.filter(tool=bounded("--tool", options["tool"], 200))
    return tasks


class Command(BaseCommand):
    help = "List MCP tasks; cancel active ones by id prefix, by user, client or tool; list the task workers."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="Tasks, newest first.")
        listing.add_argument("--status", action="append", choices=STATUSES, help="Only these states (repeatable).")
        listing.add_argument("--active", action="store_true", help="Only working or waiting for input.")
        listing.add_argument("--user", metavar="USERNAME")
        listing.add_argument("--client", metavar="CLIENT_ID")
        listing.add_argument("--tool", metavar="NAME")
        listing.add_argument("--limit", type=int, default=200, help="Rows at most (default 200).")
        add_format_argument(listing)
        cancel = sub.add_parser("cancel", help="Cancel active tasks: each id prefix given, or all matching.")
        add_selection(cancel, "task", "active")
        cancel.add_argument("--tool", metavar="NAME", help="Every active task of this tool.")
        workers = sub.add_parser("workers", help="Task worker processes: host, pid, started, last beat, alive.")
        add_format_argument(workers)

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, "do_" + options["action"])(options)

    def do_list(self, options: dict[str, Any]) -> None:
        if not 0 < options["limit"] <= 100_000:
            raise CommandError("--limit: 1 to 100000")
        tasks = _narrowed(options, MCPTask.objects.select_related("user").order_by("-created"))
        if options["active"]:
            tasks = tasks.filter(status__in=store.ACTIVE)
        if options.get("status"):
            tasks = tasks.filter(status__in=options["status"])
        now = timezone.now()
        rows = (
            {
                "task": short_id(t.pk),
                "tool": t.tool,
                "status": t.status,
                "user": str(t.user or ""),
                "oauth_client": t.oauth_client,
                "created": t.created,
                "finished": t.finished,
                "seconds": round(((t.finished or now) - t.created).total_seconds(), 1),
                "runs": t.attempts,
                "message": t.status_message,
            }
            for t in tasks[: options["limit"]]
        )
        write(self.stdout, rows, COLUMNS, options["format"])

    def do_cancel(self, options: dict[str, Any]) -> None:
        narrowing = any(options.get(k) is not None for k in ("user", "client", "tool"))
        if bool(options["prefixes"]) == narrowing:
            raise CommandError("Give task id prefixes, or --user / --client / --tool (not both)")
        if narrowing:
            rows = _narrowed(options, MCPTask.objects.all())
        else:
            ids = [by_prefix(MCPTask.objects.all(), p, "task").pk for p in options["prefixes"]]
            rows = MCPTask.objects.filter(pk__in=ids)
        n = store.cancel_many(rows)
        self.stdout.write(f"Cancelled {n} task{'' if n == 1 else 's'}.")

    def do_workers(self, options: dict[str, Any]) -> None:
        """The admin's MCP task workers: alive while they beat within ``beat.stale_after()`` seconds."""
        alive_since = timezone.now() - timedelta(seconds=beat.stale_after())
        rows = (
            {"worker": w.pk, "host": w.host, "pid": w.pid, "started": w.started, "beat": w.beat}
            | {"alive": w.beat >= alive_since}
            for w in MCPTaskWorker.objects.order_by("-beat")
        )
        write(self.stdout, rows, ("worker", "host", "pid", "started", "beat", "alive"), options["format"])
