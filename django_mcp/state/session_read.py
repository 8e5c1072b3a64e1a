"""WSGI mode's per-request session read: one ``SELECT`` whose SQL Django compiles once per database.

Why: a WSGI worker has no channel layer to hear other workers change or end a session, so it
reads the session row on every request (``sessions.Sessions._read``). Through the ORM that read
cost about 550 µs of CPU on SQLite, of which the ``SELECT`` itself was 40: the rest was building
and compiling the same queryset every time. Here the ORM compiles it once, with placeholder values,
and each read binds the session id and the idle cut-off (adapted as the field would adapt them)
and turns the row into values with the compiler's own converters: the same SQL and the same
values as ``MCPSession.objects.filter(...).first()``.

It selects only what a request uses (``SessionRow``), and a worker keeps the last row it made of
each session with the raw values it was made from: when the database returns the very same values
(a session's row changes only when it is touched, ended or its state changes), the row made then
is the answer, without decoding its JSON and times again. The ``SELECT`` itself runs every time,
so an end, a change or a touch by another worker is seen at once. On SQLite, unless queries are
being logged (``DEBUG``, ``CaptureQueriesContext``), the statement goes to the driver's cursor with
its ``?`` placeholders already in place (Django's SQLite cursor rewrites ``%s`` with a regular
expression each time); the driver's errors still become Django's.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connections, models, router

from ..models import MCPSession

#: What the statement is compiled with, found again among its parameters to know their places.
_ID = "django-mcp:session-id"
_SINCE = datetime(2000, 1, 2, 3, 4, 5, 678901)


class SessionRow(NamedTuple):
    """What a WSGI request reads of its session row (``sessions.Sessions._read``)."""

    id: str
    protocol_version: str
    client_info: Any
    client_capabilities: Any
    user_id: Any
    oauth_client: str
    log_level: str
    subscriptions: Any
    initialized: bool
    last_seen: datetime


#: At most this many sessions' rows kept per thread (the oldest half forgotten beyond it).
KEPT = 256


class _Read:
    """The compiled statement of one database alias, how to bind its two values, and the rows it made."""

    def __init__(self, alias: str) -> None:
        connection = connections[alias]
        since = _SINCE.replace(tzinfo=timezone.utc) if settings.USE_TZ else _SINCE
        queryset = MCPSession.objects.using(alias).filter(id=_ID, ended__isnull=True, last_seen__gte=since)
        compiler = queryset.order_by().values_list(*SessionRow._fields)[:1].query.get_compiler(alias)
        self.sql, params = compiler.as_sql()
        if len(params) != 2 or params.count(_ID) != 1:  # not the statement this was written for
            raise RuntimeError(f"django_mcp: unexpected session query parameters: {params!r}")
        columns = [col for col, _sql, _alias in compiler.select]
        if [col.target.attname for col in columns] != list(SessionRow._fields):
            raise RuntimeError("django_mcp: unexpected session query columns")
        #: Where the id and the cut-off go among the statement's two parameters.
        self.id_at = list(params).index(_ID)
        self.since_at = 1 - self.id_at
        field = MCPSession._meta.get_field("last_seen")
        assert isinstance(field, models.DateTimeField)
        self.field = field
        self.compiler = compiler
        self.converters = compiler.get_converters(columns)
        self.connection = connection
        #: SQLite: the statement with the driver's own ``?`` placeholders (see ``row``).
        self.qmark = _qmark(self.sql) if connection.vendor == "sqlite" else None
        #: session id -> (the raw values read, the row made of them).
        self.made: dict[str, tuple[tuple[Any, ...], SessionRow]] = {}

    def row(self, sid: str, since: datetime) -> SessionRow | None:
        params: list[Any] = [None, None]
        params[self.id_at] = sid
        params[self.since_at] = self.field.get_db_prep_value(since, self.connection)
        connection = self.connection
        if self.qmark is not None and not connection.queries_logged:
            connection.close_if_health_check_failed()  # what ``connection.cursor()`` does first
            connection.ensure_connection()
            with connection.wrap_database_errors:
                found = connection.connection.execute(self.qmark, params).fetchone()
        else:
            with connection.cursor() as cursor:
                cursor.execute(self.sql, params)
                found = cursor.fetchone()
        made = self.made
        if found is None:
            made.pop(sid, None)
            return None
        known = made.get(sid)
        if known is not None and known[0] == found:
            return known[1]
        values: Any = found
        if self.converters:
            values = next(iter(self.compiler.apply_converters([found], self.converters)))
        session = SessionRow(*values)
        if len(made) >= KEPT:
            for old in list(made)[: KEPT // 2]:
                del made[old]
        made[sid] = (tuple(found), session)
        return session


def _qmark(sql: str) -> str | None:
    """``sql`` with Django's ``%s`` placeholders as SQLite's ``?`` (None if it holds any other ``%``)."""
    if sql.count("%") != sql.count("%s"):
        return None
    return sql.replace("%s", "?")


#: Per thread, as Django's connections are: each statement belongs to the connection it was compiled for.
_local = threading.local()


def live_session(sid: str, since: datetime) -> SessionRow | None:
    """The session ``sid`` if not ended and seen at or after ``since``, else None. Sync (a bookkeeping thread)."""
    alias = router.db_for_read(MCPSession)
    reads: dict[str, _Read] = _local.__dict__.setdefault("reads", {})
    read = reads.get(alias)
    if read is None or read.connection is not connections[alias]:
        read = reads[alias] = _Read(alias)
    return read.row(sid, since)


__all__ = ["SessionRow", "live_session"]
