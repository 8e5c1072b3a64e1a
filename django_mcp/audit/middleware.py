"""The audit log: every ``tools/call``, ``resources/read``, ``prompts/get`` and task run, as a record.

``AuditMiddleware`` (in ``DEFAULT_MIDDLEWARE``, second after telemetry) sees each of these
requests and how it ended: a result, a tool error, a JSON-RPC error, a refusal with its
HTTP status (an inner middleware's 429, the door's 403 ``insufficient_scope``), a task
handle, questions (``input_required``) or a cancellation. It records who (user, OAuth
client, session prefix), what (method, target, arguments as the declaration's ``audit``
policy allows), through what (revision, transport), how long and how big.

A record costs the call a few microseconds: the entry is built and appended to a buffer,
and ``writer`` (a ``BatchWriter``) inserts entries in batches from a thread of its own
(``AUDIT_FLUSH_INTERVAL``, ``AUDIT_BATCH_SIZE``, ``AUDIT_BUFFER_SIZE``). ``flush()`` writes
what is buffered now (tests). The same facts go to the ``django_mcp.calls`` logger, one
line per call, when that logger is enabled for INFO (``calllog``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime, timezone, tzinfo
from typing import Any, NamedTuple

from django.conf import settings
from django.core.signals import setting_changed
from django.db import DatabaseError, connections, router, transaction
from django.db.backends.base.operations import BaseDatabaseOperations

from ..conf import mcp_settings
from ..middleware import Call, CallNext, Refusal
from ..models import MCPCallRecord
from ..protocol.jsonrpc import dumps
from ..runtime.drain import drain
from ..state.writelock import sqlite_writer
from . import calllog
from .declaration import FULL, HIDDEN, REDACTED
from .redaction import pattern, redact
from .writer import BatchWriter

logger = logging.getLogger("django_mcp")

#: The requests the audit log records (a task's run is a ``tools/call`` with ``transport == "task"``).
AUDITED = frozenset({"tools/call", "resources/read", "prompts/get"})
#: Characters of a session id kept: enough to tell sessions apart, too little to use one (the admin's too).
SESSION_PREFIX = 8
_INT_MAX = 2**31 - 1


class Entry(NamedTuple):
    """One audited request, as buffered: plain values, made a row by the writer (a tuple: cheap to build)."""

    at: float  # time.time() when the request entered the door
    method: str
    target: str
    user_id: Any
    username: str
    client_id: str
    session: str
    revision: str
    transport: str
    duration_ms: float
    outcome: str
    error_code: int | None
    http_status: int | None
    request_bytes: int
    response_bytes: int
    task_id: str
    arguments: Any
    result: Any

    def when(self) -> datetime:
        return datetime.fromtimestamp(self.at, tz=timezone.utc) if settings.USE_TZ else Entry.when_naive(self.at)

    @staticmethod
    def when_naive(at: float) -> datetime:
        """``at`` as a naive local time (``USE_TZ = False``)."""
        return datetime.fromtimestamp(at, tz=timezone.utc).astimezone().replace(tzinfo=None)

    def record(self) -> MCPCallRecord:
        """The model instance (the writer inserts rows directly; this is for a row it must insert alone)."""
        return MCPCallRecord(
            at=self.when(),
            method=_text(self.method, 32),
            target=_text(self.target, 255),
            user_id=self.user_id,
            username=_text(self.username, 150),
            oauth_client=_text(self.client_id, 255),
            session=self.session,
            revision=_text(self.revision, 16),
            transport=_text(self.transport, 8),
            duration_ms=self.duration_ms,
            outcome=self.outcome,
            error_code=_clamp(self.error_code),
            http_status=self.http_status,
            request_bytes=min(self.request_bytes, _INT_MAX),
            response_bytes=min(self.response_bytes, _INT_MAX),
            task_id=_text(self.task_id, 64),
            arguments=None if self.arguments is None else storable(self.arguments),
            result=None if self.result is None else storable(self.result),
        )


def _clamp(code: int | None) -> int | None:
    """A JSON-RPC code fits the column (a middleware may raise any int): one bad value must not sink a batch."""
    if code is None:
        return None
    return max(-_INT_MAX - 1, min(_INT_MAX, code))


#: The columns the writer fills, in the order of ``Entry.row()`` (every concrete field but the id).
COLUMNS = (
    "at", "method", "target", "user_id", "username", "oauth_client", "session", "revision", "transport",
    "duration_ms", "outcome", "error_code", "http_status", "request_bytes", "response_bytes", "task_id",
    "arguments", "result",
)  # fmt: skip


#: Rows in one INSERT statement at most (fewer where the backend binds fewer parameters).
ROWS_PER_STATEMENT = 100
#: The same on SQLite, whose library binds 32,766 parameters since 3.32 (Django assumes 999: 55 rows).
#: A batch in one statement: the driver releases the GIL around each statement, and each time the
#: serving thread takes it, the writer waits up to a switch interval (5 ms) to get it back.
SQLITE_ROWS_PER_STATEMENT = 500


def write(batch: list[Entry]) -> None:
    """Insert ``batch`` in one short transaction, many rows per statement; a row the database refuses goes alone.

    Not ``bulk_create``: building a model instance and preparing each of its fields costs about
    100 µs a row, many times the call it records; here a row is a tuple, and only the time and
    the two JSON columns are adapted, by the backend's own ``adapt_*`` operations. Many rows per
    statement, not ``executemany``: SQLite's driver releases the GIL around every statement, and
    a thread switch per row slows the event loop that serves the calls.
    """
    db = router.db_for_write(MCPCallRecord)
    connection = connections[db]
    insert = _statement(connection)
    try:
        with sqlite_writer(db), transaction.atomic(using=db), connection.cursor() as cursor:
            if insert.copy is not None:  # PostgreSQL with psycopg 3: COPY, a row at a time in C
                with connection.wrap_database_errors, cursor.cursor.copy(insert.copy) as copy:
                    for entry in batch:
                        copy.write_row(insert.prepare(entry))
                return
            for start in range(0, len(batch), insert.rows):
                chunk = batch[start : start + insert.rows]
                insert.execute(cursor, len(chunk), [value for entry in chunk for value in insert.prepare(entry)])
    except DatabaseError as exc:
        if _unavailable(exc):
            raise  # the database is away: the writer keeps the batch and tries again
        for entry in batch:  # a value the database refuses: every other row is still written
            record = entry.record()
            try:
                with transaction.atomic(using=db):
                    record.save(using=db, force_insert=True)
            except DatabaseError:
                logger.exception("django_mcp: dropped an audit record the database refused: %s", record)


class _Insert:
    """The INSERT of ``n`` rows for one database alias (built once per length), and what makes an entry a row."""

    def __init__(self, connection: Any, prepare: Callable[[Entry], tuple[Any, ...]], copy: bool = False) -> None:
        meta = MCPCallRecord._meta
        fields = {f.attname: f for f in meta.concrete_fields}
        self.fields = [fields[name] for name in COLUMNS]
        self.connection, self.prepare = connection, prepare
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in self.fields)
        self.head = f"INSERT INTO {quote(meta.db_table)} ({columns}) "
        #: PostgreSQL: the ``COPY ... FROM STDIN`` that takes the rows instead (None: INSERT statements).
        self.copy = f"COPY {quote(meta.db_table)} ({columns}) FROM STDIN" if copy else None
        #: SQLite: the driver's own ``?`` placeholders, run on its cursor (see ``execute``).
        self.qmark = connection.vendor == "sqlite"
        limit = _sqlite_variables(connection) if self.qmark else None
        rows = ROWS_PER_STATEMENT if limit is None else SQLITE_ROWS_PER_STATEMENT
        limit = limit or connection.features.max_query_params
        self.rows = rows if connection.features.has_bulk_insert else 1
        if limit:
            self.rows = max(1, min(self.rows, limit // len(COLUMNS)))
        self._sql: dict[int, str] = {}

    def sql(self, n: int) -> str:
        found = self._sql.get(n)
        if found is None:
            placeholders = [["?" if self.qmark else "%s"] * len(COLUMNS) for _ in range(n)]
            found = self._sql[n] = self.head + self.connection.ops.bulk_insert_sql(self.fields, placeholders)
        return found

    def execute(self, cursor: Any, n: int, params: list[Any]) -> None:
        """Run the INSERT of ``n`` rows; on SQLite straight on the driver's cursor.

        Django's SQLite cursor rewrites every ``%s`` of a statement into ``?`` with a regular
        expression, about 4 µs a row of 18 values, in the serving process; its debug cursor
        would also keep every batch in ``connection.queries``. The statement here already has
        ``?``, and the driver's errors still become Django's (``wrap_database_errors``).
        """
        if not self.qmark:
            cursor.execute(self.sql(n), params)
            return
        with self.connection.wrap_database_errors:
            _sqlite_execute(cursor.cursor, self.sql(n), params)


_statements: dict[str, _Insert] = {}


def _forget_statements(*, setting: str, **kwargs: Any) -> None:
    """The zone rows are stored in, and the databases, are settings (``override_settings`` in tests)."""
    if setting in ("USE_TZ", "TIME_ZONE", "DATABASES"):
        _statements.clear()


setting_changed.connect(_forget_statements)


def _statement(connection: Any) -> _Insert:
    """The INSERT for ``connection`` and the function making an entry its row (built once per alias)."""
    made = _statements.get(connection.alias)
    if made is not None:
        return made
    ops = connection.ops
    zone = connection.timezone if settings.USE_TZ else None  # the zone the backend stores times in
    adapt_time: Callable[[datetime], Any] = ops.adapt_datetimefield_value
    adapt_json: Callable[[Any, Any], Any] = _json_text  # the backend takes JSON text: the same, four times faster
    copy = _copies(connection)
    if copy:  # COPY's text format: a time as psycopg dumps it, JSON as its text
        adapt_time = _same
    elif type(ops).adapt_json_value is not BaseDatabaseOperations.adapt_json_value:
        backend_json = ops.adapt_json_value

        def adapt_json(value: Any, encoder: Any) -> Any:
            return backend_json(storable(value), encoder)

    stamp: Callable[[float], Any]
    if connection.vendor == "sqlite" and zone is not None:
        stamp = TimeText(zone)  # what SQLite's adapter makes of the time, the date and clock made once a second
    elif zone is not None:

        def stamp(at: float) -> Any:
            return adapt_time(datetime.fromtimestamp(at, tz=zone))

    else:

        def stamp(at: float) -> Any:
            return adapt_time(Entry.when_naive(at))

    def prepare(entry: Entry) -> tuple[Any, ...]:
        return (
            stamp(entry.at),
            entry.method,  # method, revision, transport: the server's own short names (``_record``)
            _text(entry.target, 255),
            entry.user_id,
            _text(entry.username, 150),
            _text(entry.client_id, 255),
            entry.session,
            entry.revision,
            entry.transport,
            entry.duration_ms,
            entry.outcome,
            _clamp(entry.error_code),
            entry.http_status,
            min(entry.request_bytes, _INT_MAX),
            min(entry.response_bytes, _INT_MAX),
            _text(entry.task_id, 64),
            None if entry.arguments is None else adapt_json(entry.arguments, None),
            None if entry.result is None else adapt_json(entry.result, None),
        )

    made = _statements[connection.alias] = _Insert(connection, prepare, copy)
    return made


def _copies(connection: Any) -> bool:
    """Whether the batch goes by ``COPY``: PostgreSQL through psycopg 3.

    A multi-row INSERT there cost about 85 µs a row in the serving process (psycopg binds every
    value of the statement in Python, client side); ``COPY`` writes each row in psycopg's C code.
    """
    if connection.vendor != "postgresql":
        return False
    from django.db.backends.postgresql.psycopg_any import is_psycopg3  # reason: importable only with a driver

    return bool(is_psycopg3)


def _sqlite_variables(connection: Any) -> int | None:
    """How many parameters the SQLite library binds in one statement (None: unknown, Python 3.10)."""
    connection.ensure_connection()
    getlimit = getattr(connection.connection, "getlimit", None)
    which = getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)  # both Python 3.11+
    return int(getlimit(which)) if getlimit is not None and which is not None else None


#: The driver's own ``execute`` (Django's SQLite cursor subclasses the driver's and converts ``%s`` first).
_sqlite_execute = sqlite3.Cursor.execute


def _same(value: Any) -> Any:
    return value


def _text(value: str, length: int) -> str:
    """``value`` cut to its column, a NUL made U+FFFD (PostgreSQL's text refuses NUL; a client may send one)."""
    value = value[:length]
    return value.replace("\x00", NUL_SUBSTITUTE) if "\x00" in value else value


#: What a NUL character in a recorded string becomes, in every database (PostgreSQL stores none).
NUL_SUBSTITUTE = "\ufffd"


def storable(value: Any) -> Any:
    """``value`` as every database stores it; the same object when nothing in it needs changing.

    Every NUL in its strings (keys too) becomes U+FFFD: a NUL is a valid JSON string character,
    but PostgreSQL's ``jsonb`` refuses ``\\u0000``, and a client may send one. A float no JSON
    holds (``1e999`` parses to infinity) becomes the text ``"Infinity"``, ``"-Infinity"`` or
    ``"NaN"``: SQLite's and PostgreSQL's JSON refuse those tokens. The record keeps the rest
    instead of being refused. The serialized text tells whether either is there (faster than
    walking the value in Python).
    """
    return _without_nul(value) if _needs_cleaning(dumps(value)) else value


def _needs_cleaning(text: bytes) -> bool:
    return b"\\u0000" in text or b"Infinity" in text or b"NaN" in text


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", NUL_SUBSTITUTE)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


class TimeText:
    """A POSIX time as SQLite's Django backend stores it: ``str()`` of the naive time in ``zone``.

    ``str(datetime)`` costs the writer about a third of preparing a row, and a batch's rows share
    their second: its ``YYYY-MM-DD HH:MM:SS`` is made once, and only the microseconds per row,
    rounded as ``datetime.fromtimestamp`` rounds them (half to even), so the text is the same.
    """

    __slots__ = ("_made", "zone")

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        self._made: tuple[float, str] = (math.inf, "")  # (the second, its text): one object, swapped whole

    def __call__(self, at: float) -> str:
        fraction, second = math.modf(at)
        micro = round(fraction * 1e6)
        if micro >= 1_000_000:  # rounded up into the next second
            micro -= 1_000_000
            second += 1.0
        elif micro < 0:  # a time before 1970: modf's parts are both negative
            micro += 1_000_000
            second -= 1.0
        made = self._made
        if made[0] != second:
            made = self._made = (second, str(datetime.fromtimestamp(second, tz=self.zone).replace(tzinfo=None)))
        return f"{made[1]}.{micro:06d}" if micro else made[1]


def _json_text(value: Any, encoder: Any) -> str:
    text = dumps(value)
    if _needs_cleaning(text):
        text = dumps(_without_nul(value))
    return text.decode()


def _unavailable(exc: DatabaseError) -> bool:
    from django.db import InterfaceError, OperationalError  # reason: the two "cannot reach it" classes only

    return isinstance(exc, (OperationalError, InterfaceError))


writer: BatchWriter[Entry] = BatchWriter(
    "audit",
    write,
    interval=lambda: float(mcp_settings.AUDIT_FLUSH_INTERVAL),
    batch_size=lambda: int(mcp_settings.AUDIT_BATCH_SIZE),
    capacity=lambda: int(mcp_settings.AUDIT_BUFFER_SIZE),
    away=lambda exc: isinstance(exc, DatabaseError) and _unavailable(exc),
)
drain.on_drain(writer.wake)  # SIGTERM: write what is buffered now; the calls still running follow at exit


def flush() -> int:
    """Write the buffered audit records now, on this thread (in a test: inside its transaction).

    Under pytest nothing else writes them (``django_mcp.pytest_plugin``); in a server the
    background writer does, every ``AUDIT_FLUSH_INTERVAL`` seconds. Returns how many it wrote.
    """
    return writer.flush()


class AuditMiddleware:
    """Records each audited request after it ends, whatever the outcome; never changes the outcome."""

    keeps_replies = True  # never edits a reply an inner middleware returned (Call.encode)

    def __init__(self, call_next: CallNext) -> None:
        self.call_next = call_next

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        if call.method not in AUDITED:
            return await self.call_next(call)
        target = call.target
        policy = getattr(target, "audit", REDACTED)
        keep = mcp_settings.AUDIT_LOG
        log = calllog.enabled()
        if policy is False or not (keep or log):
            return await self.call_next(call)
        at = time.time()
        arguments: Any = None
        if keep and policy != HIDDEN and call.method != "resources/read":
            # What the client asked, copied before anything inside can change it.
            sensitive = None if policy == FULL else pattern(mcp_settings.AUDIT_SENSITIVE_KEYS)
            arguments = redact(call.arguments, sensitive)
        request_bytes = call.exchange.request.size or len(dumps(call.params))  # the bytes it came in, if known
        limit = mcp_settings.AUDIT_MAX_PAYLOAD_BYTES
        if arguments is not None and limit is not None and request_bytes > limit:  # else the arguments fit
            arguments = bounded(arguments, limit)
        try:
            response = await self.call_next(call)
        except asyncio.CancelledError:
            self._record(call, at, arguments, request_bytes, None, 0, keep, log, policy)
            raise
        raw = None
        if response is not None:
            response, raw = call.encode(response)
        self._record(
            call, at, arguments, request_bytes, response, len(raw) if raw is not None else 0, keep, log, policy
        )
        return response

    def _record(
        self,
        call: Call,
        at: float,
        arguments: Any,
        request_bytes: int,
        response: dict[str, Any] | None,
        response_bytes: int,
        keep: bool,
        log: bool,
        policy: Any,
    ) -> None:
        outcome, code, status, task_id, result = _outcome(response)
        user = call.user
        user_id = getattr(user, "pk", None)
        sid = call.session_id
        entry = Entry(  # positional: the fields' order
            at,
            call.method,
            call.name or "",
            user_id,
            _username(user) if user_id is not None else "",
            call.client_id,
            sid[:SESSION_PREFIX] if sid else "",
            call.revision,
            call.transport,
            (time.monotonic() - call.started) * 1000,
            outcome,
            code,
            status,
            request_bytes,
            response_bytes,
            call.task_id or task_id,
            arguments,
            bounded(result, mcp_settings.AUDIT_MAX_PAYLOAD_BYTES) if policy == FULL and keep else None,
        )
        if keep:
            writer.add(entry)
        if log:
            calllog.emit(entry)


def bounded(value: Any, limit: int | None) -> Any:
    """``value``, or when its JSON text is longer than ``limit`` bytes a record that says so, with its start."""
    if value is None or limit is None:
        return value
    text = dumps(value)
    if len(text) <= limit:
        return value
    preview = text[: max(0, limit - 256)].decode("utf-8", errors="ignore")  # room for the marker's own keys
    return {"truncated": True, "bytes": len(text), "preview": preview}


def _username(user: Any) -> str:
    get = getattr(user, "get_username", None)
    return str(get() if get is not None else user)


def _outcome(response: dict[str, Any] | None) -> tuple[str, int | None, int | None, str, Any]:
    """How a request ended: outcome, JSON-RPC error code, HTTP status, the task it created, its result."""
    if response is None:
        return MCPCallRecord.CANCELLED, None, None, "", None
    error = response.get("error")
    if error is not None:
        code = error.get("code") if isinstance(error, dict) else None
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        if isinstance(response, Refusal):
            return MCPCallRecord.REFUSED, code, response.status, "", None
        return MCPCallRecord.ERROR, code, None, "", None
    result = response.get("result")
    if not isinstance(result, dict):
        return MCPCallRecord.OK, None, None, "", result
    kind = result.get("resultType")
    if kind == "task":  # 2026-07-28: the task handle inline
        return MCPCallRecord.TASK, None, None, str(result.get("taskId", "")), result
    task = result.get("task")
    if isinstance(task, dict) and "taskId" in task:  # 2025-11-25: CreateTaskResult
        return MCPCallRecord.TASK, None, None, str(task["taskId"]), result
    if kind == "input_required":
        return MCPCallRecord.INPUT_REQUIRED, None, None, "", result
    if result.get("isError") is True:
        return MCPCallRecord.TOOL_ERROR, None, None, "", result
    return MCPCallRecord.OK, None, None, "", result


__all__ = ["AUDITED", "COLUMNS", "AuditMiddleware", "Entry", "flush", "write", "writer"]
