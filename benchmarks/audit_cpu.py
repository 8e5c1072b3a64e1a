#!/usr/bin/env python
"""What the audit log costs a call, in CPU time, in process (``cpu.py``'s method).

The same ASGI application (``tests.settings.asgi``) answers the same ``tools/call`` with
``DJANGO_MCP["MIDDLEWARE"]`` set to nothing and to the audit middleware, in turns within
each round; each figure is the best round's CPU microseconds per request (``process_time``:
user and system time of every thread of this process). The audit rounds run with the real
background writer (its thread writes into SQLite while the calls run, every
``AUDIT_FLUSH_INTERVAL`` or ``AUDIT_BATCH_SIZE`` records), and each ends once the writer has
written everything: the figure holds the whole cost, the record built on the request path,
the INSERTs off it, and the thread switches between the two. ``--pin`` runs the process on
one core, as ``run.py`` pins a server. The ``uvicorn`` level adds uvicorn's HTTP parsing.

Usage: ``python benchmarks/audit_cpu.py [--requests 4000] [--repeat 5] [--connections 1,16]
[--level asgi,uvicorn] [--only "json call"] [--pin]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import cpu  # sets up Django with benchmarks.settings

MODES = {
    "no middleware": [],
    "audit": ["django_mcp.audit.middleware.AuditMiddleware"],
}


async def measure(
    levels: dict[str, cpu.Levels], level: str, requests: int, connections: int, repeat: int
) -> dict[str, float]:
    from django.conf import settings
    from django.test import override_settings

    from django_mcp.audit import middleware as audit
    from django_mcp.models import MCPCallRecord

    per = max(1, requests // connections)
    best = dict.fromkeys(MODES, float("inf"))
    written = 0

    async def run(mode: str, n: int) -> None:
        nonlocal written
        drivers = [getattr(levels[mode], level)() for _ in range(connections)]

        async def loop(driver: Any) -> None:
            for _ in range(n):
                await driver()

        await asyncio.gather(*(loop(d) for d in drivers))
        if MODES[mode]:
            written += len(audit.writer)
            audit.writer.wake()
            while len(audit.writer):  # the thread writes the rest (sleeping costs no CPU)
                await asyncio.sleep(0.002)
            # It takes its last batch out of the buffer before writing it: wait for that write too
            # (``flush`` holds the writer's lock; nothing is left for it to write).
            await asyncio.to_thread(audit.writer.flush)

    for round_ in range(repeat + 1):  # the first round warms up
        for mode, middleware in MODES.items():
            overrides = {**settings.DJANGO_MCP, "MIDDLEWARE": middleware}
            with override_settings(DJANGO_MCP=overrides):
                gc.collect()
                start = time.process_time()
                await run(mode, per if round_ else max(20, per // 5))
                spent = (time.process_time() - start) / ((per if round_ else max(20, per // 5)) * connections)
                if round_:
                    best[mode] = min(best[mode], spent)
    await asyncio.to_thread(lambda: MCPCallRecord.objects.all().delete())
    assert written > 0, "the audit rounds wrote no record"
    return {mode: us * 1e6 for mode, us in best.items()}


async def main(args: argparse.Namespace) -> int:
    from tests.settings.asgi import application as app

    if args.pin:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    only = [o.strip() for o in (args.only or "").split(",") if o.strip()]
    sid = await cpu.open_session(app)
    rows = []
    for case in cpu.CASES:
        if (only and case.name not in only) or "call" not in case.name:
            continue
        headers = cpu._headers(case.headers, sid if case.session else None)
        status, body, _ = await cpu.asgi_request(app, headers, case.body)
        cpu.check(case.name, status, body)
        for level in args.level.split(","):
            for c in (int(x) for x in args.connections.split(",")):
                levels = {mode: cpu.Levels(app, headers, case.body) for mode in MODES}
                figures = await measure(levels, level, args.requests, c, args.repeat)
                for each in levels.values():
                    each.close()
                bare, audited = figures["no middleware"], figures["audit"]
                rows.append((case.name, level, c, bare, audited))
                print(
                    f"{case.name:15} {level:8} c{c:<3} none {bare:7.1f} µs  audit {audited:7.1f} µs  "
                    f"+{audited - bare:5.1f} µs  +{100 * (audited - bare) / bare:4.1f}%",
                    file=sys.stderr,
                    flush=True,
                )
    print("\n| case | level | conns | no middleware µs | audit µs | extra µs | extra % |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for name, level, c, bare, audited in rows:
        extra = audited - bare
        print(f"| {name} | {level} | {c} | {bare:.1f} | {audited:.1f} | {extra:.1f} | {100 * extra / bare:.1f} |")
    return 0


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--connections", default="1,16")
    parser.add_argument("--level", default="asgi,uvicorn")
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--pin", action="store_true", help="run on one CPU core (threads included)")
    return parser.parse_args()


if __name__ == "__main__":
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    sys.exit(asyncio.run(main(parse())))
