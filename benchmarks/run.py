#!/usr/bin/env python
"""Loopback benchmark of django_mcp against a Channels floor, a Django view and the official SDK.

Every server runs as a subprocess pinned to CPU core 0 (DEBUG off, access logs off);
``wrk`` runs pinned to core 1 and POSTs JSON-RPC bodies built by ``post.lua``.
Servers, one at a time:

* ours   ``tests.settings.asgi:application`` with ``benchmarks.settings``, on daphne and on uvicorn
* floor  ``benchmarks.floor`` (bare ``AsyncHttpConsumer``, fixed result), on daphne and on uvicorn
* starlette  ``benchmarks.starlette_floor``: a bare Starlette endpoint doing the same JSON work, on uvicorn
* view   ``benchmarks.djangoview`` (Django async view, default middleware), on daphne and on uvicorn
* sdk    ``benchmarks.sdk_server`` (the SDK's ``MCPServer``), stateless+JSON and stateful+SSE, on uvicorn

Then, side by side (``--pair-rounds``, 5 by default): ours, the bare Starlette endpoint and the SDK on each
uvicorn stack, all up at once and loaded in turn, a few seconds a case, the order rotating each round; the
speed targets are judged by the medians of these rounds, which drift on a shared machine moves alike. Ours
also runs there without the operations middleware (``ours-bare``), so that the ``(bound)`` lines show what
the door alone adds to the bare endpoint and what the default middleware adds on top.
Then the new-session rate (wrk POSTing ``initialize``) and memory per idle session
(server RSS around 5,000 real ``initialize`` exchanges, and tracemalloc in-process).

The table goes to stdout and ``benchmarks/results/latest.md``; a full run (no
``--quick``/``--only``) also writes ``benchmarks/RESULTS.md``.

Usage: ``python benchmarks/run.py [--duration 10] [--quick] [--only ours,sdk] [--sessions 5000]``
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks import payloads as P  # noqa: E402
from benchmarks import procstat  # noqa: E402

RESULTS_DIR = HERE / "results"
LUA = HERE / "post.lua"
CONNECTIONS = (1, 16, 64)
SERVER_CORE, LOAD_CORE = "0", "1"
WARMUP_SECONDS = 1
TARGET_FLOOR, TARGET_SDK, TARGET_KIB = 0.75, 1.5, 8.0
# The speed issue's targets at 16 connections: ours on uvicorn ÷ the SDK's fastest mode, ours on daphne ÷ the same,
# ours on uvicorn ÷ the bare Starlette endpoint (async), p99 ÷ the SDK's p99 and ÷ our own p50.
SPEED_CONNS, TARGET_SDK_UVICORN, TARGET_SDK_DAPHNE, TARGET_STARLETTE = 16, 2.5, 1.5, 0.75
#: A sync tool on uvicorn ÷ the SDK's sync tool: Starlette's own thread-pool endpoint costs about what 2.5x would
#: allow for the whole request (the ``(bound)`` lines), so the target for sync tools there is 2x.
TARGET_SDK_UVICORN_SYNC = 2.0
TARGET_P99_SDK, TARGET_P99_P50 = 1.0, 4.0


# -- subprocesses -------------------------------------------------------------------------------------
_RUNNING: list[subprocess.Popen[bytes]] = []


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    if process in _RUNNING:
        _RUNNING.remove(process)


def _stop_all() -> None:
    for process in list(_RUNNING):
        _stop(process)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def pinned(core: str, cmd: list[str]) -> list[str]:
    return ["taskset", "-c", core, *cmd] if shutil.which("taskset") else cmd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class Spec:
    """One server to benchmark."""

    impl: str  # ours | floor | view | sdk-stateless | sdk-stateful
    server: str  # daphne | uvicorn (asyncio + h11) | uvicorn+uvloop (uvloop + httptools: ``uvicorn[standard]``)
    app: str
    path: str = "/mcp/"
    env: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.impl} · {self.server}"


class Server:
    def __init__(self, spec: Spec, env: dict[str, str], logdir: Path) -> None:
        self.spec = spec
        self.env = {**env, **dict(spec.env)}
        self.port = free_port()
        self.log = logdir / f"{spec.impl}-{spec.server}.log"
        self.process: subprocess.Popen[bytes] | None = None
        #: Where the server runs: its ``tests``, ``benchmarks`` and ``django_mcp`` (``ab.py`` runs another checkout).
        self.cwd = ROOT

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.base + self.spec.path

    def command(self) -> list[str]:
        py = sys.executable
        if self.spec.server == "daphne":
            return [py, "-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", str(self.port), self.spec.app]
        lifespan = "on" if self.spec.impl.startswith("sdk") else "off"
        # Named, not "auto": a venv that has uvloop would otherwise change what plain "uvicorn" measures.
        stack = ("uvloop", "httptools") if self.spec.server == "uvicorn+uvloop" else ("asyncio", "h11")
        return [
            *(py, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(self.port)),
            *("--loop", stack[0], "--http", stack[1]),
            *("--no-access-log", "--log-level", "warning", "--lifespan", lifespan, self.spec.app),
        ]

    def start(self) -> None:
        handle = self.log.open("wb")
        self.process = subprocess.Popen(
            pinned(SERVER_CORE, self.command()), env=self.env, cwd=self.cwd, stdout=handle, stderr=subprocess.STDOUT
        )
        _RUNNING.append(self.process)
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.spec.key} exited early:\n{self.log.read_text()}")
            if reachable(self.port):
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.spec.key} did not start:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)

    def rss_kib(self) -> int:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def problems(self) -> str:
        """Tracebacks in the server log, except Django's ``RequestAborted`` when wrk hangs up at the end of a run."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        blocks = re.split(r"\n(?=\S)(?!Traceback|  |django\.core\.exceptions\.RequestAborted)", text)
        bad = [b for b in blocks if ("Traceback" in b or " 500 " in b) and "RequestAborted" not in b]
        return "\n".join(bad)[-2000:]


# -- cases ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    name: str
    method: str  # call | list | initialize: what the ratios pair up
    body: str
    headers: tuple[tuple[str, str], ...]
    session: bool = False
    expect: str = "json"  # json | sse | progress
    connections: tuple[int, ...] = CONNECTIONS
    path: str | None = None  # overrides the server's path


def _h(headers: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(headers.items())


SESSION_H = _h(P.session_headers())
STATELESS_CALL_H = _h(P.stateless_headers("tools/call", "echo"))
STATELESS_LIST_H = _h(P.stateless_headers("tools/list"))
STATELESS_SYNC_H = _h(P.stateless_headers("tools/call", "echo_sync"))
PLAIN_H = _h(P.ACCEPT)

OURS_CASES = (
    Case("json call", "call", P.CALL, SESSION_H, session=True),
    Case("json list", "list", P.LIST, SESSION_H, session=True),
    Case("sse call (progress)", "call", P.PROGRESS_CALL, SESSION_H, session=True, expect="progress"),
    Case("stateless call", "call", P.STATELESS_CALL, STATELESS_CALL_H),
    Case("stateless list", "list", P.STATELESS_LIST, STATELESS_LIST_H),
    Case("json sync call", "sync", P.SYNC_CALL, SESSION_H, session=True),
    Case("stateless sync call", "sync", P.STATELESS_SYNC_CALL, STATELESS_SYNC_H),
)
FLOOR_CASES = (
    Case("call", "call", P.CALL, PLAIN_H),
    Case("list", "list", P.LIST, PLAIN_H),
    Case("stock AsyncHttpConsumer call", "stock", P.CALL, PLAIN_H, connections=(16,), path="/stock/"),
)
VIEW_CASES = (Case("call", "call", P.CALL, PLAIN_H), Case("list", "list", P.LIST, PLAIN_H))
SDK_STATELESS_CASES = (
    Case("stateless call", "call", P.STATELESS_CALL, STATELESS_CALL_H),
    Case("stateless list", "list", P.STATELESS_LIST, STATELESS_LIST_H),
    Case("stateless sync call", "sync", P.STATELESS_SYNC_CALL, STATELESS_SYNC_H),
)
# The Python ASGI limit: the same JSON work in a bare Starlette endpoint (async, and a sync one in its thread pool).
STARLETTE_CASES = (
    Case("call", "call", P.CALL, PLAIN_H),
    Case("sync call", "sync", P.SYNC_CALL, PLAIN_H, path="/mcp-sync/"),
)
SDK_STATEFUL_CASES = (
    Case("sse call", "call", P.CALL, SESSION_H, session=True, expect="sse"),
    Case("sse list", "list", P.LIST, SESSION_H, session=True, expect="sse"),
    Case("sse call (progress)", "call", P.PROGRESS_CALL, SESSION_H, session=True, expect="progress"),
)
INIT_CASE = Case("new sessions (initialize)", "initialize", P.initialize(), PLAIN_H, connections=(16,))
#: The trivial tools, for the uvloop + httptools stack (``--uvloop``).
UVLOOP_OURS_CASES = tuple(c for c in OURS_CASES if c.method in ("call", "sync") and "progress" not in c.name)

SPECS: tuple[tuple[Spec, tuple[Case, ...]], ...] = (
    (Spec("ours", "daphne", "tests.settings.asgi:application"), (*OURS_CASES, INIT_CASE)),
    (Spec("ours", "uvicorn", "tests.settings.asgi:application"), (*OURS_CASES, INIT_CASE)),
    (Spec("floor", "daphne", "benchmarks.floor:application"), FLOOR_CASES),
    (Spec("floor", "uvicorn", "benchmarks.floor:application"), FLOOR_CASES),
    (Spec("starlette", "uvicorn", "benchmarks.starlette_floor:app"), STARLETTE_CASES),
    (Spec("view", "daphne", "benchmarks.djangoview:application", "/view/"), VIEW_CASES),
    (Spec("view", "uvicorn", "benchmarks.djangoview:application", "/view/"), VIEW_CASES),
    (
        Spec("sdk-stateless", "uvicorn", "benchmarks.sdk_server:app", env=(("SDK_MODE", "stateless"),)),
        SDK_STATELESS_CASES,
    ),
    (
        Spec("sdk-stateful", "uvicorn", "benchmarks.sdk_server:app", env=(("SDK_MODE", "stateful"),)),
        (*SDK_STATEFUL_CASES, INIT_CASE),
    ),
)
#: ``--uvloop``: ours, the Starlette limit and the SDK again on uvicorn with uvloop and httptools, the stack
#: ``pip install uvicorn[standard]`` gives (and ``bench-deps`` installs): each compared within its stack.
UVLOOP_SPECS: tuple[tuple[Spec, tuple[Case, ...]], ...] = (
    (Spec("ours", "uvicorn+uvloop", "tests.settings.asgi:application"), UVLOOP_OURS_CASES),
    (Spec("starlette", "uvicorn+uvloop", "benchmarks.starlette_floor:app"), STARLETTE_CASES),
    (
        Spec("sdk-stateless", "uvicorn+uvloop", "benchmarks.sdk_server:app", env=(("SDK_MODE", "stateless"),)),
        SDK_STATELESS_CASES,
    ),
)
UVICORN_STACKS = ("uvicorn", "uvicorn+uvloop")
#: The side-by-side phase (``--pair-rounds``): on each uvicorn stack, ours, the bare Starlette endpoint and the
#: SDK are up at once and loaded in turn at ``SPEED_CONNS`` connections, the order rotating each round. The rows
#: above run minutes apart, and a shared machine moves a ratio of two of them by more than a target's margin;
#: the speed targets are judged by the medians of these rounds.
PAIRED_CASES = {
    "ours": ("json call", "stateless call", "json sync call", "stateless sync call"),
    "ours-bare": ("stateless call", "stateless sync call"),
    "starlette": ("call", "sync call"),
    "sdk-stateless": ("stateless call", "stateless sync call"),
}
#: Served only in the side-by-side phase: ours with no operations middleware (``MIDDLEWARE = []``), the door
#: alone, so that each run splits what ours adds to the bare endpoint into the door and the default middleware
#: (``cpu_bounds``).
BARE_SPECS: tuple[tuple[Spec, tuple[Case, ...]], ...] = tuple(
    (Spec("ours-bare", stack, "tests.settings.asgi:application", env=(("MCP_BENCH_MIDDLEWARE", "none"),)), OURS_CASES)
    for stack in UVICORN_STACKS
)


@dataclass
class Row:
    spec: Spec
    case: Case
    connections: int
    rps: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    requests: int = 0
    errors: str = ""
    #: The server's own CPU µs and context switches (all its threads) per request served (``benchmarks.procstat``).
    cpu_us: float = 0.0
    switches: float = 0.0


@dataclass
class Memory:
    sessions: int = 0
    rss_before_kib: int = 0
    rss_after_kib: int = 0
    rss_kib_per_session: float = 0.0
    tracemalloc: dict[str, Any] = field(default_factory=dict)
    error: str = ""


# -- HTTP helpers -----------------------------------------------------------------------------------------
def open_session(client: httpx.Client, url: str, request_id: int = 0, headers: dict[str, str] | None = None) -> str:
    """initialize + notifications/initialized, with extra ``headers`` (a bearer token); returns the Mcp-Session-Id."""
    extra = headers or {}
    reply = client.post(url, content=P.initialize(request_id), headers={**P.ACCEPT, **extra})
    reply.raise_for_status()
    sid = str(reply.headers.get("mcp-session-id") or "")
    if not sid:
        raise RuntimeError(f"initialize returned no Mcp-Session-Id: {reply.status_code} {reply.text[:300]}")
    done = client.post(url, content=P.INITIALIZED, headers={**P.session_headers(), **extra, "Mcp-Session-Id": sid})
    if done.status_code != 202:
        raise RuntimeError(f"notifications/initialized: {done.status_code} {done.text[:300]}")
    return sid


def check_reply(client: httpx.Client, url: str, case: Case, sid: str | None) -> None:
    """Send the case's request once and make sure it is answered the way it should be."""
    headers = dict(case.headers)
    if sid:
        headers["Mcp-Session-Id"] = sid
    reply = client.post(url, content=case.body.replace(P.ID, "0"), headers=headers)
    ctype = reply.headers.get("content-type", "")
    want = "application/json" if case.expect == "json" else "text/event-stream"
    text = reply.text
    ok = reply.status_code == 200 and ctype.startswith(want) and '"result"' in text and '"error"' not in text
    if case.expect == "progress":
        ok = ok and "notifications/progress" in text
    if not ok:
        raise RuntimeError(f"unexpected reply: {reply.status_code} {ctype} {text[:400]}")


async def _create_sessions(url: str, count: int, concurrency: int = 16) -> None:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(count):
            queue.put_nowait(i)

        async def worker() -> None:
            while not queue.empty():
                i = queue.get_nowait()
                reply = await client.post(url, content=P.initialize(i), headers=P.ACCEPT)
                sid = reply.headers["mcp-session-id"]
                headers = {**P.session_headers(), "Mcp-Session-Id": sid}
                done = await client.post(url, content=P.INITIALIZED, headers=headers)
                if done.status_code != 202:
                    raise RuntimeError(f"notifications/initialized: {done.status_code}")

        await asyncio.gather(*(worker() for _ in range(concurrency)))


# -- wrk ------------------------------------------------------------------------------------------------------
def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0:
        raise SystemExit("wrk is not installed (apt-get install -y wrk)")
    print("wrk not found: apt-get install -y wrk", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}

    def apt(*args: str) -> int:
        return subprocess.run(["apt-get", *args], env=env, capture_output=True, check=False).returncode

    if apt("install", "-y", "wrk") != 0:
        apt("update")
        apt("install", "-y", "wrk")
    found = shutil.which("wrk")
    if not found:
        raise SystemExit("wrk could not be installed")
    return found


#: wrk's error counts (``post.lua``'s ``BENCH_JSON``).
ERROR_KINDS = ("connect", "read", "write", "status", "timeout")


def run_wrk(
    wrk: str, url: str, case: Case, connections: int, seconds: int, port: int, sid: str | None, raw: Path | None
) -> dict[str, Any]:
    headers = [f"{k}: {v}" for k, v in case.headers] + [f"Host: 127.0.0.1:{port}"]
    env = {**os.environ, "BENCH_BODY": case.body, "BENCH_HEADERS": "\n".join(headers), "MCP_SESSION_ID": sid or ""}
    cmd = [wrk, "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s", "--latency", "-s", str(LUA), url]
    out = subprocess.run(
        pinned(LOAD_CORE, cmd), env=env, capture_output=True, text=True, timeout=seconds + 60, check=False
    )
    if raw is not None:
        raw.write_text(out.stdout + out.stderr)
    match = re.search(r"^BENCH_JSON (\{.*\})$", out.stdout, re.MULTILINE)
    if out.returncode != 0 or match is None:
        raise RuntimeError(f"wrk failed ({out.returncode}): {out.stdout[-500:]} {out.stderr[-500:]}")
    stats: dict[str, Any] = json.loads(match.group(1))
    return stats


@dataclass(frozen=True)
class Served:
    """One wrk measurement of a running server: wrk's figures and the server's own CPU and switches a request."""

    stats: dict[str, Any]
    cpu_us: float
    switches: float

    @property
    def rps(self) -> float:
        return float(self.stats["requests"]) / (self.stats["duration_us"] / 1e6)

    @property
    def errors(self) -> dict[str, int]:
        return {k: self.stats[k] for k in ERROR_KINDS if self.stats[k]}


def serve(
    wrk: str, server: Server, url: str, case: Case, connections: int, seconds: int, sid: str | None, raw: Path | None
) -> Served:
    """``run_wrk`` against ``server``, with its ``/proc`` figures read just before and after (0 if it exited)."""
    assert server.process is not None
    before = procstat.read(server.process.pid)
    stats = run_wrk(wrk, url, case, connections, seconds, server.port, sid, raw)
    after = procstat.read(server.process.pid)
    if before is None or after is None:
        return Served(stats, 0.0, 0.0)
    return Served(stats, *before.per_request(after, stats["requests"]))


def ours_env(root: Path, sqlite: Path) -> dict[str, str]:
    """The environment of ours and the floors: the benchmark settings on SQLite ``sqlite`` and the in-memory layer,
    the checkout ``root`` first on the path (``ab.py`` runs another checkout)."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "benchmarks.settings",
        "PYTHONPATH": str(root),
        "PYTHONDONTWRITEBYTECODE": "1",
        "MCP_TEST_DB": "sqlite",
        "MCP_TEST_LAYER": "memory",
        "MCP_SQLITE": str(sqlite),
    }


def migrate(env: dict[str, str], cwd: Path = ROOT) -> None:
    """``manage.py migrate`` with ``env`` in checkout ``cwd``; its output only when it fails."""
    done = subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v0"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"migrate failed in {cwd}:\n{done.stdout}{done.stderr}")


# -- the run ------------------------------------------------------------------------------------------------
class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.seconds: int = 3 if args.quick and args.duration is None else (args.duration or 10)
        self.connections: tuple[int, ...] = (16,) if args.quick else CONNECTIONS
        self.rows: list[Row] = []
        #: The side-by-side rounds: each server and case's measurements, in order (``bench_side_by_side``).
        self.rounds: dict[tuple[Spec, Case], list[Served]] = {}
        self.failures: list[str] = []
        self.memory = Memory()
        self.tmp = Path(tempfile.mkdtemp(prefix="django-mcp-bench-"))
        self.logdir = RESULTS_DIR / "logs"
        self.rawdir = RESULTS_DIR / "raw"
        self.env = ours_env(ROOT, self.tmp / "bench.sqlite3")
        self.wrk = ensure_wrk()

    def log(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def selected(self, spec: Spec) -> bool:
        only = [s.strip() for s in (self.args.only or "").split(",") if s.strip()]
        return not only or any(o in (spec.impl, spec.server, spec.key, spec.impl.split("-")[0]) for o in only)

    def run(self) -> None:
        for d in (self.logdir, self.rawdir):
            d.mkdir(parents=True, exist_ok=True)
        migrate(self.env)
        specs = SPECS
        if self.args.uvloop:
            import httptools  # noqa: F401 - fail now, not per server: `make bench-deps` installs them
            import uvloop  # noqa: F401

            specs = SPECS + UVLOOP_SPECS
        for spec, cases in specs:
            if self.selected(spec):
                self.bench_server(spec, cases)
        if self.args.pair_rounds:
            for stack in UVICORN_STACKS if self.args.uvloop else UVICORN_STACKS[:1]:
                self.bench_side_by_side(specs, stack)
        if self.selected(Spec("ours", "daphne", "")) and not self.args.skip_memory:
            self.measure_memory()

    def bench_server(self, spec: Spec, cases: tuple[Case, ...]) -> None:
        server = Server(spec, self.env, self.logdir)
        self.log(f"== {spec.key} ({spec.app})")
        try:
            server.start()
            with httpx.Client(timeout=10) as client:
                for case in cases:
                    self.bench_case(server, client, case)
        except Exception as exc:  # noqa: BLE001 - record and go on with the next server
            self.failures.append(f"{spec.key}: {exc}")
            self.log(f"   FAILED: {exc}")
        finally:
            server.stop()
        problems = server.problems()
        if problems:
            self.failures.append(f"{spec.key}: errors in the server log {server.log}:\n{problems}")

    def bench_case(self, server: Server, client: httpx.Client, case: Case) -> None:
        url = server.base + (case.path or server.spec.path)
        connections = [c for c in case.connections if c in self.connections] or list(case.connections)
        try:
            sid = open_session(client, url) if case.session else None
            if case.method != "initialize":
                check_reply(client, url, case, sid)
            run_wrk(self.wrk, url, case, 16, WARMUP_SECONDS, server.port, sid, None)
        except Exception as exc:  # noqa: BLE001
            self.failures.append(f"{server.spec.key} / {case.name}: {exc}")
            self.log(f"   {case.name}: FAILED {exc}")
            return
        for conns in connections:
            row = Row(server.spec, case, conns)
            slug = re.sub(r"[^a-z0-9]+", "-", f"{server.spec.impl}-{server.spec.server}-{case.name}-c{conns}".lower())
            try:
                served = serve(self.wrk, server, url, case, conns, self.seconds, sid, self.rawdir / f"{slug}.txt")
            except Exception as exc:  # noqa: BLE001
                row.errors = str(exc)[:200]
                self.rows.append(row)
                self.log(f"   {case.name} c={conns}: FAILED {exc}")
                continue
            stats = served.stats
            row.requests, row.rps = stats["requests"], served.rps
            row.cpu_us, row.switches = served.cpu_us, served.switches
            row.p50_ms, row.p99_ms = stats["p50_us"] / 1000, stats["p99_us"] / 1000
            row.errors = ", ".join(f"{k} {v}" for k, v in served.errors.items())
            self.rows.append(row)
            note = f"  [{row.errors}]" if row.errors else ""
            self.log(
                f"   {case.name:<30} c={conns:<3} {row.rps:9.0f} req/s"
                f"  p50 {row.p50_ms:7.2f} ms  p99 {row.p99_ms:7.2f} ms"
                f"  {row.cpu_us:6.0f} µs CPU {row.switches:5.2f} cs a request{note}"
            )

    def bench_side_by_side(self, specs: tuple[tuple[Spec, tuple[Case, ...]], ...], stack: str) -> None:
        """``PAIRED_CASES`` on ``stack``: every server up at once, ``--pair-rounds`` rounds, each case once a round."""
        chosen = [
            (spec, [c for c in cases if c.name in PAIRED_CASES[spec.impl]])
            for spec, cases in (*specs, *BARE_SPECS)
            if spec.server == stack and spec.impl in PAIRED_CASES and self.selected(spec)
        ]
        if len(chosen) < 2:
            return
        seconds = self.args.pair_seconds
        self.log(f"== side by side on {stack}: {self.args.pair_rounds} rounds of {seconds} s a case")
        servers: list[Server] = []
        try:
            jobs: list[tuple[Server, Case, str, str | None]] = []
            with httpx.Client(timeout=10) as client:
                for spec, cases in chosen:
                    server = Server(spec, self.env, self.logdir)
                    server.log = self.logdir / f"side-by-side-{spec.impl}-{spec.server}.log"
                    servers.append(server)
                    server.start()  # idle while another is loaded: a uvicorn worker waiting in epoll costs nothing
                    for case in cases:
                        url = server.base + (case.path or spec.path)
                        sid = open_session(client, url) if case.session else None
                        check_reply(client, url, case, sid)
                        run_wrk(self.wrk, url, case, SPEED_CONNS, WARMUP_SECONDS, server.port, sid, None)
                        jobs.append((server, case, url, sid))
            for i in range(self.args.pair_rounds):
                turn = i % len(jobs)
                for server, case, url, sid in jobs[turn:] + jobs[:turn]:
                    served = serve(self.wrk, server, url, case, SPEED_CONNS, seconds, sid, None)
                    self.rounds.setdefault((server.spec, case), []).append(served)
                    self.log(
                        f"   {i + 1}: {server.spec.key:<28} {case.name:<22} {served.rps:9.0f} req/s"
                        f"  {served.cpu_us:6.0f} µs CPU"
                    )
        except Exception as exc:  # noqa: BLE001 - record; the targets then fall back on the rows
            self.failures.append(f"side by side on {stack}: {exc}")
            self.log(f"   FAILED: {exc}")
        finally:
            for server in servers:
                server.stop()
        for server in servers:
            problems = server.problems()
            if problems:
                self.failures.append(f"{server.spec.key} (side by side): errors in {server.log}:\n{problems}")

    def side_by_side_rows(self) -> list[Row]:
        """One row per server and case of the side-by-side phase: the medians of its rounds."""
        rows = []
        for (spec, case), runs in self.rounds.items():
            if len(runs) < self.args.pair_rounds:
                continue  # the phase broke off: these rounds do not stand beside the others'
            row = Row(spec, case, SPEED_CONNS)
            row.rps = statistics.median([r.rps for r in runs])
            row.p50_ms = statistics.median([r.stats["p50_us"] for r in runs]) / 1000
            row.p99_ms = statistics.median([r.stats["p99_us"] for r in runs]) / 1000
            row.cpu_us = statistics.median([r.cpu_us for r in runs])
            row.switches = statistics.median([r.switches for r in runs])
            row.requests = sum(int(r.stats["requests"]) for r in runs)
            row.errors = ", ".join(f"{k} {v}" for r in runs for k, v in r.errors.items())
            rows.append(row)
        return rows

    def measure_memory(self) -> None:
        """RSS of a fresh daphne server around N real initialize exchanges, then tracemalloc in-process."""
        count = self.args.sessions or (1000 if self.args.quick else 5000)
        spec = Spec("ours", "daphne", "tests.settings.asgi:application")
        server = Server(spec, self.env, self.logdir)
        server.log = self.logdir / "memory-ours-daphne.log"
        self.log(f"== memory per idle session ({count} sessions)")
        mem = self.memory
        mem.sessions = count
        try:
            server.start()
            asyncio.run(_create_sessions(server.url, 300))  # warm up: imports, caches, allocator arenas
            time.sleep(1)
            mem.rss_before_kib = server.rss_kib()
            asyncio.run(_create_sessions(server.url, count))
            time.sleep(1)
            mem.rss_after_kib = server.rss_kib()
            mem.rss_kib_per_session = (mem.rss_after_kib - mem.rss_before_kib) / count
            self.log(
                f"   RSS {mem.rss_before_kib} -> {mem.rss_after_kib} KiB: {mem.rss_kib_per_session:.2f} KiB/session"
            )
        except Exception as exc:  # noqa: BLE001
            mem.error = f"RSS measurement failed: {exc}"
            self.log(f"   {mem.error}")
        finally:
            server.stop()
        code = "from benchmarks.session_memory import main; main()"
        out = subprocess.run(
            [sys.executable, "-m", "django", "shell", "-c", code],
            env={**self.env, "BENCH_SESSIONS": str(count)},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        match = re.search(r"^SESSION_MEMORY (\{.*\})$", out.stdout, re.MULTILINE)
        if match is None:
            mem.error += f" tracemalloc script failed: {out.stderr[-1000:]}"
            self.log(f"   tracemalloc failed: {out.stderr[-1000:]}")
            return
        mem.tracemalloc = json.loads(match.group(1))
        self.log(f"   tracemalloc: {mem.tracemalloc['kib_per_session']:.2f} KiB/session")

    def cleanup(self) -> None:
        _stop_all()
        shutil.rmtree(self.tmp, ignore_errors=True)


# -- report ---------------------------------------------------------------------------------------------------
LEGEND = """\
- ours: `tests.settings.asgi:application` with `benchmarks.settings` (DEBUG off, VALIDATE_RESULTS off, SQLite, in-memory
  channel layer). `json`/`sse` cases run on one 2025-11-25 session (`sse call` calls a tool that reports progress
  once, with a progressToken, so the reply is SSE); `stateless` cases are 2026-07-28 requests with `_meta` and the
  `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers.
- floor: a bare Channels `AsyncHttpConsumer` that parses the body and returns a fixed JSON-RPC result (the stock
  `AsyncHttpConsumer` dispatch, with its per-request channel and database-connection hop, is shown once for reference).
- view: a Django async view doing the same JSON work behind the default `startproject` middleware (plain Django ASGI).
- sdk: the official SDK's `MCPServer` with the same two tools; stateless = stateless HTTP + JSON replies (2026-07-28
  requests), stateful = sessions + SSE replies.
- ÷ floor: over the floor on the same server, same method and connections. ÷ SDK: ours over the SDK's
  stateless+JSON mode on uvicorn, same method and connections (for `initialize`: over the SDK's stateful mode).
- CPU µs/req, switches/req: the server process's own CPU time (every thread) and context switches over the
  requests wrk counted, from `/proc` (`benchmarks/procstat.py`): steadier than req/s when the machine is busy.
"""


def _find(rows: list[Row], impl: str, server: str, method: str, conns: int) -> Row | None:
    for row in rows:
        if (row.spec.impl, row.spec.server, row.case.method, row.connections) == (impl, server, method, conns):
            if row.rps:
                return row
    return None


def _named(rows: list[Row], impl: str, server: str, case: str, conns: int) -> Row | None:
    for row in rows:
        if (row.spec.impl, row.spec.server, row.case.name, row.connections) == (impl, server, case, conns) and row.rps:
            return row
    return None


def floor_ratio(rows: list[Row], row: Row) -> float | None:
    if row.spec.impl not in ("ours", "view") or row.case.method not in ("call", "list"):
        return None
    floor = _find(rows, "floor", row.spec.server, row.case.method, row.connections)
    return row.rps / floor.rps if floor and row.rps else None


def _sdk_stack(server: str) -> str:
    """Where the SDK a row of ours is compared with ran: the same uvicorn stack (daphne: plain uvicorn)."""
    return server if server in UVICORN_STACKS else "uvicorn"


def sdk_ratio(rows: list[Row], row: Row) -> float | None:
    if row.spec.impl != "ours":
        return None
    if row.case.method == "initialize":
        best = _find(rows, "sdk-stateful", "uvicorn", "initialize", row.connections)
    elif row.case.method in ("call", "list", "sync"):
        best = _find(rows, "sdk-stateless", _sdk_stack(row.spec.server), row.case.method, row.connections)
    else:
        return None
    return row.rps / best.rps if best and row.rps else None


def _ratio(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else ""


def _cmd_version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except OSError:
        return "?"


def machine_info() -> dict[str, str]:
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    versions = {}
    for dist in ("django", "channels", "daphne", "uvicorn", "twisted", "mcp", "h11", "uvloop", "httptools"):
        try:
            from importlib.metadata import version

            versions[dist] = version(dist)
        except Exception:  # noqa: BLE001 - not installed
            versions[dist] = "-"
    commit = _cmd_version(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = _cmd_version(["git", "-C", str(ROOT), "status", "--porcelain", "--", "django_mcp"])
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "wrk": _cmd_version(["wrk", "--version"]).split(" Copyright")[0] if shutil.which("wrk") else "-",
        "commit": commit + (" + uncommitted changes in django_mcp/" if dirty else ""),
    }


def report(bench: Bench, info: dict[str, str], load_before: str, load_after: str) -> str:
    rows = bench.rows
    out: list[str] = []
    out.append("# django-mcp-toolkit benchmarks\n")
    out.append(
        f"{info['date']} · {info['nproc']} CPUs ({info['cpu']}) · Linux {info['kernel']} · Python {info['python']}  "
    )
    out.append(f"{info['versions']} · {info['wrk']}  ")
    out.append(f"commit {info['commit']}  ")
    out.append(
        f"servers pinned to core {SERVER_CORE}, `wrk -t1` pinned to core {LOAD_CORE}, loopback; "
        f"{bench.seconds} s per measurement after a {WARMUP_SECONDS} s warm-up; load average before {load_before}, "
        f"after {load_after}.\n"
    )
    out.append(LEGEND)
    out.append(
        "| server | case | conns | req/s | p50 ms | p99 ms | CPU µs/req | switches/req | ÷ floor | ÷ SDK | errors |"
    )
    out.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for row in rows:
        rps = f"{row.rps:,.0f}" if row.rps else "—"
        p50 = f"{row.p50_ms:.2f}" if row.rps else "—"
        p99 = f"{row.p99_ms:.2f}" if row.rps else "—"
        cpu = f"{row.cpu_us:,.0f}" if row.cpu_us else "—"
        switches = f"{row.switches:.2f}" if row.cpu_us else "—"
        out.append(
            f"| {row.spec.key} | {row.case.name} | {row.connections} | {rps} | {p50} | {p99} | {cpu} | {switches} | "
            f"{_ratio(floor_ratio(rows, row))} | {_ratio(sdk_ratio(rows, row))} | {row.errors} |"
        )
    mem = bench.memory
    if mem.sessions:
        out.append("\n## Memory per idle session (ours on daphne)\n")
        if mem.rss_after_kib:
            out.append(
                f"- server RSS: {mem.rss_before_kib:,} KiB → {mem.rss_after_kib:,} KiB after {mem.sessions:,} sessions "
                f"(`initialize` + `notifications/initialized` over HTTP): **{mem.rss_kib_per_session:.2f} KiB per "
                f"session** ({mem.rss_kib_per_session * 1000 / 1024:.1f} MiB per 1,000)"
            )
        tm = mem.tracemalloc
        if tm:
            top = ", ".join(f"{t['file']} {t['bytes'] / mem.sessions:.0f} B" for t in tm["top"])
            out.append(
                f"- tracemalloc in-process (`store.create` x {tm['sessions']:,}, database row included): "
                f"**{tm['kib_per_session']:.2f} KiB per session**; per session by file: {top}"
            )
        if mem.error:
            out.append(f"- error: {mem.error}")
    out.extend(side_by_side_report(bench))
    out.append("\n## Targets\n")
    out.extend(targets(bench))
    if bench.failures:
        out.append("\n## Failures\n")
        out.extend(f"- {f}" for f in bench.failures)
    return "\n".join(out) + "\n"


def side_by_side_report(bench: Bench) -> list[str]:
    """The side-by-side rounds: each case's req/s per round and median, and the ratios the targets read."""
    if not bench.rounds:
        return []
    out = [
        f"\n## Side by side ({bench.args.pair_rounds} rounds of {bench.args.pair_seconds} s a case, "
        f"{SPEED_CONNS} connections, the servers up at once and loaded in turn)\n",
        "The speed targets are judged by these medians.\n",
        "| server | case | req/s each round | median req/s | p99 ms | CPU µs/req | ÷ SDK | ÷ Starlette |",
        "|---|---|---|--:|--:|--:|--:|--:|",
    ]
    rows = bench.side_by_side_rows()
    for (spec, case), runs in bench.rounds.items():
        row = _named(rows, spec.impl, spec.server, case.name, SPEED_CONNS)
        if row is None:
            continue
        ours = spec.impl in ("ours", "ours-bare")
        sdk = _find(rows, "sdk-stateless", spec.server, case.method, SPEED_CONNS) if ours else None
        limit_case = "sync call" if case.method == "sync" else "call"
        limit = _named(rows, "starlette", spec.server, limit_case, SPEED_CONNS) if ours else None
        each = " · ".join(f"{r.rps:,.0f}" for r in runs)
        out.append(
            f"| {spec.key} | {case.name} | {each} | {row.rps:,.0f} | {row.p99_ms:.2f} | {row.cpu_us:,.0f} | "
            f"{_ratio(row.rps / sdk.rps if sdk else None)} | {_ratio(row.rps / limit.rps if limit else None)} |"
        )
    return out


def sdk_target(server: str, case: str) -> float:
    """The least ratio to the SDK ours must reach on ``server`` for ``case`` (a sync tool: to the SDK's sync tool)."""
    if server not in UVICORN_STACKS:
        return TARGET_SDK_DAPHNE
    return TARGET_SDK_UVICORN_SYNC if "sync" in case else TARGET_SDK_UVICORN


def speed_targets(rows: list[Row], judged: list[Row] | None = None) -> list[str]:
    """The speed issue's targets, each with its ratio and PASS or FAIL (a FAIL is a regression or a goal not met).

    ``judged``: the side-by-side phase's medians, which the uvicorn stacks' targets read where a case ran there;
    daphne (not in that phase) is compared with the SDK's row of the same phase as its own.
    """
    sequential = rows
    rows = (judged or []) + rows
    lines: list[str] = []
    c = SPEED_CONNS

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "FAIL"

    tools = ("json call", "stateless call", "json sync call", "stateless sync call")
    for server in ("uvicorn", "daphne", "uvicorn+uvloop"):
        source = rows if server in UVICORN_STACKS else sequential
        for name in tools:
            row = _named(source, "ours", server, name, c)
            sdk = _find(source, "sdk-stateless", _sdk_stack(server), row.case.method, c) if row else None
            if row and sdk:
                ratio = row.rps / sdk.rps
                goal = sdk_target(server, name)
                lines.append(
                    f"- {verdict(ratio >= goal)} ours on {server}, {name}, ≥ {goal}x the SDK (stateless+JSON): "
                    f"{ratio:.2f}x ({row.rps:,.0f} vs {sdk.rps:,.0f} req/s)"
                )
    for stack in UVICORN_STACKS:
        for name in tools:
            row = _named(rows, "ours", stack, name, c)
            # Like for like: a sync tool against Starlette's sync endpoint (its thread pool), as against the SDK's.
            sync = "sync" in name
            limit = _named(rows, "starlette", stack, "sync call" if sync else "call", c)
            if row and limit:
                ratio = row.rps / limit.rps
                kind = "sync (thread pool)" if sync else "async"
                lines.append(
                    f"- {verdict(ratio >= TARGET_STARLETTE)} ours on {stack}, {name}, ≥ {TARGET_STARLETTE:.0%} of a "
                    f"bare Starlette endpoint, {kind}: {ratio:.2f} ({row.rps:,.0f} vs {limit.rps:,.0f} req/s)"
                )
    lines.extend(cpu_bounds(rows))
    for stack in UVICORN_STACKS:
        for name in tools:
            row = _named(rows, "ours", stack, name, c)
            sdk = _find(rows, "sdk-stateless", stack, row.case.method, c) if row else None
            if row and sdk:
                lines.append(
                    f"- {verdict(row.p99_ms <= sdk.p99_ms * TARGET_P99_SDK)} ours on {stack}, {name}, p99 ≤ the "
                    f"SDK's: {row.p99_ms:.2f} vs {sdk.p99_ms:.2f} ms"
                )
            if row:
                ratio = row.p99_ms / row.p50_ms if row.p50_ms else float("inf")
                lines.append(
                    f"- {verdict(ratio <= TARGET_P99_P50)} ours on {stack}, {name}, p99 ≤ {TARGET_P99_P50:.0f}x our "
                    f"p50: {ratio:.1f}x ({row.p99_ms:.2f} / {row.p50_ms:.2f} ms)"
                )
    return lines


def cpu_bounds(rows: list[Row]) -> list[str]:
    """What the SDK targets ask of ours in server CPU per request, beside the bare Starlette endpoint's own.

    At 16 connections a pinned server is saturated, so req/s is about 1 ÷ CPU a request: "≥ 2.5x the
    SDK" means "≤ the SDK's CPU ÷ 2.5". Printed so that each run shows how much room a target leaves
    above the cost of an endpoint that does nothing but the JSON (for reference: no PASS or FAIL).
    """
    lines: list[str] = []
    c = SPEED_CONNS
    for server in UVICORN_STACKS:
        for name, floor_case in (("stateless call", "call"), ("stateless sync call", "sync call")):
            goal = sdk_target(server, name)
            row = _named(rows, "ours", server, name, c)
            sdk = _find(rows, "sdk-stateless", server, row.case.method, c) if row else None
            limit = _named(rows, "starlette", server, floor_case, c)
            if row and sdk and limit and sdk.cpu_us and row.cpu_us and limit.cpu_us:
                budget = sdk.cpu_us / goal
                bare = _named(rows, "ours-bare", server, name, c)
                door = (
                    f" ({bare.cpu_us - limit.cpu_us:,.0f} without the operations middleware: the door alone)"
                    if bare and bare.cpu_us
                    else ""
                )
                lines.append(
                    f"- (bound) ours on {server}, {name}: {goal}x the SDK asks ≤ {budget:,.0f} µs of server CPU a "
                    f"request; the bare Starlette endpoint ({floor_case}) costs {limit.cpu_us:,.0f}, so the MCP "
                    f"request may add {budget - limit.cpu_us:,.0f}; ours adds {row.cpu_us - limit.cpu_us:,.0f}{door}"
                )
    return lines


def targets(bench: Bench) -> list[str]:
    rows = bench.rows
    # The side-by-side medians first: where a case ran in both, the targets read those (the rows: the rest).
    lines = speed_targets(rows, bench.side_by_side_rows())
    modes = ("json call", "json list", "stateless call", "stateless list")
    ours = [r for r in rows if r.spec.impl == "ours" and r.case.name in modes and r.rps]
    for server in ("daphne", "uvicorn"):
        pairs = [(r, floor_ratio(rows, r)) for r in ours if r.spec.server == server]
        found = [(r, v) for r, v in pairs if v is not None]
        if not found:
            continue
        worst = min(found, key=lambda p: p[1])
        misses = [f"{r.case.name} c{r.connections} {v:.2f}" for r, v in found if v < TARGET_FLOOR]
        verdict = "met" if not misses else "MISSED (" + "; ".join(misses) + ")"
        lines.append(
            f"- ours ≥ {TARGET_FLOOR:.0%} of the floor on {server} (JSON and stateless): {verdict}; "
            f"lowest {worst[1]:.2f} ({worst[0].case.name}, {worst[0].connections} conns)"
        )
    for server in ("uvicorn", "daphne"):
        found = [(r, v) for r in ours if r.spec.server == server and (v := sdk_ratio(rows, r)) is not None]
        if not found:
            continue
        worst = min(found, key=lambda p: p[1])
        misses = [f"{r.case.name} c{r.connections} {v:.2f}" for r, v in found if v < TARGET_SDK]
        verdict = "met" if not misses else "MISSED (" + "; ".join(misses) + ")"
        label = "target" if server == "uvicorn" else "for reference"
        lines.append(
            f"- ours on {server} ≥ {TARGET_SDK}x the SDK's stateless+JSON mode on uvicorn ({label}): {verdict}; "
            f"lowest {worst[1]:.2f}x ({worst[0].case.name}, {worst[0].connections} conns)"
        )
    case = "sse call (progress)"
    for server in ("uvicorn", "daphne"):
        for conns in CONNECTIONS:
            ours_sse = _named(rows, "ours", server, case, conns)
            sdk_sse = _named(rows, "sdk-stateful", "uvicorn", case, conns)
            if ours_sse and sdk_sse:
                lines.append(
                    f"- for reference, SSE replies like for like: ours on {server} {case} ÷ SDK stateful {case}, "
                    f"{conns} conns: {ours_sse.rps / sdk_sse.rps:.2f}x"
                )
    mem = bench.memory
    if mem.rss_after_kib or mem.tracemalloc:
        values = []
        if mem.rss_after_kib:
            values.append(f"RSS {mem.rss_kib_per_session:.2f} KiB")
        if mem.tracemalloc:
            values.append(f"tracemalloc {mem.tracemalloc['kib_per_session']:.2f} KiB")
        worst_kib = max(
            [mem.rss_kib_per_session] * bool(mem.rss_after_kib)
            + [mem.tracemalloc.get("kib_per_session", 0.0)] * bool(mem.tracemalloc)
        )
        verdict = "met" if worst_kib <= TARGET_KIB else "MISSED"
        lines.append(f"- ≤ {TARGET_KIB:.0f} KiB per idle session: {verdict} ({', '.join(values)})")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--duration", type=int, default=None, help="seconds per measurement (default 10; 3 with --quick)"
    )
    parser.add_argument("--quick", action="store_true", help="3 s per measurement, 16 connections only")
    parser.add_argument(
        "--only", help="comma-separated subset: ours, floor, view, sdk, starlette, daphne, uvicorn, uvicorn+uvloop"
    )
    parser.add_argument("--sessions", type=int, default=None, help="idle sessions for the memory measurement")
    parser.add_argument("--skip-memory", action="store_true", help="skip the memory measurement")
    parser.add_argument(
        "--pair-rounds",
        type=int,
        default=None,
        help="rounds of the side-by-side phase that the speed targets are judged by (default 5; 0 with --quick)",
    )
    parser.add_argument("--pair-seconds", type=int, default=3, help="seconds a case in each side-by-side round")
    parser.add_argument(
        "--uvloop",
        action="store_true",
        help="also run ours, Starlette and the SDK on uvicorn with uvloop + httptools (uvicorn[standard])",
    )
    args = parser.parse_args()
    if args.pair_rounds is None:
        args.pair_rounds = 0 if args.quick else 5

    atexit.register(_stop_all)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    bench = Bench(args)
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    started = time.monotonic()
    try:
        bench.run()
    finally:
        bench.cleanup()
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    text = report(bench, machine_info(), " ".join(load_before), " ".join(load_after))
    print(text)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "latest.md").write_text(text)
    if not args.quick and not args.only and args.duration in (None, 10):
        (HERE / "RESULTS.md").write_text(text)
    bench.log(f"done in {time.monotonic() - started:.0f} s; written to {RESULTS_DIR / 'latest.md'}")
    missed = "\n- FAIL " in text  # a speed target not met (the report lists them)
    return 1 if bench.failures or missed else 0


if __name__ == "__main__":
    sys.exit(main())
