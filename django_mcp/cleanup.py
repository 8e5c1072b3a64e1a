"""What ``manage.py mcp_cleanup`` prunes: expired and old sessions, stored events a cache keeps, spent OAuth
codes, tasks past their TTL, and audit records past ``AUDIT_RETENTION``.

Each step counts first and changes nothing when ``dry_run`` is set, so an operator
can see what a run would do. Deletes go in batches to keep each transaction short on
a large table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from django.db import connections, router
from django.utils import timezone

from .auth.clients import oauth_installed
from .conf import mcp_settings
from .models import MCPCallRecord, MCPSession, MCPTask
from .state.sessions import expire_idle_sync, idle_sessions
from .tasks import beat, store

#: Rows per DELETE statement.
DELETE_BATCH = 1000
#: Every key the event store writes (stream, session and broadcast logs, counters, leases): expired ones only.
_EVENT_KEYS = "%django_mcp:%"


@dataclass
class Counts:
    expired: int = 0  # live sessions idle past SESSION_IDLE_TIMEOUT, now ended (and announced)
    deleted: int = 0  # ended sessions past SESSION_RETENTION, deleted
    events: int | None = 0  # expired stored events deleted; None: the cache expires them itself
    spent_codes: int | None = 0  # OAuth authorization-code checksums past their use; None: OAuth not installed
    tasks: int = 0  # tasks past their TTL (MCPTask.expires), deleted
    lost_tasks: int = 0  # running tasks whose worker went silent, run again (or failed after the last run)
    calls: int = 0  # audit records (MCPCallRecord) older than AUDIT_RETENTION, deleted
    workers: int = 0  # task workers (MCPTaskWorker) that stopped beating long ago, deleted


def expire_sessions(dry_run: bool) -> int:
    if dry_run:
        return int(idle_sessions().count())
    return expire_idle_sync()


def delete_ended(retention: float, dry_run: bool) -> int:
    """Delete sessions ended more than ``retention`` seconds ago.

    A dry run also counts the idle sessions the real run would end first and then find
    past the retention (their ``ended`` becomes ``last_seen + SESSION_IDLE_TIMEOUT``).
    """
    cutoff = timezone.now() - timedelta(seconds=retention)
    old = MCPSession.objects.filter(ended__lt=cutoff)
    if dry_run:
        timeout = timedelta(seconds=mcp_settings.SESSION_IDLE_TIMEOUT)
        idle = MCPSession.objects.filter(ended__isnull=True, last_seen__lt=cutoff - timeout)
        return int(old.count() + idle.count())
    deleted = 0
    while True:
        ids = list(old.values_list("id", flat=True)[:DELETE_BATCH])
        if not ids:
            return deleted
        deleted += MCPSession.objects.filter(id__in=ids).delete()[0]


def delete_expired_events(dry_run: bool) -> int | None:
    """Expired event-store entries of a database cache (other caches expire keys themselves: None)."""
    cache = caches[mcp_settings.EVENT_STORE_CACHE]
    if not isinstance(cache, DatabaseCache):
        return None
    db = router.db_for_write(cache.cache_model_class)
    connection = connections[db]
    table = connection.ops.quote_name(cache.cache_model_class._meta.db_table)
    now = connection.ops.adapt_datetimefield_value(timezone.now().replace(microsecond=0))
    where = "WHERE cache_key LIKE %s AND expires < %s"  # the table name is quoted above, values are bound
    with connection.cursor() as cursor:
        if dry_run:
            cursor.execute(f"SELECT COUNT(*) FROM {table} {where}", [_EVENT_KEYS, now])
            row = cursor.fetchone()
            return int(row[0]) if row else 0
        cursor.execute(f"DELETE FROM {table} {where}", [_EVENT_KEYS, now])
        return int(cursor.rowcount)


def prune_spent_codes(dry_run: bool) -> int | None:
    """The replay-detection records of authorization codes whose tokens have expired (OAuth only)."""
    if not oauth_installed():
        return None
    from .auth.validators import prune_spent_codes as prune  # reason: auth.validators needs DOT's models (OAuth on)

    return prune(dry_run=dry_run)


def delete_expired_tasks(dry_run: bool) -> int:
    """Tasks past their TTL, whatever their state: ``tasks/get`` no longer finds them."""
    if dry_run:
        return int(MCPTask.objects.filter(expires__lte=timezone.now()).count())
    return store.expired()


def recover_lost_tasks(dry_run: bool) -> int:
    """Running tasks whose worker stopped beating: run them again (``TASK_MAX_ATTEMPTS``) or fail them."""
    if dry_run:
        return len(store.silent())
    return store.recover_silent()


def delete_old_calls(retention: float, dry_run: bool) -> int:
    """Audit records older than ``retention`` seconds, a batch of ids at a time (short transactions)."""
    old = MCPCallRecord.objects.filter(at__lt=timezone.now() - timedelta(seconds=retention))
    if dry_run:
        return int(old.count())
    deleted = 0
    while True:
        ids = list(old.order_by().values_list("id", flat=True)[:DELETE_BATCH])
        if not ids:
            return deleted
        deleted += MCPCallRecord.objects.filter(id__in=ids).delete()[0]


def cleanup(retention: float | None = None, dry_run: bool = False, audit_retention: float | None = None) -> Counts:
    """Run every step; ``retention`` overrides ``SESSION_RETENTION`` and ``audit_retention`` ``AUDIT_RETENTION``."""
    keep = float(mcp_settings.SESSION_RETENTION if retention is None else retention)
    counts = Counts()
    counts.expired = expire_sessions(dry_run)
    counts.deleted = delete_ended(keep, dry_run)
    counts.events = delete_expired_events(dry_run)
    counts.spent_codes = prune_spent_codes(dry_run)
    counts.tasks = delete_expired_tasks(dry_run)
    counts.lost_tasks = recover_lost_tasks(dry_run)
    keep_calls = float(mcp_settings.AUDIT_RETENTION if audit_retention is None else audit_retention)
    counts.calls = delete_old_calls(keep_calls, dry_run)
    counts.workers = beat.prune(dry_run)
    return counts
