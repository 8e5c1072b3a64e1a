"""The event store's logs on Django's cache (LocMem here; Redis in tests/production):
numbering, replay positions and the per-session / per-stream / broadcast caps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.cache import caches
from django.test import override_settings

from django_mcp.events import REPLAYABLE, events, get_event_id, parse_event_id, parse_get_event_id


@pytest.fixture(autouse=True)
def small_caps() -> Iterator[None]:
    caches["default"].clear()
    limits = {
        "EVENT_STORE_SESSION_MAX_EVENTS": 10,
        "EVENT_STORE_BROADCAST_MAX_EVENTS": 5,
        "EVENT_STORE_MAX_EVENTS": 4,
    }
    with override_settings(DJANGO_MCP=limits):
        yield
    caches["default"].clear()


def test_get_event_ids_carry_both_positions() -> None:
    assert parse_get_event_id(get_event_id("gabc", 7, 12)) == ("gabc", 7, 12)
    assert parse_get_event_id("gabc_7") is None and parse_event_id("gabc_7") == ("gabc", 7)
    assert parse_get_event_id("gabc_7.x") is None and parse_get_event_id("g" * 70 + "_1.1") is None
    # Unicode digits pass str.isdigit() but not int(): they must be refused, not raise.
    for bad in ("abc_\u00b2", "gabc_1.\u00b9", "gabc_\u00b3.1", "ab c_1", "abc_-1", "abc_1 "):
        assert parse_event_id(bad) is None and parse_get_event_id(bad) is None, bad


def test_session_log_numbers_per_session_and_keeps_the_newest() -> None:
    numbers = [events.append_session_sync("s1", f'{{"n":{i}}}'.encode()) for i in range(25)]
    assert numbers == list(range(1, 26))
    assert events.append_session_sync("s2", b"{}") == 1  # another session counts on its own
    kept = events.session_after_sync("s1", 0)
    assert [n for n, _ts, _d in kept] == list(range(16, 26))  # the cap: 10
    assert [n for n, _ts, _d in events.session_after_sync("s1", 22)] == [23, 24, 25]
    assert events.session_after_sync("s1", 20, upto=21)[0][2] == b'{"n":20}'


def test_broadcast_log_stores_only_replayable_kinds_and_caps() -> None:
    assert "bseq" not in events.stamp_broadcast_sync({"kind": "session_ended", "session": "x"})
    stamped = [events.stamp_broadcast_sync({"kind": "list_changed", "list": "tools"}) for _ in range(8)]
    assert [p["bseq"] for p in stamped] == list(range(1, 9)) and "list_changed" in REPLAYABLE
    assert [n for n, _ts, _p in events.broadcasts_after_sync(0)] == [4, 5, 6, 7, 8]  # the cap: 5
    assert events.broadcast_position_sync() == 8


def test_post_stream_cap_and_lease() -> None:
    events.open_sync("s1", "st", request_id=7)
    for i in range(1, 7):
        events.append_sync("s1", "st", i, b"x", done=i == 6)
    replay = events.replay_sync("s1", "st", 0)
    assert replay is not None and [s for s, _d in replay[0]] == [3, 4, 5, 6] and replay[1]
    assert events.request_id_sync("s1", "st") == 7
    assert events.leased_sync("s1", "st")  # opening a stream takes its writer's first lease
    events.release_sync("s1", "st")
    assert not events.leased_sync("s1", "st")
    events.lease_sync("s1", "st")
    assert events.leased_sync("s1", "st")
    events.release_sync("s1", "st")
    assert not events.leased_sync("s1", "st")
