"""Database connections of a sync tool: persistent, one per call, or Django's pool, in one run.

The ``sync_db`` tool of ``tests.testapp`` (one ``SELECT count(*)``) over ``--connections``
concurrent keep-alive connections for a few seconds, on one uvicorn (or daphne) worker, three
times: ``CONN_MAX_AGE = 60`` (each sync-pool thread keeps its connection), ``CONN_MAX_AGE = 0``
without a pool (each call connects and disconnects: what ``django_mcp.W022`` warns about), and
``CONN_MAX_AGE = 0`` with Django's psycopg pool (what docs/deployment.md recommends). Prints
calls/s, the p50 latency and the most connections ``pg_stat_activity`` showed. Needs PostgreSQL
on 127.0.0.1:5432 (a fresh database ``mcp_bench_conns`` is made and dropped) and psycopg-pool.

    .venv/bin/python benchmarks/db_connections.py [--seconds 5] [--connections 32] [--server uvicorn]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.sync_pool import Worker, load, pg_admin  # noqa: E402

DB = "mcp_bench_conns"
POOL = 20
MODES = {
    "CONN_MAX_AGE=60": {"MCP_CONN_MAX_AGE": "60"},
    "CONN_MAX_AGE=0": {"MCP_CONN_MAX_AGE": "0"},
    f"pool (max_size {POOL})": {"MCP_CONN_MAX_AGE": "0", "MCP_PG_POOL": str(POOL)},
}


class Watch:
    """The most connections to ``DB`` that ``pg_stat_activity`` shows, read every 20 ms."""

    def __init__(self) -> None:
        import psycopg

        self.most = 0
        self._stop = threading.Event()
        self._conn = psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            row = self._conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (DB,)).fetchone()
            self.most = max(self.most, int(row[0]) if row else 0)
            self._stop.wait(0.02)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(5)
        self._conn.close()
        return self.most


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=1)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--server", choices=["daphne", "uvicorn"], default="uvicorn")
    args = parser.parse_args()

    pg_admin(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)', f'CREATE DATABASE "{DB}"')
    tmp = Path(tempfile.mkdtemp(prefix="mcp-bench-conns-"))
    base = dict(os.environ)
    base.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        PYTHONPATH=str(ROOT),
        MCP_TEST_DB="postgres",
        MCP_TEST_LAYER="memory",
        MCP_PG_NAME=DB,
        MCP_CONN_HEALTH_CHECKS="1",
        MCP_VALIDATE_RESULTS="0",  # as in production: the suite's result validation costs CPU per call
    )
    subprocess.run([sys.executable, "-m", "django", "migrate", "--noinput", "-v0"], env=base, cwd=ROOT, check=True)
    try:
        for name, extra in MODES.items():
            worker = Worker(args.server, {**base, **extra}, tmp / f"{args.server}-{len(extra)}.log")
            watch = Watch()
            try:
                rate, errors, p50 = asyncio.run(
                    load(worker.port, args.connections, args.seconds, args.warmup, tool="sync_db")
                )
            finally:
                most = watch.stop()
                worker.stop()
            print(
                f"{args.server} {name:<20} {rate:7.1f} calls/s at {args.connections} connections, "
                f"p50 {p50:6.1f} ms, {errors} errors, at most {most} PostgreSQL connections",
                flush=True,
            )
    finally:
        pg_admin(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')


if __name__ == "__main__":
    main()
