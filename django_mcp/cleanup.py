"""What ``manage.py mcp_cleanup`` prunes: expired and old sessions, stored events a cache keeps, spent OAuth
codes, and tasks past their TTL.

Each step counts first and changes nothing when ``dry_run`` is set, so an operator
can see what a run would do. Deletes go in batches to keep each transaction short on
a large table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.core.cache import caches
from django.utils import timezone

from .conf import mcp_settings

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


def expire_sessions(dry_run: bool) -> int:
    from .sessions import expire_idle_sync, idle_sessions

    if dry_run:
        return int(idle_sessions().count())
    return expire_idle_sync()


def delete_ended(retention: float, dry_run: bool) -> int:
    """Delete sessions ended more than ``retention`` seconds ago.

    A dry run also counts the idle sessions the real run would end first and then find
    past the retention (their ``ended`` becomes ``last_seen + SESSION_IDLE_TIMEOUT``).
    """
    from .models import MCPSession

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
    from django.core.cache.backends.db import DatabaseCache
    from django.db import connections, router

    cache = caches[mcp_settings.EVENT_STORE_CACHE]
    if not isinstance(cache, DatabaseCache):
        return None
    db = router.db_for_write(cache.cache_model_class)
    connection = connections[db]
    table = connection.ops.quote_name(cache._table)  # type: ignore[attr-defined]  # set in its __init__
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
    from .auth_clients import oauth_installed

    if not oauth_installed():
        return None
    from .auth.validators import prune_spent_codes as prune

    return prune(dry_run=dry_run)


def delete_expired_tasks(dry_run: bool) -> int:
    """Tasks past their TTL, whatever their state: ``tasks/get`` no longer finds them."""
    from .models import MCPTask
    from .tasks import store

    if dry_run:
        return int(MCPTask.objects.filter(expires__lte=timezone.now()).count())
    return store.expired()


def recover_lost_tasks(dry_run: bool) -> int:
    """Running tasks whose worker stopped beating: run them again (``TASK_MAX_ATTEMPTS``) or fail them."""
    from .tasks import store

    if dry_run:
        return len(store.silent())
    return store.recover_silent()


def cleanup(retention: float | None = None, dry_run: bool = False) -> Counts:
    """Run every step; ``retention`` overrides ``SESSION_RETENTION`` (seconds)."""
    keep = float(mcp_settings.SESSION_RETENTION if retention is None else retention)
    counts = Counts()
    counts.expired = expire_sessions(dry_run)
    counts.deleted = delete_ended(keep, dry_run)
    counts.events = delete_expired_events(dry_run)
    counts.spent_codes = prune_spent_codes(dry_run)
    counts.tasks = delete_expired_tasks(dry_run)
    counts.lost_tasks = recover_lost_tasks(dry_run)
    return counts
