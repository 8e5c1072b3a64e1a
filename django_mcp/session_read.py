"""WSGI mode's per-request session read: one ``SELECT`` whose SQL Django compiles once per database.

Why: a WSGI worker has no channel layer to hear other workers change or end a session, so it
reads the session row on every request (``sessions.Sessions._read``). Through the ORM that read
cost about 550 µs of CPU on SQLite, of which the ``SELECT`` itself was 40: the rest was building
and compiling the same queryset every time. Here the ORM compiles it once, with placeholder values,
and each read binds the session id and the idle cut-off (adapted as the field would adapt them)
and turns the row into an instance with the compiler's own converters: the same SQL, the same
values, the same instance as ``MCPSession.objects.filter(...).first()``.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

from django.conf import settings
from django.db import connections, models, router

from .models import MCPSession

#: What the statement is compiled with, found again among its parameters to know their places.
_ID = "django-mcp:session-id"
_SINCE = datetime(2000, 1, 2, 3, 4, 5, 678901)


class _Read:
    """The compiled statement of one database alias, and how to bind its two values and read its row."""

    def __init__(self, alias: str) -> None:
        connection = connections[alias]
        since = _SINCE.replace(tzinfo=timezone.utc) if settings.USE_TZ else _SINCE
        queryset = MCPSession.objects.using(alias).filter(id=_ID, ended__isnull=True, last_seen__gte=since)
        compiler = queryset.order_by()[:1].query.get_compiler(alias)
        self.sql, params = compiler.as_sql()
        if len(params) != 2 or params.count(_ID) != 1:  # not the statement this was written for
            raise RuntimeError(f"django_mcp: unexpected session query parameters: {params!r}")
        #: Where the id and the cut-off go among the statement's two parameters.
        self.id_at = list(params).index(_ID)
        self.since_at = 1 - self.id_at
        field = MCPSession._meta.get_field("last_seen")
        assert isinstance(field, models.DateTimeField)
        self.field = field
        columns = [col for col, _sql, _alias in compiler.select]
        self.names = [col.target.attname for col in columns]
        self.compiler = compiler
        self.converters = compiler.get_converters(columns)
        self.connection = connection

    def row(self, sid: str, since: datetime) -> MCPSession | None:
        params: list[Any] = [None, None]
        params[self.id_at] = sid
        params[self.since_at] = self.field.get_db_prep_value(since, self.connection)
        with self.connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            found = cursor.fetchone()
        if found is None:
            return None
        values: Any = found
        if self.converters:
            values = next(iter(self.compiler.apply_converters([found], self.converters)))
        session: MCPSession = MCPSession.from_db(self.connection.alias, self.names, values)
        return session


#: Per thread, as Django's connections are: each statement belongs to the connection it was compiled for.
_local = threading.local()


def live_session(sid: str, since: datetime) -> MCPSession | None:
    """The session ``sid`` if not ended and seen at or after ``since``, else None. Sync (a bookkeeping thread)."""
    alias = router.db_for_read(MCPSession)
    reads: dict[str, _Read] = _local.__dict__.setdefault("reads", {})
    read = reads.get(alias)
    if read is None or read.connection is not connections[alias]:
        read = reads[alias] = _Read(alias)
    return read.row(sid, since)


__all__ = ["live_session"]
