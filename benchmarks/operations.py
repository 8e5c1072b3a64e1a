#!/usr/bin/env python
"""What the operations middleware costs: the same tool, same server code, the features off and on, one run.

Each configuration is our server (``tests.settings.asgi:application`` with ``benchmarks.settings``) on uvicorn,
pinned to core 0, with ``wrk`` on core 1 POSTing a 2026-07-28 ``tools/call`` of ``echo`` at 16
connections. The configurations take turns, round after round, so drift in the machine hits them all
alike; the median of each is compared with "off" (``MIDDLEWARE = []``):

* off        no middleware at all: the door alone
* default    ``DEFAULT_MIDDLEWARE`` as a fresh install has it (telemetry off)
* audit      the audit log alone
* limits     the rate limits, task quotas, size cap and timeouts (rates that count but never refuse)
* audit+limits   both: the budget is 10% of req/s
* telemetry  OpenTelemetry on, exporting to a no-op exporter: the budget is 15%

Usage: ``python benchmarks/operations.py [--seconds 5] [--rounds 3] [--only off,audit+limits]``.
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
    Case,
    Server,
    Spec,
    _h,
    _stop_all,
    check_reply,
    ensure_wrk,
    machine_info,
    run_wrk,
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
    parser.add_argument("--seconds", type=int, default=5, help="wrk's run per configuration and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated configurations (off is always run)")
    args = parser.parse_args()
    names = list(CONFIGS) if not args.only else ["off", *(n for n in args.only.split(",") if n != "off")]
    wrk = ensure_wrk()
    atexit.register(_stop_all)
    logdir = Path(tempfile.mkdtemp(prefix="mcp-ops-bench-"))
    base = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchmarks.settings", "PYTHONPATH": str(HERE.parent)}
    rates: dict[str, list[float]] = {name: [] for name in names}
    p99: dict[str, list[float]] = {name: [] for name in names}
    for round_no in range(args.rounds):
        for name in names:
            env = {**base, **CONFIGS[name][0], "MCP_SQLITE": str(logdir / f"{name}.sqlite3")}
            _migrate(env)
            server = Server(Spec(f"ops-{name}", "uvicorn", "tests.settings.asgi:application"), env, logdir)
            server.start()
            try:
                with httpx.Client(timeout=10) as client:
                    check_reply(client, server.url, CASE, None)
                run_wrk(wrk, server.url, CASE, CONNECTIONS, 1, server.port, None, None)  # warm-up
                stats = run_wrk(wrk, server.url, CASE, CONNECTIONS, args.seconds, server.port, None, None)
            finally:
                server.stop()
            problems = server.problems()
            errors = sum(stats[k] for k in ("connect", "read", "write", "status", "timeout"))
            if problems or errors:
                raise SystemExit(f"{name}: errors during the run (a refusal counts):\n{problems}\n{stats}")
            rps = stats["requests"] / (stats["duration_us"] / 1e6)
            rates[name].append(rps)
            p99[name].append(stats["p99_us"] / 1000)
            print(f"round {round_no + 1} {name:>13}: {rps:>8.0f} req/s", flush=True)
    report = _report(names, rates, p99, args)
    print(report)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "operations.md").write_text(report)
    failed = [n for n in names if CONFIGS[n][1] is not None and _ratio(rates, n) < (CONFIGS[n][1] or 0)]
    return 1 if failed else 0


def _migrate(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v0", "--skip-checks"],
        env=env,
        cwd=HERE.parent,
        check=True,
    )


def _ratio(rates: dict[str, list[float]], name: str) -> float:
    return statistics.median(rates[name]) / statistics.median(rates["off"])


def _report(names: list[str], rates: dict[str, list[float]], p99: dict[str, list[float]], args: object) -> str:
    info = machine_info()
    lines = [
        "# What the operations middleware costs",
        "",
        f"`python benchmarks/operations.py` — {info.get('cpu', '')}; uvicorn pinned to one core, wrk to the other;",
        f"a 2026-07-28 `tools/call` of `echo` at {CONNECTIONS} connections; median of the rounds.",
        "",
        "| configuration | req/s (median) | rounds | p99 ms | vs off | budget | |",
        "|---|--:|---|--:|--:|--:|---|",
    ]
    for name in names:
        budget = CONFIGS[name][1]
        ratio = _ratio(rates, name)
        verdict = "" if budget is None else ("PASS" if ratio >= budget else "FAIL")
        runs = ", ".join(f"{r:.0f}" for r in rates[name])
        lines.append(
            f"| {name} | {statistics.median(rates[name]):.0f} | {runs} | {statistics.median(p99[name]):.1f} "
            f"| {ratio:.2f} | {'' if budget is None else f'≥ {budget:.2f}'} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
