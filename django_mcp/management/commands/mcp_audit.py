"""``manage.py mcp_audit``: read the audit log without the admin: the calls, filtered, and the usage summary.

    manage.py mcp_audit calls --since 24h --outcome refused --format csv > refused.csv
    manage.py mcp_audit calls --user alice --target search_books --limit 20
    manage.py mcp_audit usage --window 7d --client 3Zx9...

``calls`` prints the newest calls first (``--limit``, 100 by default), as a table, spreadsheet-safe CSV or
JSON; arguments and results only with ``--payload`` (the admin shows them only to staff holding
``view_mcpcallrecord_payload``). ``usage`` prints what the admin's usage page shows for a window.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...audit import usage as usage_data
from ...models import MCPCallRecord
from ..arguments import bounded, moment, short_id
from ..output import add_format_argument, write
from ..users import any_user

COLUMNS = (
    "at",
    "method",
    "target",
    "outcome",
    "error_code",
    "http_status",
    "user",
    "oauth_client",
    "session",
    "revision",
    "transport",
    "duration_ms",
    "request_bytes",
    "response_bytes",
    "task",
)
PAYLOAD = ("arguments", "result")
OUTCOMES = [choice for choice, _label in MCPCallRecord.OUTCOME_CHOICES]
#: The most rows one ``calls`` run prints (``--limit 0`` means this many).
MAX_LIMIT = 1_000_000


class Command(BaseCommand):
    help = "Query the MCP audit log (calls, filtered; CSV/JSON export) and print the usage summary."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        calls = sub.add_parser("calls", help="Audited calls, newest first, filtered.")
        calls.add_argument("--since", metavar="WHEN", help="From this moment: 2026-11-28, an ISO date-time, or 24h.")
        calls.add_argument("--until", metavar="WHEN", help="Before this moment (same forms as --since).")
        calls.add_argument("--user", metavar="USERNAME", help="Calls of this user (by the name recorded).")
        calls.add_argument("--anonymous", action="store_true", help="Calls without a user.")
        calls.add_argument("--client", metavar="CLIENT_ID", help="Calls through this OAuth client ('' for none).")
        calls.add_argument(
            "--target", "--tool", metavar="NAME", help="Calls of this tool, resource URI or prompt (exact)."
        )
        calls.add_argument(
            "--outcome", "--status", action="append", choices=OUTCOMES, help="Calls that ended so (repeatable)."
        )
        calls.add_argument("--method", metavar="METHOD", help="tools/call, resources/read or prompts/get.")
        calls.add_argument("--transport", metavar="NAME", help="http, wsgi, stdio, sse, browser, task.")
        calls.add_argument(
            "--session",
            metavar="PREFIX",
            help="Calls of the session whose id begins so (8 chars; --session=PREFIX when it begins with -).",
        )
        calls.add_argument("--task", metavar="TASK_ID", help="Calls that ran or created this MCP task (its id).")
        calls.add_argument(
            "--limit", type=int, default=100, help=f"Rows at most (default 100; 0: up to {MAX_LIMIT:,})."
        )
        calls.add_argument("--payload", action="store_true", help="Add the arguments and results kept.")
        add_format_argument(calls)
        usage = sub.add_parser("usage", help="The usage page's figures: calls, errors, p50/p95, top users/clients.")
        usage.add_argument("--window", choices=sorted(usage_data.WINDOWS), default=usage_data.DEFAULT_WINDOW)
        usage.add_argument("--user", metavar="USERNAME", help="Narrow to this user.")
        usage.add_argument("--anonymous", action="store_true", help="Narrow to calls without a user.")
        usage.add_argument("--client", metavar="CLIENT_ID", help="Narrow to this OAuth client.")
        usage.add_argument("--target", "--tool", metavar="NAME", help="Narrow to this tool, resource or prompt.")
        add_format_argument(usage)

    def handle(self, *args: Any, **options: Any) -> None:
        for option, limit in (("user", 150), ("client", 255), ("target", 255), ("method", 32), ("transport", 8)):
            bounded(f"--{option}", options.get(option), limit)
        if options.get("user") is not None and options.get("anonymous"):
            raise CommandError("--user and --anonymous exclude each other")
        getattr(self, "do_" + options["action"])(options)

    def do_calls(self, options: dict[str, Any]) -> None:
        limit = options["limit"]
        if limit < 0 or limit > MAX_LIMIT:
            raise CommandError(f"--limit: 0 (up to {MAX_LIMIT:,}) or a number of rows up to {MAX_LIMIT:,}")
        since, until = moment("--since", options.get("since")), moment("--until", options.get("until"))
        calls = MCPCallRecord.objects.order_by("-at", "-id")
        if since is not None:
            calls = calls.filter(at__gte=since)
        if until is not None:
            calls = calls.filter(at__lt=until)
        if options.get("user") is not None:
            calls = calls.filter(username=options["user"])
        if options.get("anonymous"):
            calls = calls.filter(user__isnull=True, username="")
        for option, field in (("client", "oauth_client"), ("target", "target"), ("method", "method")):
            if options.get(option) is not None:
                calls = calls.filter(**{field: options[option]})
        if options.get("transport"):
            calls = calls.filter(transport=options["transport"])
        if options.get("outcome"):
            calls = calls.filter(outcome__in=options["outcome"])
        if options.get("session"):
            calls = calls.filter(session__startswith=options["session"][:8])
        if options.get("task"):
            calls = calls.filter(task_id=bounded("--task", options["task"], 64))
        columns = COLUMNS + (PAYLOAD if options["payload"] else ())
        write(self.stdout, self.rows(calls[: limit or MAX_LIMIT], options["payload"]), columns, options["format"])

    @staticmethod
    def rows(calls: Any, payload: bool) -> Iterator[dict[str, Any]]:
        fields = [f for f in (*COLUMNS, "username", "user_id", "task_id") if f not in ("user", "task")]
        fields += list(PAYLOAD) if payload else []
        for call in calls.values(*fields).iterator(chunk_size=2000):
            call["user"] = call.pop("username") or (f"#{call['user_id']}" if call["user_id"] is not None else "")
            call["task"] = short_id(call.pop("task_id")) if call["task_id"] else ""
            yield call

    def do_usage(self, options: dict[str, Any]) -> None:
        user: Any = "anonymous" if options.get("anonymous") else None
        if options.get("user") is not None:
            user = any_user(options["user"]).pk
        client, target = options.get("client"), options.get("target")
        data = usage_data.usage(options["window"], user=user, client=client, target=target)
        rows = [
            {
                "section": "total",
                "key": "",
                "label": str(data.window.label),
                "calls": data.total,
                "failures": data.failures,
                "error_rate": round(data.error_rate, 2),
                "p50_ms": data.p50,
                "p95_ms": data.p95,
            }
        ]
        for section, table in (("target", data.targets), ("user", data.users), ("client", data.clients)):
            rows += [
                {
                    "section": section,
                    "key": "" if row.key is None else row.key,
                    "label": row.label,
                    "calls": row.calls,
                    "failures": row.failures,
                    "error_rate": round(row.error_rate, 2),
                    "p50_ms": row.p50,
                    "p95_ms": row.p95,
                }
                for row in table
            ]
        rows += [{"section": "sessions open", "label": label, "calls": n} for label, n in data.sessions_by_client]
        rows += [{"section": "sessions open", "key": "", "label": "all", "calls": data.sessions}]
        rows += [{"section": "tasks active", "key": s, "label": s, "calls": n} for s, n in data.tasks.items()]
        rows += [{"section": "tasks active by tool", "key": t, "label": t, "calls": n} for t, n in data.tasks_by_tool]
        if options["format"] == "table":
            since, until = data.since.isoformat(), data.until.isoformat()
            sampled = " (p50/p95 from the latest calls only)" if data.sampled else ""
            self.stdout.write(f"{data.window.label}: {since} to {until}{sampled}")
        columns = ("section", "key", "label", "calls", "failures", "error_rate", "p50_ms", "p95_ms")
        write(self.stdout, rows, columns, options["format"])
