"""PostgreSQL restart under a real worker (daphne and uvicorn): no 500, and recovery within 2 s.

A private PostgreSQL 15 cluster on its own port, a worker with ``CONN_HEALTH_CHECKS`` on and
either ``CONN_MAX_AGE`` > 0 (persistent connections that a restart breaks) or Django's psycopg
pool as docs/deployment.md sets it up (whose waiting requests the stop leaves without a
connection), sessions revalidated on every request (so session lookups need the database). While the
database is stopped: requests that cannot be served without it (``initialize``, a
session lookup, GET, DELETE) answer 503 with ``Retry-After``; tool calls whose tool hits
the database (sync and async tools, stateless era, and a sync tool whose query the stop
cut short) answer a retryable JSON-RPC error.
After ``pg_ctl start``: initialize, sync and async tools and session requests succeed
within 2 s.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.production.private_postgres import PrivatePostgres
from tests.support.rawasync import AsyncRaw, Reply
from tests.support.servers import ROOT, _reachable, free_port, log_problem, server_env, stop_process

pytestmark = pytest.mark.production

ROUNDS = 4  # rounds of requests fired while the database is down (8 requests each)
RECOVERY_BOUND = 2.0
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivatePostgres]:
    pg = PrivatePostgres()
    pg.start()
    yield pg
    pg.destroy()


class Worker:
    def __init__(
        self, kind: str, env: dict[str, str], log: Path, port: int = 0, app: str = "tests.settings.asgi:application"
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp/"
        self.log = log
        if kind == "daphne":
            cmd = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), app]
        else:
            cmd = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1"]
            cmd += ["--port", str(self.port), "--lifespan", "off"]
        self._out = log.open("wb")
        self.process = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=self._out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not _reachable(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{kind} did not start:\n{log.read_text()}")
            time.sleep(0.1)

    def stop(self) -> None:
        stop_process(self.process)
        self._out.close()


async def stateless_call(raw: AsyncRaw, tool: str, arguments: dict[str, Any] | None = None) -> Reply:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments or {}, "_meta": META},
    }
    return await raw.post(body, {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": tool})


async def get_stream(raw: AsyncRaw, sid: str) -> Reply:
    start = time.monotonic()
    headers = {"accept": "text/event-stream", **raw.headers(sid)}
    async with raw.http.stream("GET", raw.url, headers=headers) as response:
        if response.status_code == 200:  # a live stream: it must not open while the database is down
            return Reply(response, time.monotonic() - start)
        await response.aread()
        return Reply(response, time.monotonic() - start)


async def delete(raw: AsyncRaw, sid: str) -> Reply:
    start = time.monotonic()
    response = await raw.http.delete(raw.url, headers=raw.headers(sid))
    return Reply(response, time.monotonic() - start)


def classify(reply: Reply) -> str:
    """``503``, ``jsonrpc-error`` (retryable), or what went wrong."""
    if reply.status == 503:
        retry = reply.headers.get("retry-after", "")
        return "503" if retry.isdigit() and int(retry) > 0 else f"503-without-retry-after {reply!r}"
    if reply.status == 200 and reply.error is not None:
        data = reply.error.get("data") or {}
        if data.get("retryable") is True and data.get("reason") == "database_unavailable":
            return "jsonrpc-error"
        return f"other-jsonrpc-error {reply!r}"
    return f"unexpected {reply!r}"


async def fire_while_down(raw: AsyncRaw, sid: str) -> tuple[Counter[str], list[str]]:
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    for _ in range(ROUNDS):
        replies = await asyncio.gather(
            raw.initialize(),
            raw.ping(sid),
            raw.call(sid, "sync_db"),
            get_stream(raw, sid),
            stateless_call(raw, "sync_db"),
            stateless_call(raw, "async_db"),
            stateless_call(raw, "add", {"a": 1, "b": 2}),  # no query of its own: its savepoint needs the DB
            delete(raw, sid),
        )
        for reply in replies:
            kind = classify(reply)
            counts[kind if kind in ("503", "jsonrpc-error") else "wrong"] += 1
            counts[f"http-{reply.status}"] += 1
            if kind not in ("503", "jsonrpc-error"):
                wrong.append(kind)
    return counts, wrong


async def recovered(raw: AsyncRaw, sid: str) -> list[str]:
    """What still fails now (empty once the worker has recovered)."""
    failing = []
    init = await raw.initialize()
    if init.status != 200:
        failing.append(f"initialize {init!r}")
    ping = await raw.ping(sid)
    if ping.status != 200 or ping.error is not None:
        failing.append(f"ping {ping!r}")
    for name, reply in (
        ("sync tool", await raw.call(sid, "sync_db")),
        ("stateless sync tool", await stateless_call(raw, "sync_db")),
        ("stateless async tool", await stateless_call(raw, "async_db")),
    ):
        if reply.status != 200 or reply.error is not None or (reply.result or {}).get("isError"):
            failing.append(f"{name} {reply!r}")
    return failing


@pytest.mark.parametrize("connections", ["persistent", "pool"])
@pytest.mark.parametrize("kind", ["daphne", "uvicorn"])
async def test_postgres_restart(cluster: PrivatePostgres, kind: str, connections: str, tmp_path: Path) -> None:
    """``persistent``: ``CONN_MAX_AGE = 60``; ``pool``: Django's psycopg pool, as docs/deployment.md sets it."""
    name = f"mcp_{kind}_{connections}"
    cluster.create_database(name)
    env = server_env(
        tmp_path,
        db="postgres",
        MCP_PG_NAME=name,
        MCP_PG_PORT=str(cluster.port),
        MCP_CONN_MAX_AGE="60",
        MCP_CONN_HEALTH_CHECKS="1",
        MCP_SESSION_REVALIDATE="0",
        **({"MCP_PG_POOL": "20"} if connections == "pool" else {}),
    )
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v0"], env=env, cwd=ROOT, check=True, timeout=120
    )
    worker = Worker(kind, env, tmp_path / f"{kind}.log")
    try:
        async with AsyncRaw(worker.url, timeout=15) as raw:
            sid = await raw.session()
            assert await recovered(raw, sid) == [], "the worker does not work before the fault"

            # A sync tool inside a query when the server goes away: its connection is cut mid-statement.
            inflight = asyncio.ensure_future(stateless_call(raw, "pg_sleep", {"seconds": 10}))
            await asyncio.sleep(0.5)
            cluster.stop()
            started = time.monotonic()
            cut = await asyncio.wait_for(inflight, 15)
            assert classify(cut) == "jsonrpc-error", f"{kind} ({connections}): a call cut mid-query got {cut!r}"
            counts, wrong = await fire_while_down(raw, sid)
            down_for = time.monotonic() - started
            total = ROUNDS * 8
            summary = f"{kind} ({connections}): {total} requests while PostgreSQL was down for {down_for:.1f}s: "
            summary += str(dict(counts))
            assert counts["http-500"] == 0, summary
            assert not wrong, f"{summary}\n" + "\n".join(wrong[:10])
            assert counts["503"] == ROUNDS * 5 and counts["jsonrpc-error"] == ROUNDS * 3, summary

            cluster.start()
            back = time.monotonic()
            failing = await recovered(raw, sid)
            while failing and time.monotonic() - back < RECOVERY_BOUND + 3:
                await asyncio.sleep(0.05)
                failing = await recovered(raw, sid)
            took = time.monotonic() - back
            assert not failing, (
                f"{kind} ({connections}): not recovered {took:.2f}s after PostgreSQL came back: {failing}"
            )
            assert took <= RECOVERY_BOUND, (
                f"{kind} ({connections}): recovery took {took:.2f}s (bound {RECOVERY_BOUND}s); {summary}"
            )
            print(f"\n{summary}; recovered {took:.2f}s after PostgreSQL came back")
    finally:
        worker.stop()
        if not cluster.running():
            cluster.start()
    log = worker.log.read_text(errors="replace")
    assert not (bad := log_problem(log, " 500 ", "Traceback")), bad


def _connections(cluster: PrivatePostgres, database: str) -> int:
    import psycopg

    with psycopg.connect(f"host=127.0.0.1 port={cluster.port} user=postgres dbname=postgres") as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [database]).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.parametrize("max_age", ["0", "60"])
async def test_connections_follow_conn_max_age(cluster: PrivatePostgres, max_age: str, tmp_path: Path) -> None:
    """Each pool call is a request cycle: with ``CONN_MAX_AGE=0`` no connection outlives its call;
    with 60 they are kept, at most one per thread (4 sync + 4 bookkeeping here, and the audit log's writer)."""
    name = f"mcp_age_{max_age}"
    cluster.create_database(name)
    env = server_env(tmp_path, db="postgres", MCP_PG_NAME=name, MCP_PG_PORT=str(cluster.port), MCP_CONN_MAX_AGE=max_age)
    env.update(MCP_SYNC_WORKERS="4", MCP_SESSION_REVALIDATE="0")
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v0"], env=env, cwd=ROOT, check=True, timeout=120
    )
    worker = Worker("daphne", env, tmp_path / "daphne.log")
    try:
        async with AsyncRaw(worker.url) as raw:
            sid = await raw.session()
            replies = await asyncio.gather(
                *(raw.call(sid, "sync_db") for _ in range(12)), *(raw.initialize() for _ in range(8))
            )
            assert all(r.status == 200 and r.error is None for r in replies), replies
            await asyncio.sleep(0.3)
            held = _connections(cluster, name)
    finally:
        worker.stop()
    if max_age == "0":
        assert held == 0, f"{held} connections left open with CONN_MAX_AGE=0 after the calls ended"
    else:
        assert 1 <= held <= 9, f"{held} connections kept with CONN_MAX_AGE=60 (pools of 4 + 4 threads, 1 writer)"


async def test_bearer_check_while_postgres_is_down(cluster: PrivatePostgres, tmp_path: Path) -> None:
    """``AUTH = "oauth"``: the token lookup needs the database; while it is down, 503 + Retry-After
    (not 401, not 500); within 2 s of its return the same token works again."""
    name = "mcp_oauth"
    cluster.create_database(name)
    port = free_port()
    env = server_env(
        tmp_path,
        db="postgres",
        settings="tests.oauth.settings",
        MCP_PG_NAME=name,
        MCP_PG_PORT=str(cluster.port),
        MCP_CONN_MAX_AGE="60",
        MCP_CONN_HEALTH_CHECKS="1",
    )

    def manage(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "django", *args], env=env, cwd=ROOT, check=True, timeout=120, capture_output=True
        )
        return out.stdout.decode().strip()

    manage("migrate", "--noinput", "-v0")
    manage("shell", "-c", "from django.contrib.auth.models import User; User.objects.create_user('alice')")
    url = f"http://127.0.0.1:{port}/mcp/"
    token = manage("mcp_token", "--user", "alice", "--scope", "mcp", "--resource", url).splitlines()[-1]
    worker = Worker("daphne", env, tmp_path / "daphne.log", port=port, app="tests.oauth.asgi:application")
    try:
        async with AsyncRaw(worker.url) as raw:
            raw.http.headers["authorization"] = f"Bearer {token}"
            assert (await raw.initialize()).status == 200
            cluster.stop()
            replies = [await raw.initialize() for _ in range(3)]
            raw.http.headers["authorization"] = "Bearer not-a-token"
            replies.append(await raw.initialize())  # unknown token: cannot be checked either
            raw.http.headers["authorization"] = f"Bearer {token}"
            kinds = [classify(r) for r in replies]
            assert kinds == ["503"] * 4, replies
            cluster.start()
            back = time.monotonic()
            while (reply := await raw.initialize()).status != 200 and time.monotonic() - back < RECOVERY_BOUND + 3:
                await asyncio.sleep(0.05)
            took = time.monotonic() - back
            assert reply.status == 200 and took <= RECOVERY_BOUND, f"bearer check: {reply!r} after {took:.2f}s"
    finally:
        worker.stop()
        if not cluster.running():
            cluster.start()
    log = worker.log.read_text(errors="replace")
    assert not (bad := log_problem(log, " 500 ", "Traceback")), bad
