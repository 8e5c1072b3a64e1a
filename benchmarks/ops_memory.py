#!/usr/bin/env python
"""Worker memory per cached idle session and per held GET SSE stream, by RSS on a real server.

Starts one worker (daphne or uvicorn) on ``tests.settings.asgi`` with SQLite and the in-memory
layer, reads its ``VmRSS`` from ``/proc``, opens ``--sessions`` sessions
(``initialize`` over HTTP), reads it again, then holds ``--streams`` GET streams open
(raw sockets, one per session) and reads it once more. Prints one ``OPS_MEMORY {...}``
JSON line; docs/deployment-ops.md quotes it. Not a timed test: run it by hand.

Usage: ``python benchmarks/ops_memory.py [--server daphne|uvicorn] [--sessions 2000] [--streams 300]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.production.ops import start_uvicorn  # noqa: E402
from tests.production.test_cleanup_health import _open_sessions  # noqa: E402
from tests.support.servers import server_env, start_server  # noqa: E402


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def settle(pid: int) -> int:
    """RSS after the worker has been idle a moment (the last responses freed)."""
    time.sleep(1.0)
    return rss_kib(pid)


def hold_stream(port: int, sid: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    request = (
        f"GET /mcp/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
        f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
    )
    s.sendall(request.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            raise RuntimeError("stream closed")
        head += chunk
    assert head.startswith(b"HTTP/1.1 200"), head[:100]
    return s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="daphne", choices=["daphne", "uvicorn"])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--streams", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        env = server_env(tmp, db="sqlite", layer="memory", MCP_SSE_KEEPALIVE="600")
        start = start_server if args.server == "daphne" else start_uvicorn
        server = start(env, tmp / "server.log")
        try:
            pid = server.process.pid
            asyncio.run(_open_sessions(server.url, 200))  # warm up
            base = settle(pid)
            ids = asyncio.run(_open_sessions(server.url, args.sessions))
            with_sessions = settle(pid)
            socks = [hold_stream(server.port, sid) for sid in ids[: args.streams]]
            with_streams = settle(pid)
            result = {
                "server": args.server,
                "sessions": args.sessions,
                "streams": len(socks),
                "rss_base_kib": base,
                "kib_per_cached_session": round((with_sessions - base) / args.sessions, 2),
                "kib_per_held_stream": round((with_streams - with_sessions) / len(socks), 2),
            }
            for s in socks:
                s.close()
            print("OPS_MEMORY " + json.dumps(result))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
