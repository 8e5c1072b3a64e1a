"""WSGI mode's per-request session read (``django_mcp.session_read``): the ORM's answer, without its cost.

Compared with ``MCPSession.objects.filter(...).first()`` on the same rows, on both databases the suite
runs on, with ``USE_TZ`` on and off (the bound time is adapted as the field adapts it).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.utils import timezone

from django_mcp import session_read
from django_mcp.models import MCPSession
from django_mcp.session_read import live_session

pytestmark = pytest.mark.django_db


def _orm(sid: str, since: Any) -> MCPSession | None:
    return MCPSession.objects.filter(id=sid, ended__isnull=True, last_seen__gte=since).first()


def _fields(row: MCPSession | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {f.attname: getattr(row, f.attname) for f in MCPSession._meta.concrete_fields}


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
