#!/usr/bin/env python
"""The deployment guide's stack, measured, and what each part of it costs a call, in one run.

docs/deployment.md's recipe: daphne workers (the guide's command) behind its nginx block, PostgreSQL with
Django's pool, the Redis channel layer and cache, bearer tokens, the audit log. A trivial tool (``echo``) in a
2025-11-25 session, under ``wrk`` at ``--connections`` (32). Then the same with one part changed at a time,
so each row's difference to the one it is paired with is that part's cost:

- nginx in front of one worker against the worker alone (nginx's hop);
- two workers against one (what the second core buys);
- uvicorn (the guide's command) against daphne;
- the in-memory layer and cache against Redis (the layer's and the cache's round trips);
- no audit log against the audit writer on PostgreSQL;
- ``CONN_MAX_AGE = 0`` without a pool (Django's default) against the pool (a connection per request);
- SQLite against PostgreSQL (what ``make bench`` runs on);
- ``TOKEN_CACHE_MAX_AGE = 0`` against the token cache (the bearer token's check on every request). The
  in-memory layer caches no token (no other process's revocation would reach it): the last row is SQLite
  with the Redis layer, one worker's figure with the cache.

Everything shares this machine's cores (nothing pinned): the figures are what the stack serves on it. A Redis
of the run's own on a free port; PostgreSQL the shared server's, in a fresh database, dropped at the end.

    .venv/bin/python benchmarks/deploy_stack.py [--seconds 5] [--connections 32] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import payloads as P  # noqa: E402
from benchmarks.run import LUA, _stop, ensure_wrk, free_port, open_session, reachable  # noqa: E402
from benchmarks.sync_pool import pg_admin  # noqa: E402
from tests.production.harness import documented_command, nginx_config  # noqa: E402

DB = "mcp_bench_stack"
APP = "tests.settings.asgi:application"


@dataclass(frozen=True)
class Variant:
    name: str
    server: str = "daphne"
    workers: int = 1
    nginx: bool = False
    db: str = "pool"  # pool | no-pool | sqlite
    layer: str = "redis"  # redis | memory
    audit: bool = True
    token_cache: bool = True


#: (row, what its difference to the paired row costs a call)
VARIANTS = (
    Variant("guide: nginx, 2 daphne, PostgreSQL pool, Redis, audit", workers=2, nginx=True),
    Variant("nginx, 1 daphne", nginx=True),
    Variant("1 daphne"),
    Variant("1 uvicorn", server="uvicorn"),
    Variant("1 uvicorn, in-memory layer and cache", server="uvicorn", layer="memory"),
    Variant("1 uvicorn, no audit log", server="uvicorn", audit=False),
    Variant("1 uvicorn, CONN_MAX_AGE = 0, no pool", server="uvicorn", db="no-pool"),
    Variant("1 uvicorn, SQLite, in-memory layer", server="uvicorn", db="sqlite", layer="memory"),
    Variant("1 uvicorn, token cache off", server="uvicorn", token_cache=False),
    Variant("1 uvicorn, SQLite, Redis layer", server="uvicorn", db="sqlite"),
)
#: (the part, the row without it, the row with it)
PARTS = (
    ("nginx's hop", "1 daphne", "nginx, 1 daphne"),
    ("a second worker", "nginx, 1 daphne", VARIANTS[0].name),
    ("daphne against uvicorn", "1 uvicorn", "1 daphne"),
    ("the Redis layer and cache", "1 uvicorn, in-memory layer and cache", "1 uvicorn"),
    ("the audit writer on PostgreSQL", "1 uvicorn, no audit log", "1 uvicorn"),
    ("no pool: a connection a request", "1 uvicorn", "1 uvicorn, CONN_MAX_AGE = 0, no pool"),
    ("PostgreSQL against SQLite", "1 uvicorn, SQLite, in-memory layer", "1 uvicorn, in-memory layer and cache"),
    ("checking the bearer token each request", "1 uvicorn", "1 uvicorn, token cache off"),
)


class Stack:
    """One variant's processes: its workers, and nginx in front when it has one."""

    def __init__(self, variant: Variant, env: dict[str, str], tmp: Path) -> None:
        self.variant, self.tmp = variant, tmp
        self.env = {
            **env,
            "MCP_STACK_DB": variant.db,
            "MCP_STACK_LAYER": variant.layer,
            "MCP_STACK_AUDIT": "1" if variant.audit else "0",
            "MCP_STACK_TOKEN_CACHE": "1" if variant.token_cache else "0",
        }
        self.processes: list[subprocess.Popen[bytes]] = []
        self.port = 0

    def start(self) -> str:
        ports = [free_port() for _ in range(self.variant.workers)]
        for n, port in enumerate(ports):
            log = (self.tmp / f"{self.variant.server}{n}.log").open("wb")
            command = documented_command(self.variant.server, APP, port)
            self._spawn(command, log, port)
        self.port = ports[0]
        if self.variant.nginx:
            self.port = free_port()
            conf = self.tmp / "nginx.conf"
            conf.write_text(nginx_config(ports, self.port, self.tmp))
            daemon = f"daemon off; pid {self.tmp}/nginx.pid; error_log stderr;"
            command = ["/usr/sbin/nginx", "-p", str(self.tmp), "-c", str(conf), "-g", daemon]
            self._spawn(command, (self.tmp / "nginx.err").open("wb"), self.port)
        return f"http://127.0.0.1:{self.port}/mcp/"

    def _spawn(self, command: list[str], log: object, port: int) -> None:
        process = subprocess.Popen(command, env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)  # type: ignore[arg-type]
        self.processes.append(process)
        deadline = time.monotonic() + 40
        while not reachable(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{command[:3]} did not start (logs in {self.tmp})")
            time.sleep(0.1)

    def stop(self) -> None:
        for process in reversed(self.processes):
            _stop(process)


def token(env: dict[str, str], url: str) -> str:
    """A bearer token for user ``bench``, for the resource the endpoint's RFC 9728 metadata names (behind the
    guide's nginx, the ``Host`` it forwards carries no port)."""
    metadata = httpx.get(url.replace("/mcp/", "/.well-known/oauth-protected-resource/mcp"), timeout=30)
    resource = metadata.json()["resource"]
    done = subprocess.run(
        [sys.executable, "-m", "django", "mcp_token", "--user", "bench", "--resource", resource, "--expires", "1h"],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def measure(wrk: str, url: str, port: int, bearer: str, connections: int, seconds: int) -> dict[str, float]:
    with httpx.Client(timeout=30) as client:
        sid = open_session(client, url, headers={"Authorization": f"Bearer {bearer}"})
        check = client.post(url, content=P.CALL.replace(P.ID, "0"), headers={
            **P.session_headers(), "Mcp-Session-Id": sid, "Authorization": f"Bearer {bearer}",
        })  # fmt: skip
        if check.status_code != 200 or '"result"' not in check.text:
            raise RuntimeError(f"unexpected reply {check.status_code}: {check.text[:300]}")
    headers = [f"{k}: {v}" for k, v in P.session_headers().items()]
    headers += [f"Host: 127.0.0.1:{port}", f"Authorization: Bearer {bearer}"]
    env = {"BENCH_BODY": P.CALL, "BENCH_HEADERS": "\n".join(headers), "MCP_SESSION_ID": sid, "PATH": "/usr/bin:/bin"}
    cmd = [wrk, "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s", "--latency", "-s", str(LUA), url]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 60, check=False)
    match = re.search(r"^BENCH_JSON (\{.*\})$", out.stdout, re.MULTILINE)
    if out.returncode != 0 or match is None:
        raise RuntimeError(f"wrk failed: {out.stdout[-500:]} {out.stderr[-500:]}")
    stats = json.loads(match.group(1))
    errors = sum(int(stats.get(k, 0)) for k in ("connect", "read", "write", "status", "timeout"))
    rps = stats["requests"] / (stats["duration_us"] / 1e6)
    return {"rps": rps, "p50": stats["p50_us"] / 1000, "p99": stats["p99_us"] / 1000, "errors": errors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2, help="each variant this many times, interleaved")
    args = parser.parse_args()
    wrk = ensure_wrk()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-stack-"))
    redis_port = free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    pg_admin(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)', f'CREATE DATABASE "{DB}"')
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "benchmarks.settings_deploy",
        "PYTHONPATH": str(ROOT),
        "MCP_TEST_DB": "postgres",
        "MCP_PG_NAME": DB,
        "MCP_SQLITE": str(tmp / "bench.sqlite3"),
        "MCP_STACK_REDIS": f"redis://127.0.0.1:{redis_port}",
    }
    results: dict[str, list[dict[str, float]]] = {v.name: [] for v in VARIANTS}
    try:
        for db in ("pool", "sqlite"):
            setup = {**env, "MCP_STACK_DB": db}
            subprocess.run([sys.executable, "-m", "django", "migrate", "-v0"], env=setup, cwd=ROOT, check=True)
            user = "from django.contrib.auth.models import User; User.objects.get_or_create(username='bench')"
            subprocess.run([sys.executable, "-m", "django", "shell", "-c", user], env=setup, cwd=ROOT, check=True)
        for round_ in range(args.rounds):
            for variant in VARIANTS:
                where = tmp / f"{round_}-{VARIANTS.index(variant)}"
                where.mkdir()
                stack = Stack(variant, env, where)
                try:
                    url = stack.start()
                    bearer = token(stack.env, url)
                    figures = measure(wrk, url, stack.port, bearer, args.connections, args.seconds)
                finally:
                    stack.stop()
                results[variant.name].append(figures)
                print(f"round {round_ + 1}: {variant.name}: {figures['rps']:,.0f} req/s, "
                      f"p50 {figures['p50']:.1f} ms, p99 {figures['p99']:.1f} ms, errors {figures['errors']:.0f}",
                      flush=True)  # fmt: skip
    finally:
        _stop(redis)
        pg_admin(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
    rps = {name: statistics.median(r["rps"] for r in rows) for name, rows in results.items()}
    print(f"\nThe guide's stack, a trivial tool in a 2025-11-25 session, {args.connections} connections, "
          f"median of {args.rounds} rounds of {args.seconds} s:\n")  # fmt: skip
    print("| stack | req/s | p50 ms | p99 ms |\n|---|--:|--:|--:|")
    for name, rows in results.items():
        p50 = statistics.median(r["p50"] for r in rows)
        p99 = statistics.median(r["p99"] for r in rows)
        print(f"| {name} | {rps[name]:,.0f} | {p50:.1f} | {p99:.1f} |")
    print("\n| part | without | with | µs a call |\n|---|--:|--:|--:|")
    for part, without, with_ in PARTS:
        cost = 1e6 / rps[with_] - 1e6 / rps[without]
        print(f"| {part} | {rps[without]:,.0f} | {rps[with_]:,.0f} | {cost:+,.0f} |")
    print("\n(µs a call: the difference of the two rows' time per request at this concurrency, 1 / req/s;\n"
          " negative: the part saves time, as a second worker does)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
