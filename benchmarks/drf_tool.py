#!/usr/bin/env python
"""A DRF view as an MCP tool against the same view over HTTP: the example project, PostgreSQL, OAuth.

The example project's ``BookViewSet`` retrieve, served by the example's ASGI application with
docs/deployment.md's database settings (Django's psycopg pool, ``CONN_MAX_AGE = 0``) on a fresh
PostgreSQL database loaded with the demo fixture:

* DRF: ``GET /api/books/<pk>/`` with ``Authorization: Bearer <token>`` (the benchmark's settings give
  the API DOT's ``OAuth2Authentication``: ``benchmarks/example_settings.py``);
* MCP: ``tools/call`` of ``api_book_retrieve`` (``register_drf`` of that viewset) with the same token,
  stateless (2026-07-28) and in a 2025-11-25 session.

One token serves both: one user, one client, scope ``mcp``, issued for both resources (the MCP
endpoint, which checks its audience exactly, and the API root). Two setups, each started with the
guide's ``uvicorn`` command (``--no-access-log`` added):

* ``1 worker``: one uvicorn process pinned to core 0, ``wrk -t1 -c16`` pinned to core 1;
* ``2 workers + nginx``: two uvicorn processes behind nginx running the guide's ``nginx`` block
  (``tests/production/harness.py`` reads it), Redis channel layer (the shared server, db 9), nothing
  pinned: nginx, both workers and wrk share the two cores.

Each side's reply is checked by hand before the load (the book's id must come back). The cases are
interleaved round by round (ABC, CBA, ...); req/s is the total over the rounds, p50/p99 the median of
the rounds, and every side must finish with 0 errors (wrk's connect/read/write/timeout and non-2xx
statuses) and no traceback in the workers' logs. Target: MCP ≥ 0.9x the DRF view, same setup.

Usage: ``python benchmarks/drf_tool.py [--seconds 3] [--rounds 4] [--setups 1,2]`` (``make bench-drf``)
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks import payloads as P  # noqa: E402
from benchmarks import run as R  # noqa: E402
from benchmarks.models_vs_drf import Measured, interleaved  # noqa: E402
from benchmarks.models_vs_drf import wrk as run_wrk  # noqa: E402
from tests.production.harness import NGINX, documented_command, nginx_config  # noqa: E402

RESULTS = HERE / "results" / "drf_tool.md"
TARGET = 0.9
CONNECTIONS = 16
PG_NAME = "django_mcp_drf_bench"
REDIS = "redis://127.0.0.1:6379/9"
BOOK = 3
TOOL = "api_book_retrieve"
TOKEN = "drf-tool-bench-token-0123456789abcdef"

SEED = f"""
import json
import os
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_application_model

user = get_user_model().objects.create_user("bench", password=None)
app = get_application_model().objects.create(
    name="bench", client_type="public", authorization_grant_type="authorization-code",
    redirect_uris="http://127.0.0.1/cb", user=user,
)
get_access_token_model().objects.create(
    user=user, application=app, token={TOKEN!r}, scope="mcp",
    expires=timezone.now() + timedelta(days=1), resource=json.loads(os.environ["BENCH_RESOURCES"]),
)
"""


@dataclass(frozen=True)
class Case:
    side: str  # drf | session | stateless
    path: str
    body: str = ""  # empty: GET
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return {"drf": "DRF view", "session": "MCP 2025-11-25 session", "stateless": "MCP 2026-07-28 stateless"}[
            self.side
        ]


AUTH = ("Authorization", f"Bearer {TOKEN}")
CALL_PARAMS = {"name": TOOL, "arguments": {"pk": BOOK}}
CASES = (
    Case("drf", f"/api/books/{BOOK}/", headers=(("Accept", "application/json"), AUTH)),
    Case("session", "/mcp/", P.body("tools/call", CALL_PARAMS), (*P.session_headers().items(), AUTH)),
    Case(
        "stateless",
        "/mcp/",
        P.body("tools/call", {**CALL_PARAMS, "_meta": P.META}),
        (*P.stateless_headers("tools/call", TOOL).items(), AUTH),
    ),
)


@dataclass
class Result(Measured):
    setup: str
    case: Case


class Proc:
    """A process this benchmark started; stopped by its own pid."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        handle = log.open("wb")
        self.process = subprocess.Popen(args, env=env, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT)
        R._RUNNING.append(self.process)

    def wait_port(self, port: int) -> None:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"exited early:\n{self.log.read_text()[-3000:]}")
            if R.reachable(port):
                return
            time.sleep(0.1)
        raise RuntimeError(f"nothing listens on {port}:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        R._stop(self.process)


def problems(log: Path) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    return "\n".join(line for line in text.splitlines() if "Traceback" in line or " 500 " in line)[-2000:]


# -- checks and wrk ---------------------------------------------------------------------------------------------
def check(client: httpx.Client, base: str, case: Case, sid: str | None) -> None:
    """One request by hand: a 200 carrying the book, else the numbers mean nothing."""
    headers = dict(case.headers) | ({"Mcp-Session-Id": sid} if sid else {})
    if case.side == "drf":
        reply = client.get(base + case.path, headers=headers)
        ok = reply.status_code == 200 and reply.json().get("id") == BOOK
    else:
        reply = client.post(base + case.path, content=case.body.replace(P.ID, "0"), headers=headers)
        result = reply.json().get("result", {}) if reply.status_code == 200 else {}
        structured = result.get("structuredContent") or {}
        ok = not result.get("isError") and structured.get("id") == BOOK
    if not ok:
        raise RuntimeError(f"{case.label}: unexpected reply {reply.status_code} {reply.text[:400]}")


def wrk(binary: str, base: str, case: Case, seconds: int, sid: str | None, pin: bool) -> dict[str, Any]:
    """``models_vs_drf.wrk`` (same scripts and connections) on ``base``'s port."""
    return run_wrk(binary, base, int(base.rsplit(":", 1)[1]), case, seconds, sid, pin)


# -- the run ------------------------------------------------------------------------------------------------------
class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.results: list[Result] = []
        self.failures: list[str] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="django-mcp-drf-bench-"))
        self.wrk = R.ensure_wrk()
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "benchmarks.example_settings",
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "example_project")]),
            "PYTHONDONTWRITEBYTECODE": "1",
            "DJANGO_PG_NAME": PG_NAME,
        }

    def log(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def _admin(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]

    def prepare(self, resources: list[str]) -> None:
        """A fresh database: migrations, the demo fixture, and the user, client and token."""
        self._admin(f"DROP DATABASE IF EXISTS {PG_NAME} WITH (FORCE)", f"CREATE DATABASE {PG_NAME}")
        django = [sys.executable, "-m", "django"]
        subprocess.run([*django, "migrate", "--noinput", "-v0"], env=self.env, cwd=ROOT, check=True)
        subprocess.run([*django, "loaddata", "demo", "-v0"], env=self.env, cwd=ROOT, check=True)
        env = {**self.env, "BENCH_RESOURCES": json.dumps(resources)}
        subprocess.run([*django, "shell", "-v0", "-c", SEED], env=env, cwd=ROOT, check=True)

    def run(self) -> None:
        try:
            for setup in self.args.setups:
                if setup == "1":
                    self.one_worker()
                else:
                    self.behind_nginx()
        finally:
            self._admin(f"DROP DATABASE IF EXISTS {PG_NAME} WITH (FORCE)")

    def worker(self, port: int, env: dict[str, str], name: str, pin: bool) -> Proc:
        args = [*documented_command("uvicorn", "example_project.asgi:application", port), "--no-access-log"]
        proc = Proc(R.pinned(R.SERVER_CORE, args) if pin else args, env, self.tmp / f"{name}.log")
        proc.wait_port(port)
        return proc

    def one_worker(self) -> None:
        port = R.free_port()
        base = f"http://127.0.0.1:{port}"
        self.prepare([f"{base}/mcp/", f"{base}/api/"])
        self.log("== 1 worker (uvicorn, pinned to core 0; wrk on core 1)")
        proc = self.worker(port, self.env, "worker", pin=True)
        try:
            self.measure("1 worker", base, pin=True, logs=[proc.log])
        finally:
            proc.stop()

    def behind_nginx(self) -> None:
        if not Path(NGINX).exists():
            raise RuntimeError(f"{NGINX} is missing (apt-get install nginx)")
        listen = R.free_port()
        base = f"http://127.0.0.1:{listen}"
        # nginx passes `Host: $host`, the address without the port: the workers see http://127.0.0.1/...
        self.prepare(["http://127.0.0.1/mcp/", "http://127.0.0.1/api/", f"{base}/mcp/", f"{base}/api/"])
        self.log("== 2 workers + nginx (the guide's block; nothing pinned)")
        env = {**self.env, "MCP_BENCH_REDIS": REDIS}
        procs: list[Proc] = []
        try:
            ports = [R.free_port(), R.free_port()]
            for i, port in enumerate(ports):
                procs.append(self.worker(port, env, f"worker{i}", pin=False))
            conf = self.tmp / "nginx.conf"
            conf.write_text(nginx_config(ports, listen, self.tmp))
            directive = f"daemon off; pid {self.tmp}/nginx.pid; error_log stderr;"
            nginx = Proc([NGINX, "-p", str(self.tmp), "-c", str(conf), "-g", directive], {}, self.tmp / "nginx.log")
            procs.append(nginx)
            nginx.wait_port(listen)
            self.measure("2 workers + nginx", base, pin=False, logs=[p.log for p in procs[:2]])
        finally:
            for proc in reversed(procs):
                proc.stop()

    def measure(self, setup: str, base: str, pin: bool, logs: list[Path]) -> None:
        with httpx.Client(timeout=10) as client:
            sid = R.open_session(client, f"{base}/mcp/", headers={AUTH[0]: AUTH[1]})
            results = [Result(setup, case) for case in CASES]
            for case in CASES:
                session = sid if case.side == "session" else None
                check(client, base, case, session)
                wrk(self.wrk, base, case, 1, session, pin)  # warm-up

            def one(case: Case) -> dict[str, Any]:
                session = sid if case.side == "session" else None
                return wrk(self.wrk, base, case, self.args.seconds, session, pin)

            interleaved(self.args.rounds, list(zip(CASES, results, strict=True)), one)
            for case in CASES:  # still right after the load
                check(client, base, case, sid if case.side == "session" else None)
        drf = results[0].rps
        for result in results:
            self.results.append(result)
            ratio = f"  {result.rps / drf:5.2f}x DRF" if result.case.side != "drf" and drf else ""
            errors = result.error_text
            self.log(
                f"   {result.case.label:<26} {result.rps:8.0f} req/s  p50 {statistics.median(result.p50_ms):6.2f} ms  "
                f"p99 {statistics.median(result.p99_ms):6.2f} ms{ratio}" + (f"  [{errors}]" if errors else "")
            )
        for log in logs:
            found = problems(log)
            if found:
                self.failures.append(f"{setup}: errors in {log}:\n{found}")

    def cleanup(self) -> None:
        R._stop_all()
        if not self.failures:
            shutil.rmtree(self.tmp, ignore_errors=True)


# -- report --------------------------------------------------------------------------------------------------------
def report(bench: Bench, load_before: str, load_after: str) -> str:
    info = R.machine_info()
    args = bench.args
    out = ["# A DRF view as an MCP tool vs the same view (example project, PostgreSQL, OAuth)\n"]
    out.append(
        f"{info['date']} · {info['nproc']} CPUs ({info['cpu']}) · Linux {info['kernel']} · Python {info['python']}  "
    )
    out.append(f"{info['versions']} · {info['wrk']}  ")
    out.append(f"commit {info['commit']}  ")
    out.append(
        f"`wrk -t1 -c{CONNECTIONS}`; {args.rounds} interleaved rounds of {args.seconds} s per case after a 1 s "
        f"warm-up; the guide's uvicorn command and database settings; load average (1/5/15 min) before "
        f"{load_before}, after {load_after}.\n"
    )
    out.append("| setup | side | req/s | p50 ms | p99 ms | ÷ DRF | rounds (req/s) | errors |")
    out.append("|---|---|--:|--:|--:|--:|---|---|")
    for r in bench.results:
        drf = next(d for d in bench.results if d.setup == r.setup and d.case.side == "drf")
        ratio = f"{r.rps / drf.rps:.2f}" if r.case.side != "drf" and drf.rps else ""
        rounds = " ".join(f"{v:.0f}" for v in r.rounds)
        errors = r.error_text or "0"
        out.append(
            f"| {r.setup} | {r.case.label} | {r.rps:,.0f} | {statistics.median(r.p50_ms):.2f} | "
            f"{statistics.median(r.p99_ms):.2f} | {ratio} | {rounds} | {errors} |"
        )
    out.append("")
    out.extend(targets(bench))
    if bench.failures:
        out.append("\n## Failures\n")
        out.extend(f"- {f}" for f in bench.failures)
    return "\n".join(out) + "\n"


def targets(bench: Bench) -> list[str]:
    lines = []
    for r in bench.results:
        if r.case.side == "drf":
            continue
        drf = next(d for d in bench.results if d.setup == r.setup and d.case.side == "drf")
        ratio = r.rps / drf.rps if drf.rps else 0.0
        clean = not r.errors and not drf.errors
        verdict = "PASS" if ratio >= TARGET and clean else "FAIL"
        lines.append(f"- {verdict} {r.setup}, {r.case.label}: {ratio:.2f}x the DRF view (target ≥ {TARGET}x, 0 errors)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=3, help="seconds per case and round (default 3)")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds (default 4)")
    parser.add_argument("--setups", default="1,2", help="1 (one worker), 2 (two workers behind nginx)")
    args = parser.parse_args()
    args.setups = [s.strip() for s in args.setups.split(",") if s.strip()]

    atexit.register(R._stop_all)
    signal.signal(signal.SIGTERM, R._on_signal)
    signal.signal(signal.SIGHUP, R._on_signal)
    bench = Bench(args)
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    started = time.monotonic()
    try:
        bench.run()
    except Exception as exc:  # noqa: BLE001 - reported with what was measured
        bench.failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        bench.cleanup()
    load_after = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    text = report(bench, load_before, load_after)
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text)
    bench.log(f"done in {time.monotonic() - started:.0f} s; written to {RESULTS}")
    failed = bench.failures or any(line.startswith("- FAIL") for line in targets(bench))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
