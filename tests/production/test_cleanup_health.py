"""``mcp_cleanup``, the bounded per-worker session cache and the health endpoint, on real workers.

A daphne worker on its own Redis (channel layer and cache) gets thousands of sessions;
its cache stays within ``SESSION_CACHE_SIZE`` (read from the worker's health endpoint),
an evicted session still works, ``mcp_cleanup --dry-run`` counts without changing
anything, the real run ends idle sessions, deletes old ended ones, and its broadcast
makes the worker drop them. The health endpoint answers 503 while Redis is stopped and
200 again once it is back.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from django_mcp.state.lru import LRU
from tests.support.servers import LiveServer, log_problem, server_env, start_server

from .ops import ACCEPT, REVISION, OwnPostgres, OwnRedis, health, session_headers

pytestmark = pytest.mark.production

SESSIONS = 2000
CACHE_SIZE = 1500


async def _open_sessions(url: str, n: int, concurrency: int = 16) -> list[str]:
    """``n`` initialize calls, ``concurrency`` at a time; the session ids in creation order."""
    ids: list[str | None] = [None] * n
    params = {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "bulk", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            i = queue.get_nowait()
            r = await client.post(url, json=body, headers={"accept": ACCEPT})
            assert r.status_code == 200, r.text
            ids[i] = r.headers["mcp-session-id"]

    async with httpx.AsyncClient(timeout=30) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    return [sid for sid in ids if sid is not None]


def _tools_list(server: LiveServer, sid: str) -> int:
    r = httpx.post(
        server.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=session_headers(sid), timeout=10
    )
    return r.status_code


def _count_rows(server: LiveServer) -> int:
    out = server.manage("shell", "-c", "from django_mcp.models import MCPSession; print(MCPSession.objects.count())")
    return int(out.strip().splitlines()[-1])


def _last_line(output: str) -> str:
    """What a ``shell -c`` printed last (Django 5.2's shell first reports its automatic imports)."""
    return output.strip().splitlines()[-1]


def _cached(server: LiveServer) -> int:
    return int(health(server).json()["worker"]["sessions_cached"])


def test_cleanup_cache_bound_and_broadcast(tmp_path: Path) -> None:
    redis = OwnRedis(tmp_path)
    redis.start()
    env = server_env(
        tmp_path,
        layer="redis",
        settings="tests.production.ops_settings",
        MCP_REDIS_URL=redis.url,
        MCP_SESSION_CACHE_SIZE=str(CACHE_SIZE),
    )
    server = start_server(env, tmp_path / "server.log")
    try:
        started = time.monotonic()
        ids = asyncio.run(_open_sessions(server.url, SESSIONS))
        created = time.monotonic() - started
        assert len(ids) == SESSIONS
        assert created < 120, f"{SESSIONS} sessions took {created:.1f}s"

        # The worker's cache is bounded; the oldest entries went first and reload from the database.
        assert _cached(server) == CACHE_SIZE
        assert _tools_list(server, ids[0]) == 200
        assert _cached(server) == CACHE_SIZE

        ended, idle = ids[1000:1200], ids[1200:]
        with httpx.Client(timeout=10) as http:
            for sid in ended:
                assert http.delete(server.url, headers=session_headers(sid)).status_code == 200
        assert _cached(server) == CACHE_SIZE - len(ended)
        # Two hours without a request (SESSION_IDLE_TIMEOUT is one hour): as if time had passed.
        server.manage(
            "shell",
            "-c",
            "import sys, datetime; from django.utils import timezone; from django_mcp.models import MCPSession;"
            " ids = sys.stdin.read().split();"
            " MCPSession.objects.filter(id__in=ids).update(last_seen=timezone.now() - datetime.timedelta(hours=2))",
            input="\n".join(idle),
        )

        dry = server.manage("mcp_cleanup", "--dry-run", "--retention", "0")
        assert f"idle sessions would be ended: {len(idle)}" in dry, dry
        assert f"ended sessions would be deleted: {len(ended) + len(idle)}" in dry, dry
        assert _count_rows(server) == SESSIONS
        before = _cached(server)

        real = server.manage("mcp_cleanup", "--retention", "0")
        assert f"idle sessions ended: {len(idle)}" in real, real
        assert f"ended sessions deleted: {len(ended) + len(idle)}" in real, real
        assert "stored events: expired by the cache itself" in real, real
        assert _count_rows(server) == SESSIONS - len(ended) - len(idle)

        # The broadcast reached the worker: the idle sessions left its cache without a request.
        deadline = time.monotonic() + 5
        while _cached(server) > before - len(idle) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _cached(server) == before - len(idle)
        assert _tools_list(server, idle[0]) == 404
        assert _tools_list(server, ids[0]) == 200

        again = server.manage("mcp_cleanup", "--retention", "0")
        assert "idle sessions ended: 0" in again and "ended sessions deleted: 0" in again, again
        log = server.log.read_text(errors="replace")
        assert not (bad := log_problem(log, "Traceback", " 500 ")), bad
        print(f"{SESSIONS} sessions created in {created:.1f}s; cache {CACHE_SIZE}; cleanup ended {len(idle)}")
    finally:
        server.stop()
        redis.stop()


STORE_EVENTS = """
from django_mcp.conf import mcp_settings
from django_mcp.state.event_store import events
mcp_settings.EVENT_STORE_TTL = 1
for stream in range(30):
    events.append_sync("s1", f"old{stream}", 1, b"{}")
events.append_session_sync("s1", b"{}")  # the session log's event expires; its counter lives longer
mcp_settings.EVENT_STORE_TTL = 3600
for stream in range(5):
    events.append_sync("s1", f"new{stream}", 1, b"{}")
"""


def test_cleanup_deletes_expired_events_of_a_database_cache(tmp_path: Path) -> None:
    """Django's database cache never removes an expired row itself: mcp_cleanup does, and only expired events."""
    env = server_env(tmp_path, settings="tests.production.ops_settings", MCP_EVENT_CACHE="db")
    server = start_server(env, tmp_path / "server.log")
    try:
        server.manage("createcachetable")
        server.manage("shell", "-c", STORE_EVENTS)
        time.sleep(2.1)  # the first 30 expire (the database cache stores whole seconds)
        rows = (
            "from django.db import connection; c = connection.cursor();"
            " c.execute('SELECT COUNT(*) FROM mcp_test_cache'); print(c.fetchone()[0])"
        )
        assert _last_line(server.manage("shell", "-c", rows)) == "37"
        dry = server.manage("mcp_cleanup", "--dry-run")
        assert "stored events: 31 would be deleted" in dry, dry
        assert _last_line(server.manage("shell", "-c", rows)) == "37"
        real = server.manage("mcp_cleanup")
        assert "stored events: 31 deleted" in real, real
        assert _last_line(server.manage("shell", "-c", rows)) == "6"
        check = (
            "from django_mcp.state.event_store import events; print(events.replay_sync('s1', 'new0', 0) is not None)"
        )
        assert _last_line(server.manage("shell", "-c", check)) == "True"
    finally:
        server.stop()


def test_health_follows_the_channel_layer(tmp_path: Path) -> None:
    redis = OwnRedis(tmp_path)
    redis.start()
    env = server_env(tmp_path, layer="redis", settings="tests.production.ops_settings", MCP_REDIS_URL=redis.url)
    server = start_server(env, tmp_path / "server.log")
    try:
        ok = health(server)
        assert ok.status_code == 200, ok.text
        body = ok.json()
        assert body["status"] == "ok" and body["checks"] == {"database": "ok", "channel_layer": "ok"}
        assert set(body["worker"]) == {"sessions_cached", "tokens_cached", "open_streams", "requests_in_flight"}
        assert ok.headers["cache-control"] == "no-store"
        assert httpx.head(f"{server.base}/mcp/health").status_code == 200
        assert httpx.post(f"{server.base}/mcp/health").status_code == 405

        redis.stop()
        started = time.monotonic()
        down = health(server)
        took = time.monotonic() - started
        assert down.status_code == 503, down.text
        assert down.json()["status"] == "unavailable" and down.json()["checks"]["channel_layer"] == "down"
        assert down.headers["retry-after"] == "1"
        assert took < 2 + 1.5, f"the probe took {took:.1f}s with Redis down (HEALTH_TIMEOUT is 2)"

        redis.start()
        deadline = time.monotonic() + 10
        while health(server).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert health(server).json()["status"] == "ok"
        assert " 500 " not in server.log.read_text(errors="replace")
    finally:
        server.stop()
        redis.stop()


def test_health_follows_the_database(tmp_path: Path) -> None:
    pg = OwnPostgres()
    try:
        pg.start()
        env = server_env(
            tmp_path,
            db="postgres",
            settings="tests.production.ops_settings",
            MCP_PG_NAME="postgres",
            MCP_PG_PORT=str(pg.port),
        )
        server = start_server(env, tmp_path / "server.log")
        try:
            assert health(server).json()["checks"]["database"] == "ok"
            pg.stop()
            started = time.monotonic()
            down = health(server)
            took = time.monotonic() - started
            assert down.status_code == 503 and down.headers["retry-after"] == "1", down.text
            assert down.json()["status"] == "unavailable" and down.json()["checks"]["database"] == "down"
            assert took < 2 + 1.5, f"the probe took {took:.1f}s with PostgreSQL down"
            pg.start()
            started = time.monotonic()
            while health(server).status_code != 200 and time.monotonic() - started < 10:
                time.sleep(0.1)
            recovered = time.monotonic() - started
            assert health(server).json()["status"] == "ok"
            assert recovered < 2, f"healthy again {recovered:.1f}s after PostgreSQL came back"
            assert " 500 " not in server.log.read_text(errors="replace")
            print(f"health: down in {took:.2f}s, ok again {recovered:.2f}s after PostgreSQL restarted")
        finally:
            server.stop()
    finally:
        pg.remove()


class _Entry:
    def __init__(self, seen: float) -> None:
        self.seen = seen


def test_lru_bounds_size_and_age() -> None:
    """The in-process half: least recently used goes first, and entries unused past the age bound go."""
    cache: LRU[_Entry] = LRU(lambda: 3, lambda: 10.0)
    t = time.monotonic()
    for key in "abc":
        cache[key] = _Entry(t)
    assert cache.get("a") is not None  # "a" is now the most recently used
    cache["d"] = _Entry(t)
    assert cache.keys() == ["c", "a", "d"]  # "b" was the least recently used
    assert cache.peek("c") is not None and cache.keys()[0] == "c"  # peek does not refresh
    cache.get("c").seen = t + 5  # type: ignore[union-attr]
    assert cache.prune(now=t + 12) == 2  # "a" and "d" unused for 12 s, "c" for 7 s
    assert cache.keys() == ["c"]
    assert cache.pop("c") is not None and len(cache) == 0
