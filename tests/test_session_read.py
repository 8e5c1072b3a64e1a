"""WSGI mode's per-request session read (``django_mcp.state.session_read``): the ORM's answer, without its cost,
and on the request's own thread when its connection is kept (``sessions.prefetch``).

Compared with ``MCPSession.objects.filter(...).first()`` on the same rows, on both databases the suite
runs on, with ``USE_TZ`` on and off (the bound time is adapted as the field adapts it).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_mcp.models import MCPSession
from django_mcp.state import session_read
from django_mcp.state.session_read import SessionRow, live_session

pytestmark = pytest.mark.django_db


def _orm(sid: str, since: Any) -> MCPSession | None:
    return MCPSession.objects.filter(id=sid, ended__isnull=True, last_seen__gte=since).first()


def _fields(row: Any) -> dict[str, Any] | None:
    """What a request reads of a session (``SessionRow``'s fields), from either answer."""
    if row is None:
        return None
    return {name: getattr(row, name) for name in SessionRow._fields}


@pytest.fixture(autouse=True)
def _fresh_statements() -> None:
    session_read._local.__dict__.clear()  # compiled for the settings of the test that runs


def _sessions() -> dict[str, MCPSession]:
    now = timezone.now()
    alice = get_user_model().objects.create_user("alice")
    common = {"protocol_version": "2025-11-25", "initialized": True}
    return {
        "live": MCPSession.objects.create(
            id="live-1",
            user=alice,
            oauth_client="client-a",
            client_info={"name": "inspector", "version": "1.0"},
            client_capabilities={"roots": {"listChanged": True}},
            subscriptions=["file:///a.txt", "fixture://café"],
            log_level="debug",
            last_seen=now,
            **common,
        ),
        "ended": MCPSession.objects.create(id="ended-1", last_seen=now, ended=now, **common),
        "idle": MCPSession.objects.create(id="idle-1", last_seen=now - timedelta(hours=3), **common),
    }


@pytest.mark.parametrize("use_tz", [True, False])
def test_it_answers_what_the_orm_answers(use_tz: bool) -> None:
    with override_settings(USE_TZ=use_tz):
        _sessions()
        since = timezone.now() - timedelta(hours=1)
        for sid in ("live-1", "ended-1", "idle-1", "nobody", "live-1' OR '1'='1"):
            assert _fields(live_session(sid, since)) == _fields(_orm(sid, since)), sid
        found = live_session("live-1", since)
        assert found is not None and found.subscriptions == ["file:///a.txt", "fixture://café"]
        assert found.client_capabilities == {"roots": {"listChanged": True}} and found.log_level == "debug"
        assert found.last_seen.tzinfo is not None if use_tz else found.last_seen.tzinfo is None
        # The cut-off is bound per read, not compiled in: a later one leaves the session out.
        assert live_session("live-1", timezone.now() + timedelta(seconds=5)) is None


def test_a_session_ended_after_a_read_is_gone_on_the_next() -> None:
    rows = _sessions()
    since = timezone.now() - timedelta(hours=1)
    assert live_session("live-1", since) is not None
    MCPSession.objects.filter(id=rows["live"].id).update(ended=timezone.now())  # another worker's DELETE
    assert live_session("live-1", since) is None


@pytest.mark.parametrize("logged", [False, True])
def test_a_row_read_again_unchanged_is_reused_and_any_change_is_read(logged: bool) -> None:
    """The row made of the same raw values is the answer again (no decoding); a change made by another
    worker (log level, subscriptions, a touch, the owner) is read at the next request. ``logged``: queries
    logged (``DEBUG``, ``CaptureQueriesContext``), where the read goes through Django's cursor."""
    _sessions()
    since = timezone.now() - timedelta(hours=1)
    with CaptureQueriesContext(connection) if logged else _nothing() as queries:
        first = live_session("live-1", since)
        assert first is not None and live_session("live-1", since) is first
        changes: list[dict[str, Any]] = [
            {"log_level": "error"},
            {"subscriptions": ["file:///b.txt"]},
            {"last_seen": timezone.now()},
            {"user": None},
            {"client_capabilities": {"sampling": {}}},
        ]
        seen = first
        for change in changes:
            MCPSession.objects.filter(id="live-1").update(**change)
            again = live_session("live-1", since)
            assert again is not seen and _fields(again) == _fields(_orm("live-1", since)), change
            seen = again
    if logged:  # each read is a logged SELECT of the session table (two reads + one per change)
        reads = [q for q in queries if q["sql"].startswith("SELECT") and MCPSession._meta.db_table in q["sql"]]
        assert len(reads) == 2 + len(changes) + len(changes)  # _orm() reads once per change too


def test_the_rows_kept_per_thread_are_bounded() -> None:
    now = timezone.now()
    for n in range(session_read.KEPT + 10):
        MCPSession.objects.create(id=f"s-{n}", protocol_version="2025-11-25", last_seen=now)
        assert live_session(f"s-{n}", now - timedelta(hours=1)) is not None
    kept = session_read._local.reads[connection.alias].made
    assert len(kept) <= session_read.KEPT and f"s-{session_read.KEPT + 9}" in kept
    MCPSession.objects.filter(id="s-0").delete()
    assert live_session("s-0", now - timedelta(hours=1)) is None


class _nothing:
    def __enter__(self) -> list[dict[str, Any]]:
        return []

    def __exit__(self, *exc: object) -> None:
        return None


# -- WSGI mode: the read on the worker's own thread (sessions.prefetch) ---------------------------------------

ACCEPT = "application/json, text/event-stream"


def _wsgi_post(client: Any, body: dict[str, Any], sid: str | None = None) -> Any:
    headers = {"HTTP_ACCEPT": ACCEPT, "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}
    if sid is not None:
        headers["HTTP_MCP_SESSION_ID"] = sid
    return client.post("/mcp/", data=json.dumps(body), content_type="application/json", **headers)


def _open(client: Any) -> str:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    reply = _wsgi_post(client, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    sid = str(reply["Mcp-Session-Id"])
    assert _wsgi_post(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid).status_code == 202
    return sid


def _session_selects_here(client: Any, sid: str, body: dict[str, Any]) -> tuple[Any, int]:
    """The reply, and how many SELECTs of the session table ran on this (the request's) thread."""
    with CaptureQueriesContext(connection) as queries:
        reply = _wsgi_post(client, body, sid)
    table = MCPSession._meta.db_table
    return reply, sum(1 for q in queries if q["sql"].startswith("SELECT") and table in q["sql"])


PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("age", [0, 60])
def test_wsgi_mode_reads_the_session_on_its_own_thread_when_the_connection_is_kept(age: int) -> None:
    """CONN_MAX_AGE > 0 (or a pool): one SELECT on the request's thread, no hop to a bookkeeping thread.
    CONN_MAX_AGE = 0 without a pool: the read stays on the bookkeeping thread, whose connection stays open
    (on the request's thread each request would connect anew)."""
    with override_settings(ROOT_URLCONF="tests.settings.urls_wsgi"):
        connection.settings_dict["CONN_MAX_AGE"] = age
        try:
            client = Client(HTTP_HOST="127.0.0.1", REMOTE_ADDR="127.0.0.1", SERVER_NAME="127.0.0.1")
            sid = _open(client)
            reply, here = _session_selects_here(client, sid, PING)
            assert reply.status_code == 200 and reply.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}
            assert here == (1 if age else 0)
            # Ended by another worker: the next request's read sees it, prefetched or not.
            MCPSession.objects.filter(id=sid).update(ended=timezone.now())
            reply, _ = _session_selects_here(client, sid, PING)
            assert reply.status_code == 404
            # Someone else's session is not found either: the owner check still applies to a prefetched row.
            other = _open(client)
            alice = get_user_model().objects.create_user("alice-wsgi")
            MCPSession.objects.filter(id=other).update(user=alice)
            reply, here = _session_selects_here(client, other, PING)
            assert reply.status_code == 404 and here == (1 if age else 0)
        finally:
            connection.settings_dict["CONN_MAX_AGE"] = 0
            connection.close()


@pytest.mark.django_db(transaction=True)
def test_wsgi_mode_inside_a_project_transaction_reads_on_the_bookkeeping_thread() -> None:
    """``ATOMIC_REQUESTS``: the view runs in the project's transaction, which a failed read would spoil."""
    connection.settings_dict["CONN_MAX_AGE"] = 60
    try:
        with override_settings(ROOT_URLCONF="tests.settings.urls_wsgi"):
            client = Client(HTTP_HOST="127.0.0.1", REMOTE_ADDR="127.0.0.1", SERVER_NAME="127.0.0.1")
            sid = _open(client)
            connection.settings_dict["ATOMIC_REQUESTS"] = True
            reply, here = _session_selects_here(client, sid, PING)
            assert reply.status_code == 200 and here == 0
    finally:
        connection.settings_dict["ATOMIC_REQUESTS"] = False
        connection.settings_dict["CONN_MAX_AGE"] = 0
        connection.close()
