#!/usr/bin/env python
"""CPU per call of the operations middleware alone (``Limits``, ``Timeouts``), in process, without the noise.

``cpu.py`` measures whole requests, whose 150 µs swamp a few µs of middleware on a busy machine. Here
one prepared ``tools/call`` (an anonymous caller at 127.0.0.1, 2026-07-28) goes through each middleware
around a core that answers at once, ``--calls`` times, best of five rounds of ``time.process_time()``.
Rates are set so high that nothing is refused: what is measured is counting, not refusing.

Usage: ``python benchmarks/operations_cpu.py [--calls 20000]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.settings"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test import override_settings  # noqa: E402

from django_mcp.limits.middleware import Limits  # noqa: E402
from django_mcp.limits.timeouts import Timeouts  # noqa: E402
from django_mcp.middleware import Call  # noqa: E402
from django_mcp.protocol import jsonrpc  # noqa: E402
from django_mcp.runtime.engine import Exchange  # noqa: E402
from django_mcp.server import site  # noqa: E402

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
HIGH = "100000000/minute"
CONFIGS = {
    "no rates": {"user": None, "client": None, "tool": None, "anonymous": None},
    "per address": {"anonymous": HIGH},
    "per address + per tool": {"anonymous": HIGH, "tool": HIGH},
}


async def core(call: Call) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hello"}]}}


def prepared_call() -> Call:
    params = {"name": "echo", "arguments": {"text": "x"}, "_meta": META}
    ex = Exchange(site, jsonrpc.Request(id=1, method="tools/call", params=params), "2026-07-28", None, None, None)
    return Call(ex, ex.user, None, "", "http", address="127.0.0.1")


async def best_us(handler: Any, calls: int) -> float:
    call = prepared_call()
    for _ in range(2000):
        await handler(call)
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(calls):
            await handler(call)
        best = min(best, (time.process_time() - started) / calls * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    print("| RATE_LIMITS | core µs | Limits µs | Timeouts µs | both µs |")
    print("|---|--:|--:|--:|--:|")
    for label, rates in CONFIGS.items():
        with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "RATE_LIMITS": rates}):
            figures = [
                asyncio.run(best_us(handler, args.calls))
                for handler in (core, Limits(core), Timeouts(core), Limits(Timeouts(core)))
            ]
        print(f"| {label} | " + " | ".join(f"{f:.2f}" for f in figures) + " |")


if __name__ == "__main__":
    main()
