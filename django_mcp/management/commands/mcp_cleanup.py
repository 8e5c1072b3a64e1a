"""``manage.py mcp_cleanup``: prune what django_mcp stores, from cron or a scheduler.

Ends sessions idle past ``SESSION_IDLE_TIMEOUT`` (and tells every worker over the
channel layer, so their caches drop them and their GET streams close), deletes
sessions ended more than ``SESSION_RETENTION`` seconds ago, and deletes expired
stored SSE events where the cache cannot expire them itself (the database cache),
and, with OAuth, the replay-detection records of codes whose tokens have expired,
deletes tasks past their TTL, runs again (or fails) tasks whose worker stopped, and deletes
audit records older than ``AUDIT_RETENTION``.
Prints the counts; ``--dry-run`` prints what a run would do and changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cleanup import cleanup


class Command(BaseCommand):
    help = (
        "End idle MCP sessions, delete old ended ones, expired stored events, tasks and old audit records; "
        "print the counts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Count only; change nothing.")
        parser.add_argument(
            "--retention",
            type=float,
            default=None,
            help="Seconds to keep ended sessions (default: the SESSION_RETENTION setting).",
        )
        parser.add_argument(
            "--audit-retention",
            type=float,
            default=None,
            help="Seconds to keep audit records (default: the AUDIT_RETENTION setting).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        retention = options["retention"]
        if retention is not None and retention < 0:
            raise CommandError("--retention must be zero or more seconds")
        audit_retention = options["audit_retention"]
        if audit_retention is not None and audit_retention < 0:
            raise CommandError("--audit-retention must be zero or more seconds")
        dry = bool(options["dry_run"])
        counts = cleanup(retention, dry_run=dry, audit_retention=audit_retention)
        verb = "would be " if dry else ""
        events = "expired by the cache itself" if counts.events is None else f"{counts.events} {verb}deleted"
        self.stdout.write(f"idle sessions {verb}ended: {counts.expired}")
        self.stdout.write(f"ended sessions {verb}deleted: {counts.deleted}")
        self.stdout.write(f"stored events: {events}")
        if counts.spent_codes is not None:
            self.stdout.write(f"spent authorization codes {verb}deleted: {counts.spent_codes}")
        self.stdout.write(f"expired tasks {verb}deleted: {counts.tasks}")
        recovered = "would be recovered" if verb else "recovered"
        self.stdout.write(f"tasks whose worker stopped, {recovered}: {counts.lost_tasks}")
        self.stdout.write(f"audit records {verb}deleted: {counts.calls}")
        self.stdout.write(f"task workers gone, {verb}deleted: {counts.workers}")
