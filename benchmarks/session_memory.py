"""Memory per idle session in ``django_mcp.state.sessions.store``, measured in-process with tracemalloc.

Run through the Django shell (``run.py`` does this)::

    DJANGO_SETTINGS_MODULE=benchmarks.settings python -m django shell -c \
        "from benchmarks.session_memory import main; main()"

Sessions are created through ``store.create`` (the path ``initialize`` takes, database row
included) from freshly parsed ``initialize`` params, then marked initialized as
``notifications/initialized`` would. Prints one ``SESSION_MEMORY {...}`` JSON line.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks.payloads import initialize

ROOT = Path(__file__).resolve().parent.parent


def _short(filename: str) -> str:
    """``django/db/models/manager.py``, ``django_mcp/state/sessions.py``, ``json/decoder.py``: short paths."""
    for marker in ("site-packages/", f"{ROOT}/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    match = re.search(r"/lib/python3\.\d+/(.*)$", filename)
    return match.group(1) if match else filename


async def _create(count: int) -> list[str]:
    from django_mcp.state.sessions import store

    ids = []
    for i in range(count):
        params = json.loads(initialize(i))["params"]
        state = await store.create(params["protocolVersion"], params["clientInfo"], params["capabilities"], None)
        state.initialized = True
        ids.append(state.id)
    return ids


async def _measure(count: int) -> dict[str, Any]:
    from django_mcp.state.sessions import store

    await _create(200)  # warm up: imports, query compilation, connection
    gc.collect()
    tracemalloc.start()
    before_len = len(store)
    gc.collect()
    first = tracemalloc.take_snapshot()
    ids = await _create(count)
    gc.collect()
    second = tracemalloc.take_snapshot()
    tracemalloc.stop()
    del ids
    stats = second.compare_to(first, "filename")
    total = sum(s.size_diff for s in stats)
    top = [{"file": _short(s.traceback[0].filename), "bytes": s.size_diff} for s in stats[:6] if s.size_diff]
    return {
        "sessions": len(store) - before_len,
        "bytes_total": total,
        "kib_per_session": total / count / 1024,
        "top": top,
    }


def main() -> None:
    count = int(os.environ.get("BENCH_SESSIONS", "5000"))
    result = asyncio.run(_measure(count))
    print("SESSION_MEMORY " + json.dumps(result))
