#!/usr/bin/env python
"""``ModelResource`` against Django REST framework on the same server, same rows, same fields.

One server process (``tests.settings.asgi:application`` with ``benchmarks.models_settings``; daphne,
then uvicorn) serves both sides: the MCP endpoint at ``/mcp/`` and DRF views at ``/drf/``.
The data is 1,000 ``Item`` rows with a ``Publisher`` foreign key (``benchmarks.modelbench``),
``select_related("publisher")`` on both sides. DEBUG off, access logs off.

* read: ``resources/read`` of ``django://modelbench/item/500`` vs ``GET /drf/items/500/``
  (``RetrieveAPIView``, ``ModelSerializer`` with the same eight fields).
* list: ``resources/list`` (``PAGE_SIZE`` 100: the first 100 items) vs ``GET /drf/items/``
  (``ListAPIView``, ``PageNumberPagination`` page_size 100, each entry ``uri``/``name``/``mimeType``
  like an MCP resource, ``name`` = ``str(item)``, which reads the joined publisher).

MCP side in both eras: a 2025-11-25 session (JSON replies) and stateless 2026-07-28
requests. ``AUTH = "none"``; the resource overrides ``has_permission`` to allow anonymous
reads, as DRF's ``AllowAny`` with no authentication classes does.

The server is pinned to core 0, ``wrk -t1 -c16`` to core 1 (``apt-get install -y wrk``;
installed automatically when running as root). The cases of one method are interleaved
round by round (DRF, handshake, stateless, then the reverse order, and so on), so
machine noise hits every side alike; req/s is the total over the rounds, p50/p99 the
median of the rounds. The table goes to stdout and ``benchmarks/results/models_vs_drf.md``.

Usage: ``python benchmarks/models_vs_drf.py [--seconds 3] [--rounds 4] [--servers daphne,uvicorn]
[--db sqlite,postgres] [--middleware default|none]``  (``make bench-models``)
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks import payloads as P  # noqa: E402
from benchmarks import run as R  # noqa: E402

RESULTS = HERE / "results" / "models_vs_drf.md"
TARGET = 0.9
CONNECTIONS = 16
OBJECT_PK = 500
URI = f"django://modelbench/item/{OBJECT_PK}"
PG_NAME = "django_mcp_models_bench"


@dataclass(frozen=True)
class Case:
    side: str  # drf | handshake | stateless
    method: str  # read | list
    path: str
    body: str = ""  # empty: GET
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return {"drf": "DRF", "handshake": "MCP 2025-11-25 session", "stateless": "MCP 2026-07-28 stateless"}[self.side]


def _h(headers: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(headers.items())


READ_PARAMS = {"uri": URI}
CASES: dict[str, tuple[Case, ...]] = {
    "read": (
        Case("drf", "read", f"/drf/items/{OBJECT_PK}/", headers=(("Accept", "application/json"),)),
        Case("handshake", "read", "/mcp/", P.body("resources/read", READ_PARAMS), _h(P.session_headers())),
        Case(
            "stateless",
            "read",
            "/mcp/",
            P.body("resources/read", {**READ_PARAMS, "_meta": P.META}),
            _h(P.stateless_headers("resources/read", URI)),
        ),
    ),
    "list": (
        Case("drf", "list", "/drf/items/", headers=(("Accept", "application/json"),)),
        Case("handshake", "list", "/mcp/", P.body("resources/list", {}), _h(P.session_headers())),
        Case(
            "stateless",
            "list",
            "/mcp/",
            P.body("resources/list", {"_meta": P.META}),
            _h(P.stateless_headers("resources/list")),
        ),
    ),
}


@dataclass(kw_only=True)
class Measured:
    """What the wrk runs of one case added up to, round after round."""

    requests: int = 0
    seconds: float = 0.0
    p50_ms: list[float] = field(default_factory=list)
    p99_ms: list[float] = field(default_factory=list)
    rounds: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def error_text(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.errors.items())

    def add(self, stats: dict[str, Any]) -> None:
        """One wrk run's figures (``wrk``'s ``stats``)."""
        self.requests += stats["requests"]
        self.seconds += stats["duration_us"] / 1e6
        self.rounds.append(stats["requests"] / (stats["duration_us"] / 1e6))
        self.p50_ms.append(stats["p50_us"] / 1000)
        self.p99_ms.append(stats["p99_us"] / 1000)
        for key in ("connect", "read", "write", "status", "timeout"):
            if stats[key]:
                self.errors[key] = self.errors.get(key, 0) + stats[key]


C = TypeVar("C")
M = TypeVar("M", bound=Measured)


def interleaved(rounds: int, cases: Sequence[tuple[C, M]], run: Callable[[C], dict[str, Any]]) -> None:
    """``rounds`` rounds of every case, ABC CBA ABC ...: no side always runs first, drift hits all alike."""
    for round_no in range(rounds):
        order = list(cases)
        if round_no % 2:
            order.reverse()
        for case, result in order:
            result.add(run(case))


@dataclass
class Result(Measured):
    db: str
    server: str
    case: Case


# -- checks and wrk ---------------------------------------------------------------------------------------------
def check(client: httpx.Client, base: str, case: Case, sid: str | None) -> None:
    """One request by hand: the reply must be a 200 with the expected data, else the numbers mean nothing."""
    if case.side == "drf":
        reply = client.get(base + case.path, headers=dict(case.headers))
        data = reply.json()
        ok = reply.status_code == 200 and (
            data.get("id") == OBJECT_PK if case.method == "read" else len(data.get("results", [])) == 100
        )
    else:
        headers = dict(case.headers) | ({"Mcp-Session-Id": sid} if sid else {})
        reply = client.post(base + case.path, content=case.body.replace(P.ID, "0"), headers=headers)
        result = (
            reply.json().get("result", {})
            if reply.headers.get("content-type", "").startswith("application/json")
            else {}
        )
        if case.method == "read":
            ok = json.loads(result.get("contents", [{}])[0].get("text", "{}")).get("id") == OBJECT_PK
        else:
            ok = len(result.get("resources", [])) == 100
        ok = ok and reply.status_code == 200
    if not ok:
        raise RuntimeError(f"{case.label} {case.method}: unexpected reply {reply.status_code} {reply.text[:300]}")


def wrk(
    binary: str, base: str, port: int, case: Any, seconds: int, sid: str | None, pin: bool = True
) -> dict[str, Any]:
    """``case`` (``.path``, ``.body``: empty for a GET, ``.headers``) under wrk, on the load core if ``pin``."""
    headers = [f"{k}: {v}" for k, v in case.headers] + [f"Host: 127.0.0.1:{port}"]
    env = {**os.environ, "BENCH_BODY": case.body, "BENCH_HEADERS": "\n".join(headers), "MCP_SESSION_ID": sid or ""}
    lua = HERE / ("post.lua" if case.body else "get.lua")
    cmd = [binary, "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--timeout", "5s", "--latency", "-s", str(lua)]
    out = subprocess.run(
        R.pinned(R.LOAD_CORE, [*cmd, base + case.path]) if pin else [*cmd, base + case.path],
        env=env,
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=False,
    )
    match = re.search(r"^BENCH_JSON (\{.*\})$", out.stdout, re.MULTILINE)
    if out.returncode != 0 or match is None:
        raise RuntimeError(f"wrk failed ({out.returncode}): {out.stdout[-500:]} {out.stderr[-500:]}")
    stats: dict[str, Any] = json.loads(match.group(1))
    return stats


# -- the run ------------------------------------------------------------------------------------------------------
class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.results: list[Result] = []
        self.failures: list[str] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="django-mcp-models-bench-"))
        self.logdir = HERE / "results" / "logs"
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.wrk = R.ensure_wrk()

    def log(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def env(self, db: str) -> dict[str, str]:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "benchmarks.models_settings",
            "PYTHONPATH": str(ROOT),
            "PYTHONDONTWRITEBYTECODE": "1",
            "MCP_TEST_DB": db,
            "MCP_TEST_LAYER": "memory",
            "MCP_SQLITE": str(self.tmp / "models-bench.sqlite3"),
            "MCP_PG_NAME": PG_NAME,
        }
        if self.args.middleware == "none":
            env["BENCH_MIDDLEWARE"] = "none"
        return env

    def prepare(self, db: str) -> None:
        """Migrate and seed (1,000 items); for PostgreSQL, create the database first."""
        if db == "postgres":
            import psycopg

            with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {PG_NAME}")
                conn.execute(f"CREATE DATABASE {PG_NAME}")
        env = self.env(db)
        django = [sys.executable, "-m", "django"]
        subprocess.run([*django, "migrate", "--noinput", "-v0"], env=env, cwd=ROOT, check=True)
        seed = "from benchmarks.modelbench.seed import main; main()"
        subprocess.run([*django, "shell", "-v0", "-c", seed], env=env, cwd=ROOT, check=True)

    def drop(self, db: str) -> None:
        if db == "postgres":
            import psycopg

            with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {PG_NAME} WITH (FORCE)")

    def run(self) -> None:
        for db in self.args.db:
            self.prepare(db)
            try:
                for server in self.args.servers:
                    self.bench_server(db, server)
            finally:
                self.drop(db)

    def bench_server(self, db: str, server_name: str) -> None:
        spec = R.Spec(f"models-{db}", server_name, "tests.settings.asgi:application")
        server = R.Server(spec, self.env(db), self.logdir)
        self.log(f"== {db} · {server_name}")
        try:
            server.start()
            with httpx.Client(timeout=10) as client:
                sid = R.open_session(client, server.url)
                for method, cases in CASES.items():
                    self.bench_method(server, client, db, method, cases, sid)
        except Exception as exc:  # noqa: BLE001 - record and go on with the next server
            self.failures.append(f"{db} · {server_name}: {exc}")
            self.log(f"   FAILED: {exc}")
        finally:
            server.stop()
        problems = server.problems()
        if problems:
            self.failures.append(f"{db} · {server_name}: errors in the server log {server.log}:\n{problems}")

    def bench_method(
        self, server: R.Server, client: httpx.Client, db: str, method: str, cases: tuple[Case, ...], sid: str
    ) -> None:
        results = [Result(db, server.spec.server, case) for case in cases]
        for case in cases:
            session = sid if case.side == "handshake" else None
            check(client, server.base, case, session)
            wrk(self.wrk, server.base, server.port, case, 1, session)  # warm-up

        def one(case: Case) -> dict[str, Any]:
            session = sid if case.side == "handshake" else None
            return wrk(self.wrk, server.base, server.port, case, self.args.seconds, session)

        interleaved(self.args.rounds, list(zip(cases, results, strict=True)), one)
        drf = results[0].rps
        for result in results:
            self.results.append(result)
            ratio = f"  {result.rps / drf:5.2f}x DRF" if result.case.side != "drf" and drf else ""
            self.log(
                f"   {method:<4} {result.case.label:<26} {result.rps:8.0f} req/s  "
                f"p50 {statistics.median(result.p50_ms):6.2f} ms  p99 {statistics.median(result.p99_ms):6.2f} ms{ratio}"
                + (f"  [{result.error_text}]" if result.errors else "")
            )

    def cleanup(self) -> None:
        R._stop_all()
        shutil.rmtree(self.tmp, ignore_errors=True)


# -- report --------------------------------------------------------------------------------------------------------
def report(bench: Bench, load_before: str, load_after: str) -> str:
    info = R.machine_info()
    args = bench.args
    out = ["# ModelResource vs Django REST framework\n"]
    out.append(
        f"{info['date']} · {info['nproc']} CPUs ({info['cpu']}) · Linux {info['kernel']} · Python {info['python']}  "
    )
    out.append(f"{info['versions']} · djangorestframework {_version('djangorestframework')} · {info['wrk']}  ")
    out.append(f"commit {info['commit']}  ")
    out.append(
        f"server pinned to core {R.SERVER_CORE}, `wrk -t1 -c{CONNECTIONS}` pinned to core {R.LOAD_CORE}, loopback; "
        f"{args.rounds} interleaved rounds of {args.seconds} s per case after a 1 s warm-up; "
        f"middleware for the DRF views: {args.middleware}; load average (1/5/15 min) before {load_before}, "
        f"after {load_after}.\n"
    )
    out.append(
        "- read: `resources/read` of one item vs `RetrieveAPIView` (same 8 fields, `select_related`).\n"
        "- list: `resources/list`, a 100-object page, vs `ListAPIView` with `PageNumberPagination(page_size=100)`, "
        "each entry `uri`, `name` (`str(item)`, through the join), `mimeType`.\n"
        "- req/s is the total over the rounds; p50/p99 the median of the rounds; ÷ DRF is ours over DRF "
        "on the same server, database and method.\n"
    )
    out.append("| db | server | method | side | req/s | p50 ms | p99 ms | ÷ DRF | rounds (req/s) | errors |")
    out.append("|---|---|---|---|--:|--:|--:|--:|---|---|")
    for r in bench.results:
        drf = _drf(bench.results, r)
        ratio = f"{r.rps / drf.rps:.2f}" if drf and r.case.side != "drf" and drf.rps else ""
        rounds = " ".join(f"{v:.0f}" for v in r.rounds)
        out.append(
            f"| {r.db} | {r.server} | {r.case.method} | {r.case.label} | {r.rps:,.0f} | "
            f"{statistics.median(r.p50_ms):.2f} | {statistics.median(r.p99_ms):.2f} | {ratio} | {rounds} | "
            f"{r.error_text} |"
        )
    ours = [
        (r, r.rps / d.rps) for r in bench.results if r.case.side != "drf" and (d := _drf(bench.results, r)) and d.rps
    ]
    if ours:
        worst = min(ours, key=lambda p: p[1])
        misses = [f"{r.db}/{r.server}/{r.case.method}/{r.case.side} {v:.2f}" for r, v in ours if v < TARGET]
        verdict = "met" if not misses else "MISSED (" + "; ".join(misses) + ")"
        out.append(
            f"\nTarget ours ≥ {TARGET:.0%} of DRF's throughput: {verdict}; lowest {worst[1]:.2f} "
            f"({worst[0].db}, {worst[0].server}, {worst[0].case.method}, {worst[0].case.label})."
        )
    if bench.failures:
        out.append("\n## Failures\n")
        out.extend(f"- {f}" for f in bench.failures)
    return "\n".join(out) + "\n"


def _drf(results: list[Result], r: Result) -> Result | None:
    for d in results:
        if d.case.side == "drf" and (d.db, d.server, d.case.method) == (r.db, r.server, r.case.method):
            return d
    return None


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=3, help="seconds per case and round (default 3)")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds (default 4)")
    parser.add_argument("--servers", default="daphne,uvicorn", help="comma-separated: daphne, uvicorn")
    parser.add_argument("--db", default="sqlite", help="comma-separated: sqlite, postgres")
    parser.add_argument("--middleware", choices=("default", "none"), default="default", help="for the DRF views")
    args = parser.parse_args()
    args.servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    args.db = [s.strip() for s in args.db.split(",") if s.strip()]

    atexit.register(R._stop_all)
    signal.signal(signal.SIGTERM, R._on_signal)
    signal.signal(signal.SIGHUP, R._on_signal)
    bench = Bench(args)
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    started = time.monotonic()
    try:
        bench.run()
    finally:
        bench.cleanup()
    load_after = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    text = report(bench, load_before, load_after)
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text)
    bench.log(f"done in {time.monotonic() - started:.0f} s; written to {RESULTS}")
    return 1 if bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
