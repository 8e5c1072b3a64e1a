"""The event store's logs on Django's cache (LocMem here; Redis in tests/production):
numbering, replay positions and the per-session / per-stream / broadcast caps."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import override_settings

from django_mcp.state.event_store import REPLAYABLE, events, get_event_id, parse_event_id, parse_get_event_id
from tests.support.servers import clear_cache


@pytest.fixture(autouse=True)
def small_caps() -> Iterator[None]:
    clear_cache()
    limits = {
        "EVENT_STORE_SESSION_MAX_EVENTS": 10,
        "EVENT_STORE_BROADCAST_MAX_EVENTS": 5,
        "EVENT_STORE_MAX_EVENTS": 4,
    }
    with override_settings(DJANGO_MCP=limits):
        yield
    clear_cache()


def test_get_event_ids_carry_both_positions() -> None:
    assert parse_get_event_id(get_event_id("gabc", 7, 12)) == ("gabc", 7, 12)
    assert parse_get_event_id("gabc_7") is None and parse_event_id("gabc_7") == ("gabc", 7)
    assert parse_get_event_id("gabc_7.x") is None and parse_get_event_id("g" * 70 + "_1.1") is None
    # Unicode digits pass str.isdigit() but not int(): they must be refused, not raise.
    for bad in ("abc_\u00b2", "gabc_1.\u00b9", "gabc_\u00b3.1", "ab c_1", "abc_-1", "abc_1 "):
        assert parse_event_id(bad) is None and parse_get_event_id(bad) is None, bad


def test_session_log_numbers_per_session_and_keeps_the_newest() -> None:
    numbers = [events.append_session_sync("s1", f'{{"n":{i}}}'.encode()) for i in range(25)]
    o = numbers[0] - 1  # a counter starts at its origin (now, in microseconds), then counts one by one
    assert numbers == list(range(o + 1, o + 26))
    other = events.append_session_sync("s2", b"{}")  # another session counts on its own
    assert other > o and other not in numbers[1:]
    kept = events.session_after_sync("s1", 0)
    assert [n for n, _ts, _d in kept] == list(range(o + 16, o + 26))  # the cap: 10
    assert [n for n, _ts, _d in events.session_after_sync("s1", o + 22)] == [o + 23, o + 24, o + 25]
    assert events.session_after_sync("s1", o + 20, upto=o + 21)[0][2] == b'{"n":20}'


def test_broadcast_log_stores_only_replayable_kinds_and_caps() -> None:
    assert "bseq" not in events.stamp_broadcast_sync({"kind": "session_ended", "session": "x"})
    stamped = [events.stamp_broadcast_sync({"kind": "list_changed", "list": "tools"}) for _ in range(8)]
    o = stamped[0]["bseq"] - 1
    assert [p["bseq"] for p in stamped] == list(range(o + 1, o + 9)) and "list_changed" in REPLAYABLE
    assert [n for n, _ts, _p in events.broadcasts_after_sync(0)] == [o + 4, o + 5, o + 6, o + 7, o + 8]  # cap: 5
    assert events.broadcast_position_sync() == o + 8


def test_counters_lost_with_the_store_start_above_every_number_given() -> None:
    """A store that lost its keys (Redis restarted without persistence) numbers on above what streams saw:
    a GET stream that has seen those numbers takes the new events as new instead of dropping them."""
    s_before, b_before = events.positions_sync("s1")
    seen_s = [events.append_session_sync("s1", b"{}") for _ in range(50)][-1]
    seen_b = [events.stamp_broadcast_sync({"kind": "list_changed", "list": "tools"}) for _ in range(50)][-1]["bseq"]
    assert seen_s == s_before + 50 and seen_b == b_before + 50  # a new stream's position: the next event follows
    time.sleep(0.001)  # numbers are microseconds: a store hands out fewer than one a microsecond
    clear_cache()  # the restart (of this run's keys)
    after_s, after_b = events.positions_sync("s1")
    assert after_s >= seen_s and after_b >= seen_b
    assert events.append_session_sync("s1", b"{}") > seen_s
    assert events.stamp_broadcast_sync({"kind": "list_changed", "list": "tools"})["bseq"] > seen_b
    assert [n for n, _ts, _p in events.broadcasts_after_sync(seen_b)] == [after_b + 1]  # replayed as new


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
