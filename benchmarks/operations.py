#!/usr/bin/env python
"""What the operations middleware costs: the same tool, same server code, the features off and on, side by side.

Each configuration is our server (``tests.settings.asgi:application`` with ``benchmarks.settings``) on uvicorn,
pinned to core 0, with ``wrk`` on core 1 POSTing a 2026-07-28 ``tools/call`` of ``echo`` at 16
connections. The servers are all up at once and loaded in turn, round after round, the order rotating, so a
slow minute of the machine hits every configuration alike (an idle server costs the loaded one nothing: see
``run.py``'s side-by-side phase). The median of each is compared with "off" (``MIDDLEWARE = []``), in
requests a second and in the server's own CPU time a request (read from ``/proc``, which the neighbours'
load moves far less):

* off        no middleware at all: the door alone
* default    ``DEFAULT_MIDDLEWARE`` as a fresh install has it (telemetry off)
* audit      the audit log alone
* limits     the rate limits, task quotas, size cap and timeouts (rates that count but never refuse)
* audit+limits   both: the budget is 10% of req/s
* telemetry  OpenTelemetry on, exporting to a no-op exporter: the budget is 15%

Usage: ``python benchmarks/operations.py [--seconds 3] [--rounds 5] [--only off,audit+limits]``.
The table goes to stdout and ``benchmarks/results/operations.md``.
"""

from __future__ import annotations

import argparse
import atexit
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks import payloads as P  # noqa: E402
from benchmarks.run import (  # noqa: E402
    RESULTS_DIR,
    WARMUP_SECONDS,
    Case,
    Served,
    Server,
    Spec,
    _h,
    _stop_all,
    check_reply,
    ensure_wrk,
    machine_info,
    run_wrk,
    serve,
)

CASE = Case("stateless call", "call", P.STATELESS_CALL, _h(P.stateless_headers("tools/call", "echo")))
CONNECTIONS = 16
#: Rates that count every call but never refuse one (a benchmark is one address at thousands of calls a second).
COUNTING = '{"user": "1000000000/minute", "anonymous": "1000000000/minute", "tool": "1000000000/minute"}'
#: Each configuration: the environment ``benchmarks/settings.py`` reads, and the least req/s ratio to "off".
CONFIGS: dict[str, tuple[dict[str, str], float | None]] = {
    "off": ({"MCP_BENCH_MIDDLEWARE": "none"}, None),
    "default": ({"MCP_BENCH_MIDDLEWARE": "default", "MCP_RATE_LIMITS": COUNTING}, None),
    "audit": ({"MCP_BENCH_MIDDLEWARE": "audit"}, None),
    "limits": ({"MCP_BENCH_MIDDLEWARE": "limits,timeouts", "MCP_RATE_LIMITS": COUNTING}, None),
    "audit+limits": ({"MCP_BENCH_MIDDLEWARE": "audit,limits,timeouts", "MCP_RATE_LIMITS": COUNTING}, 0.90),
    "telemetry": (
        {
            "MCP_BENCH_MIDDLEWARE": "telemetry",
            "DJANGO_SETTINGS_MODULE": "benchmarks.settings_otel",  # the SDK exporting to nowhere
            "MCP_BENCH_TELEMETRY": "on",
        },
        0.85,
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=3, help="wrk's run per configuration and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", help="comma-separated configurations (off is always run)")
    args = parser.parse_args()
    names = list(CONFIGS) if not args.only else ["off", *(n for n in args.only.split(",") if n != "off")]
    wrk = ensure_wrk()
    atexit.register(_stop_all)
    logdir = Path(tempfile.mkdtemp(prefix="mcp-ops-bench-"))
    base = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchmarks.settings", "PYTHONPATH": str(HERE.parent)}
    servers: dict[str, Server] = {}
    measured: dict[str, list[Served]] = {name: [] for name in names}
    try:
        for name in names:  # every configuration up before any is measured
            env = {**base, **CONFIGS[name][0], "MCP_SQLITE": str(logdir / f"{name}.sqlite3")}
            _migrate(env)
            server = servers[name] = Server(
                Spec(f"ops-{name}", "uvicorn", "tests.settings.asgi:application"), env, logdir
            )
            server.start()
            with httpx.Client(timeout=10) as client:
                check_reply(client, server.url, CASE, None)
        for name in names:  # warm-up, not counted
            run_wrk(wrk, servers[name].url, CASE, CONNECTIONS, WARMUP_SECONDS, servers[name].port, None, None)
        for round_no in range(args.rounds):
            shift = round_no % len(names)
            for name in names[shift:] + names[:shift]:
                server = servers[name]
                served = serve(wrk, server, server.url, CASE, CONNECTIONS, args.seconds, None, None)
                if served.errors or server.process is None or server.process.poll() is not None:
                    raise SystemExit(
                        f"{name}: errors during the run (a refusal counts):\n{server.problems()}\n{served.stats}"
                    )
                measured[name].append(served)
            print(
                f"round {round_no + 1}: "
                + "  ".join(f"{n} {measured[n][-1].rps:,.0f} req/s {measured[n][-1].cpu_us:.0f} µs" for n in names),
                flush=True,
            )
    finally:
        for server in servers.values():
            server.stop()
    problems = "".join(server.problems() for server in servers.values())
    if problems:
        raise SystemExit(f"errors in the servers' logs:\n{problems}")
    report = _report(names, measured, args)
    print(report)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "operations.md").write_text(report)
    failed = [n for n in names if CONFIGS[n][1] is not None and _ratio(measured, n) < (CONFIGS[n][1] or 0)]
    return 1 if failed else 0


def _migrate(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v0", "--skip-checks"],
        env=env,
        cwd=HERE.parent,
        check=True,
    )


def _median(measured: dict[str, list[Served]], name: str, what: str) -> float:
    return statistics.median(getattr(served, what) for served in measured[name])


def _ratio(measured: dict[str, list[Served]], name: str) -> float:
    return _median(measured, name, "rps") / _median(measured, "off", "rps")


def _report(names: list[str], measured: dict[str, list[Served]], args: argparse.Namespace) -> str:
    info = machine_info()
    off_cpu = _median(measured, "off", "cpu_us")
    lines = [
        "# What the operations middleware costs",
        "",
        f"`python benchmarks/operations.py` — {info.get('cpu', '')}; uvicorn pinned to one core, wrk to the other;",
        f"a 2026-07-28 `tools/call` of `echo` at {CONNECTIONS} connections; the servers up at once and loaded in",
        f"turn, {args.rounds} rounds of {args.seconds} s; medians of the rounds.",
        "",
        "| configuration | req/s (median) | rounds | server CPU µs a request | added to off | p99 ms | vs off "
        "| budget | |",
        "|---|--:|---|--:|--:|--:|--:|--:|---|",
    ]
    for name in names:
        budget = CONFIGS[name][1]
        ratio = _ratio(measured, name)
        verdict = "" if budget is None else ("PASS" if ratio >= budget else "FAIL")
        runs = ", ".join(f"{served.rps:.0f}" for served in measured[name])
        cpu = _median(measured, name, "cpu_us")
        p99 = statistics.median(served.stats["p99_us"] / 1000 for served in measured[name])
        lines.append(
            f"| {name} | {_median(measured, name, 'rps'):.0f} | {runs} | {cpu:.0f} | {cpu - off_cpu:+.0f} | {p99:.1f} "
            f"| {ratio:.2f} | {'' if budget is None else f'≥ {budget:.2f}'} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
