#!/usr/bin/env python
"""MCP tasks on PostgreSQL: how soon a worker starts a task, and how many tasks a second the setup runs.

One daphne serves the conformance fixture server (``tests.conformance.asgi:application``,
``tests.conformance.settings``: DEBUG off, ``AUTH = "none"``) on a fresh PostgreSQL database
of its own (``bench_tasks_<pid>``, 127.0.0.1:5432, user ``postgres``; dropped at the end), next
to ``--workers`` real ``manage.py db_worker`` processes (``--interval 0.05 --no-startup-delay
--no-reload``). The tool is the fixture's ``slow_compute(seconds=0)``: the cost measured is the
tasks machinery, not the tool. Every request is a stateless 2026-07-28 POST over loopback.

* latency: ``--latency-tasks`` tasks one after the other. Per task, from the ``django_mcp_mcptask``
  row: enqueue-to-start (``started - created``) and enqueue-to-finish (``finished - created``);
  as the client sees it: from sending ``tools/call`` to the ``tasks/get`` that says ``completed``
  (polled every 10 ms).
* throughput: ``--tasks`` tasks submitted as fast as ``--clients`` concurrent clients can, timed from
  the first submission until every row is ``completed`` (the rows are watched every 20 ms); then
  the same number of calls of the same tool without the extension (run in the request,
  synchronously) by as many clients, for the ratio.

Only processes this script started are stopped (by their pid). The table goes to stdout and
``benchmarks/results/tasks.md``.

Usage: ``python benchmarks/tasks.py [--workers 2] [--tasks 200] [--clients 4] [--latency-tasks 40]
[--conn-max-age 0]``
(``make bench-tasks``)
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks import run as R  # noqa: E402

RESULTS = HERE / "results" / "tasks.md"
PG = "host=127.0.0.1 port=5432 user=postgres"
TOOL = "slow_compute"
EXTENSION = "io.modelcontextprotocol/tasks"
#: No run waits longer than this for its tasks (seconds).
DEADLINE = 120.0


def meta(tasks: bool) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {EXTENSION: {}}} if tasks else {}
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "bench-tasks", "version": "1"},
    }


class Client:
    """Stateless 2026-07-28 requests over one keep-alive connection."""

    def __init__(self, url: str, tasks: bool) -> None:
        self.url = url
        self.meta = meta(tasks)
        self.http = httpx.AsyncClient(timeout=30, headers={"accept": "application/json, text/event-stream"})
        self.n = 0

    async def rpc(self, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        self.n += 1
        body = {"jsonrpc": "2.0", "id": self.n, "method": method, "params": {**params, "_meta": self.meta}}
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name}
        r = await self.http.post(self.url, json=body, headers=headers)
        r.raise_for_status()
        reply = r.json()
        if "result" not in reply:
            raise RuntimeError(f"{method}: {reply}")
        return reply["result"]  # type: ignore[no-any-return]

    async def call(self, label: str) -> dict[str, Any]:
        return await self.rpc("tools/call", {"name": TOOL, "arguments": {"seconds": 0, "label": label}}, TOOL)

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.rpc("tasks/get", {"taskId": task_id}, task_id)

    async def close(self) -> None:
        await self.http.aclose()


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def summary(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), pct(values, 95), max(values)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.db = f"bench_tasks_{os.getpid()}"
        self.port = R.free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp/"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "tests.conformance.settings",
            "MCP_TEST_DB": "postgres",
            "MCP_PG_NAME": self.db,
            "MCP_CONN_MAX_AGE": str(args.conn_max_age),
            "MCP_CONN_HEALTH_CHECKS": "1" if args.conn_max_age else "0",
        }
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench_tasks_{os.getpid()}"
        self.logs.mkdir(exist_ok=True)

    # -- processes and database ------------------------------------------------------------------------

    def pg(self, sql: str, *params: Any, db: str = "postgres") -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(f"{PG} dbname={db}", autocommit=True) as conn:
            cur = conn.execute(sql, params or None)
            return cur.fetchall() if cur.description else []

    def spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("wb")
        process = subprocess.Popen(command, env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def start(self) -> None:
        self.pg(f"CREATE DATABASE {self.db}")
        django = [sys.executable, "-m", "django"]
        subprocess.run([*django, "migrate", "--noinput", "-v0"], env=self.env, cwd=ROOT, check=True, timeout=300)
        self.spawn(
            "daphne",
            [
                sys.executable, "-m", "daphne", "--access-log", os.devnull,
                "-b", "127.0.0.1", "-p", str(self.port), "tests.conformance.asgi:application",
            ],
        )  # fmt: skip
        for i in range(self.args.workers):
            self.spawn(
                f"worker{i}",
                [*django, "db_worker", "--interval", "0.05", "--no-startup-delay", "--no-reload"],
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for p in self.processes:
                if p.poll() is not None:
                    raise RuntimeError(f"a process exited early; see {self.logs}")
            try:
                httpx.get(self.url, timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"daphne did not start; see {self.logs}")
        time.sleep(2)  # the workers' Django setup

    def stop(self) -> None:
        for p in self.processes:
            if p.poll() is None:
                p.terminate()
        for p in self.processes:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.processes.clear()
        import psycopg

        try:
            self.pg(f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
        except psycopg.Error as exc:  # report, but do not hide the run's own error
            print(f"could not drop {self.db}: {exc}", file=sys.stderr)

    def rows(self, ids: list[str]) -> list[tuple[Any, ...]]:
        return self.pg(
            "SELECT id, status, created, started, finished FROM django_mcp_mcptask WHERE id = ANY(%s)", ids, db=self.db
        )

    # -- measurements ----------------------------------------------------------------------------------

    async def latency(self) -> dict[str, tuple[float, float, float]]:
        client = Client(self.url, tasks=True)
        seen: list[float] = []
        ids: list[str] = []
        try:
            for i in range(3):  # warm-up: connections, the workers' first task
                await self.wait(client, (await client.call(f"warm{i}"))["taskId"])
            for i in range(self.args.latency_tasks):
                t0 = time.perf_counter()
                created = await client.call(f"lat{i}")
                await self.wait(client, created["taskId"])
                seen.append((time.perf_counter() - t0) * 1000)
                ids.append(created["taskId"])
        finally:
            await client.close()
        rows = self.rows(ids)
        assert len(rows) == len(ids) and all(r[1] == "completed" for r in rows), rows
        to_start = [(r[3] - r[2]).total_seconds() * 1000 for r in rows]
        to_finish = [(r[4] - r[2]).total_seconds() * 1000 for r in rows]
        return {
            "enqueue → started (row)": summary(to_start),
            "enqueue → finished (row)": summary(to_finish),
            "call → completed seen by the client": summary(seen),
        }

    async def wait(self, client: Client, task_id: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            task = await client.get(task_id)
            if task["status"] == "completed":
                return
            if task["status"] in ("failed", "cancelled"):
                raise RuntimeError(f"task {task_id} {task['status']}: {task}")
            await asyncio.sleep(0.01)
        raise RuntimeError(f"task {task_id} did not complete within {DEADLINE} s")

    async def submit(self, tasks: bool) -> tuple[float, list[str]]:
        """``--tasks`` calls by ``--clients`` clients at once; (seconds to send them all, task ids)."""
        clients = [Client(self.url, tasks) for _ in range(self.args.clients)]
        per = [self.args.tasks // len(clients) + (i < self.args.tasks % len(clients)) for i in range(len(clients))]
        ids: list[str] = []

        async def run(c: Client, n: int, k: int) -> None:
            for i in range(n):
                result = await c.call(f"c{k}-{i}")
                if tasks:
                    assert result.get("resultType") == "task", result
                    ids.append(result["taskId"])
                else:
                    assert not result.get("isError") and result.get("resultType", "complete") == "complete", result

        try:
            await asyncio.gather(*(run(c, 1, -1 - k) for k, c in enumerate(clients)))  # warm the connections
            warm = list(ids)
            ids.clear()
            t0 = time.perf_counter()
            await asyncio.gather(*(run(c, n, k) for k, (c, n) in enumerate(zip(clients, per, strict=True))))
            elapsed = time.perf_counter() - t0
        finally:
            for c in clients:
                await c.close()
        if tasks:  # the warm-up tasks end before the timed ones are counted
            self.drain(warm)
        return elapsed, ids

    def drain(self, ids: list[str]) -> float:
        """Watch the rows until every task of ``ids`` completed; when the last one finished (epoch s)."""
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            rows = self.rows(ids)
            if len(rows) == len(ids) and all(r[1] in ("completed", "failed", "cancelled") for r in rows):
                bad = [r for r in rows if r[1] != "completed"]
                if bad:
                    raise RuntimeError(f"{len(bad)} tasks did not complete: {bad[:3]}")
                return max(r[4] for r in rows).timestamp()  # type: ignore[no-any-return]
            time.sleep(0.02)
        raise RuntimeError(f"{len(ids)} tasks did not all complete within {DEADLINE} s")

    async def throughput(self) -> dict[str, float]:
        await self.submit(tasks=True)  # a first round: warm every worker (discarded)
        t0 = time.perf_counter()
        sent, ids = await self.submit(tasks=True)
        self.drain(ids)
        seen = time.perf_counter() - t0
        rows = self.rows(ids)
        first = min(r[2] for r in rows).timestamp()
        last = max(r[4] for r in rows).timestamp()
        waits = [(r[3] - r[2]).total_seconds() * 1000 for r in rows]
        runs = [(r[4] - r[3]).total_seconds() * 1000 for r in rows]
        sync_elapsed, _ = await self.submit(tasks=False)
        n = self.args.tasks
        return {
            "submitted/s (tools/call → task handle)": n / sent,
            "completed/s (until the watcher saw all)": n / seen,
            "completed/s (first created → last finished)": n / (last - first),
            "queue wait p50 ms (created → started)": statistics.median(waits),
            "run p50 ms (started → finished)": statistics.median(runs),
            "sync calls/s (same tool, no extension)": n / sync_elapsed,
        }


def render(
    args: argparse.Namespace, load_before: str, latency: dict[str, tuple[float, float, float]], tput: dict[str, float]
) -> str:
    import django

    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    import psycopg

    with psycopg.connect(f"{PG} dbname=postgres") as conn:
        pg = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())  # other work on the machine shows here
    lines = [
        "# MCP tasks: latency and throughput (`make bench-tasks`)",
        "",
        f"{when} · {os.cpu_count()} CPUs · Python {platform.python_version()} · Django {django.get_version()} · "
        f"PostgreSQL {pg} · load average before {load_before}, after {load}",
        "",
        f"daphne (`tests.conformance.asgi`, DEBUG off) + {args.workers} `db_worker` "
        f"(`--interval 0.05 --no-startup-delay --no-reload`), CONN_MAX_AGE {args.conn_max_age:g}, all on this machine, "
        "loopback; "
        "tool `slow_compute(seconds=0)`; stateless 2026-07-28 requests.",
        "",
        f"Latency: {args.latency_tasks} tasks one at a time (client polls `tasks/get` every 10 ms).",
        "",
        "| measure | p50 ms | p95 ms | max ms |",
        "|---|--:|--:|--:|",
    ]
    for name, (p50, p95, top) in latency.items():
        lines.append(f"| {name} | {p50:.1f} | {p95:.1f} | {top:.1f} |")
    ratio = tput["completed/s (until the watcher saw all)"] / tput["sync calls/s (same tool, no extension)"]
    lines += [
        "",
        f"Throughput: {args.tasks} tasks from {args.clients} concurrent clients, then {args.tasks} synchronous calls "
        "(no tasks extension: the tool runs in the request) from as many clients.",
        "",
        "| measure | value |",
        "|---|--:|",
    ]
    for name, value in tput.items():
        lines.append(f"| {name} | {value:,.1f} |")
    lines.append(f"| tasks ÷ sync (completed/s ÷ sync calls/s) | {ratio:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="db_worker processes (default 2)")
    parser.add_argument("--tasks", type=int, default=200, help="tasks in the throughput run (default 200)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients submitting (default 4)")
    parser.add_argument("--latency-tasks", type=int, default=40, help="sequential tasks timed (default 40)")
    parser.add_argument(
        "--conn-max-age",
        type=float,
        default=0,
        help="CONN_MAX_AGE of every process (default 0: a connection a request)",
    )
    parser.add_argument("--no-save", action="store_true", help=f"do not write {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    if not (1 <= args.workers <= 8 and 1 <= args.tasks <= 2000 and 1 <= args.clients <= 32):
        parser.error("keep it bounded: 1-8 workers, 1-2000 tasks, 1-32 clients")
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    bench = Bench(args)
    try:
        bench.start()
        latency = asyncio.run(bench.latency())
        tput = asyncio.run(bench.throughput())
    finally:
        bench.stop()
    table = render(args, load_before, latency, tput)
    print(table)
    if not args.no_save:
        RESULTS.write_text(table)
        print(f"saved to {RESULTS.relative_to(ROOT)}; logs in {bench.logs}")


if __name__ == "__main__":
    main()
