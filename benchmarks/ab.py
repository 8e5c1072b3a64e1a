#!/usr/bin/env python
"""Two versions of ours side by side under ``wrk``: requests per second, CPU and context switches per request.

Why: a change on the request path is judged against the code before it, and on this shared machine two runs a minute
apart differ more than most changes do. Here both servers run at once (uvicorn, asyncio + h11; or ``--server
daphne`` or ``uvicorn+uvloop``; each pinned to core 0; ``wrk -t1`` on core 1) and take turns, round after round, so
a slow moment hits both; and besides req/s each round reads the server's own CPU time and context switches per
request from ``/proc`` (``benchmarks.procstat``), which the neighbours' load moves far less. In-process CPU
(``cpu.py``) is not enough for changes that move work between threads: on 2026-11-28 a change to the sync pool's
admission cut a sync call's CPU by ~15 µs in process and, served, lost 2-15 % req/s and spent more CPU, not less.

A and B are each a checkout (``--a-dir``/``--b-dir``: a ``git worktree`` of the commit before, say) and
environment settings (``--a-env``/``--b-env KEY=VALUE``, once per variable: ``MCP_ATOMIC_TOOL_CALLS=0``,
``MCP_BENCH_MIDDLEWARE=none``..., what ``benchmarks/settings.py`` and ``tests/settings/__init__.py`` read). Both
run with this checkout's virtualenv. An A/A run (no options) shows the noise: 0.94x req/s and 1.06x CPU
in 5 rounds of 3 s on 2026-11-28.

Usage: ``python benchmarks/ab.py [--a-dir DIR] [--b-dir DIR] [--a-env K=V ...] [--b-env K=V ...]
[--case "stateless sync call"] [--rounds 6] [--seconds 4] [--connections 16] [--server daphne|uvicorn+uvloop]``
"""

from __future__ import annotations

import argparse
import atexit
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.run import (  # noqa: E402
    OURS_CASES,
    WARMUP_SECONDS,
    Case,
    Server,
    Spec,
    _stop_all,
    ensure_wrk,
    migrate,
    ours_env,
    run_wrk,
    serve,
)


@dataclass
class Side:
    name: str
    server: Server
    rps: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)
    switches: list[float] = field(default_factory=list)
    errors: int = 0

    def line(self, i: int) -> str:
        return (
            f"{self.name}: {self.rps[i]:8,.0f} req/s  {self.cpu_us[i]:6.0f} µs CPU  "
            f"{self.switches[i]:5.2f} switches a request"
        )

    def summary(self) -> str:
        def med(values: list[float]) -> float:
            return statistics.median(values) if values else float("nan")

        return (
            f"{self.name}: median {med(self.rps):,.0f} req/s (min {min(self.rps, default=0):,.0f}, max "
            f"{max(self.rps, default=0):,.0f}), {med(self.cpu_us):.0f} µs CPU, {med(self.switches):.2f} "
            f"switches a request; errors {self.errors}"
        )


def parse_env(items: list[str]) -> tuple[tuple[str, str], ...]:
    pairs = [item.split("=", 1) for item in items]
    if any(len(p) != 2 for p in pairs):
        raise SystemExit(f"--a-env / --b-env take KEY=VALUE (once per variable): {items!r}")
    return tuple((k.strip(), v) for k, v in pairs)


def start(name: str, directory: Path, env: tuple[tuple[str, str], ...], logdir: Path, kind: str = "uvicorn") -> Side:
    base = ours_env(directory, logdir / f"{name}.sqlite3")
    # The ASGI application moved with the settings into tests/settings/; an older checkout has it at tests/asgi.py.
    moved = (directory / "tests/settings/asgi.py").exists()
    app = "tests.settings.asgi:application" if moved else "tests.asgi:application"
    server = Server(Spec("ours", kind, app, env=env), base, logdir)
    server.log = logdir / f"{name}.log"
    server.cwd = directory
    migrate({**base, **dict(env)}, directory)
    server.start()
    return Side(name, server)


def measure(side: Side, case: Case, connections: int, seconds: int, wrk: str) -> None:
    server = side.server
    served = serve(wrk, server, server.url, case, connections, seconds, None, None)
    if server.process is None or server.process.poll() is not None:
        raise SystemExit(f"{side.name}: the server exited ({server.log})")
    side.rps.append(served.rps)
    side.cpu_us.append(served.cpu_us)
    side.switches.append(served.switches)
    side.errors += sum(served.errors.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a-dir", type=Path, default=HERE.parent)
    parser.add_argument("--b-dir", type=Path, default=HERE.parent)
    parser.add_argument("--a-env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--b-env", action="append", default=[], metavar="KEY=VALUE")
    stateless = [c.name for c in OURS_CASES if not c.session]
    parser.add_argument("--case", default="stateless sync call", choices=stateless)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--server", default="uvicorn", choices=("uvicorn", "uvicorn+uvloop", "daphne"))
    args = parser.parse_args()
    if args.a_dir.resolve() == args.b_dir.resolve() and args.a_env == args.b_env:
        print("A and B are the same code and settings: an A/A run (the noise)", file=sys.stderr)

    case = next(c for c in OURS_CASES if c.name == args.case)
    wrk = ensure_wrk()
    atexit.register(_stop_all)
    logdir = Path(tempfile.mkdtemp(prefix="django-mcp-ab-"))
    sides = [
        start("A", args.a_dir.resolve(), parse_env(args.a_env), logdir, args.server),
        start("B", args.b_dir.resolve(), parse_env(args.b_env), logdir, args.server),
    ]
    try:
        for side in sides:  # warm-up, not counted
            run_wrk(wrk, side.server.url, case, args.connections, WARMUP_SECONDS, side.server.port, None, None)
        for i in range(args.rounds):
            for side in sides if i % 2 == 0 else reversed(sides):
                measure(side, case, args.connections, args.seconds, wrk)
            print(f"round {i + 1}:  " + "  |  ".join(side.line(i) for side in sides), flush=True)
    finally:
        for side in sides:
            side.server.stop()
    print(f"\n{case.name}, {args.connections} connections, {args.rounds} rounds of {args.seconds} s (logs: {logdir})")
    for side in sides:
        print(side.summary())
    a, b = sides
    print(
        f"B ÷ A: req/s {statistics.median(b.rps) / statistics.median(a.rps):.3f}, "
        f"CPU a request {statistics.median(b.cpu_us) / statistics.median(a.cpu_us):.3f}"
    )
    return 1 if a.errors or b.errors else 0


if __name__ == "__main__":
    sys.exit(main())
