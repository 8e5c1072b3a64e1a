#!/usr/bin/env python
"""CPU cost per request, in-process: ours against the floor, independent of machine load.

``run.py`` measures requests per second, which on a shared machine mostly measures the
neighbours. This script counts CPU time instead (``time.process_time()``, this process
only), for the same cases, at two levels:

* ``asgi``: the ASGI application alone. Prebuilt ``http.request`` events are fed to
  ``tests.settings.asgi:application`` (ours) and ``benchmarks.floor:application`` (the floor) and
  the response is collected; nothing else runs. This is the part our code can change.
  Both get the very same request, headers and body (the floor ignores what it does not
  need), so the difference is our processing alone.
* ``uvicorn``: the same, through uvicorn's own HTTP/1.1 protocol (h11) on an in-memory
  transport, keep-alive connections like ``wrk``'s. It adds the server's parsing and
  ASGI plumbing, identical for both, so ``floor ÷ ours`` here estimates the req/s ratio
  of a saturated server (the target is ``>= 0.75``).

Each figure is the best of ``--repeat`` rounds of ``--requests`` requests (after a
warm-up), spread over ``--connections`` concurrent connections; ours and the floor take
turns within each round. The best round is the one least disturbed by other processes
(cache pollution, frequency changes), so the ratios hold to a few percent on a busy
machine, while absolute microseconds still grow with the load.

Usage: ``python benchmarks/cpu.py [--requests 2000] [--repeat 5] [--connections 1,16] [--level asgi,uvicorn]
[--only "json call"] [--floor channels|starlette] [--profile FILE]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.settings"
os.environ.setdefault("MCP_SQLITE", os.path.join(tempfile.mkdtemp(prefix="django-mcp-cpu-"), "cpu.sqlite3"))

import django  # noqa: E402

django.setup()

from benchmarks import payloads as P  # noqa: E402

HOST = (b"host", b"127.0.0.1:8000")
PATH = "/mcp/"
Headers = list[tuple[bytes, bytes]]


def _headers(headers: dict[str, str], sid: str | None = None) -> Headers:
    out = [HOST, *((k.lower().encode(), v.encode()) for k, v in headers.items())]
    if sid:
        out.append((b"mcp-session-id", sid.encode()))
    return out


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    headers: dict[str, str]
    session: bool = False


CASES = (
    Case("json call", P.CALL.replace(P.ID, "1").encode(), P.session_headers(), session=True),
    Case("json list", P.LIST.replace(P.ID, "1").encode(), P.session_headers(), session=True),
    Case("stateless call", P.STATELESS_CALL.replace(P.ID, "1").encode(), P.stateless_headers("tools/call", "echo")),
    Case("stateless list", P.STATELESS_LIST.replace(P.ID, "1").encode(), P.stateless_headers("tools/list")),
    Case(
        "stateless sync call",
        P.STATELESS_SYNC_CALL.replace(P.ID, "1").encode(),
        P.stateless_headers("tools/call", "echo_sync"),
    ),
)


# -- driving an ASGI app directly ---------------------------------------------------------------------------
async def asgi_request(app: Any, headers: Headers, body: bytes) -> tuple[int, bytes, Headers]:
    """One POST through ``app``; returns status, body and response headers."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PATH,
        "raw_path": PATH.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    first = True
    status = 0
    out: list[bytes] = []
    reply_headers: Headers = []

    async def receive() -> dict[str, Any]:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.get_running_loop().create_future()  # the client never leaves
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, reply_headers
        if message["type"] == "http.response.start":
            status = message["status"]
            reply_headers = list(message.get("headers", ()))
        else:
            out.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(out), reply_headers


# -- driving uvicorn's HTTP protocol on an in-memory transport ----------------------------------------------
class MemoryTransport(asyncio.Transport):
    """Collects what uvicorn writes; enough of a socket transport for its HTTP protocol."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class UvicornConnection:
    """One keep-alive connection into uvicorn's h11 protocol, request after request."""

    def __init__(self, app: Any) -> None:
        from uvicorn.config import Config
        from uvicorn.protocols.http.h11_impl import H11Protocol
        from uvicorn.server import ServerState

        config = Config(app, lifespan="off", access_log=False, log_level="warning", http="h11")
        config.load()
        done = self.done = [asyncio.get_running_loop().create_future()]

        class Protocol(H11Protocol):
            def on_response_complete(self) -> None:
                super().on_response_complete()
                if not done[0].done():
                    done[0].set_result(None)

        self.transport = MemoryTransport()
        self.protocol = Protocol(config, ServerState(), {})
        self.protocol.connection_made(self.transport)

    async def request(self, raw: bytes) -> bytes:
        self.done[0] = asyncio.get_running_loop().create_future()
        self.transport.written.clear()
        self.protocol.data_received(raw)
        await self.done[0]
        return bytes(self.transport.written)

    def close(self) -> None:
        self.protocol.connection_lost(None)


def raw_request(headers: Headers, body: bytes) -> bytes:
    lines = [b"POST " + PATH.encode() + b" HTTP/1.1", *(k + b": " + v for k, v in headers)]
    lines.append(b"content-length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


# -- measuring ---------------------------------------------------------------------------------------------
Driver = Callable[[], Coroutine[Any, Any, None]]


async def measure(makers: list[Callable[[], Driver]], requests: int, connections: int, repeat: int) -> list[float]:
    """Best CPU microseconds per request of each app, over ``repeat`` rounds of ``requests`` requests each.

    The apps take turns within every round, so a burst of load on the machine hits both alike.
    """
    apps = [[make() for _ in range(connections)] for make in makers]
    per = max(1, requests // connections)

    async def loop(driver: Driver, n: int) -> None:
        for _ in range(n):
            await driver()

    for drivers in apps:  # warm-up
        await asyncio.gather(*(loop(d, max(20, per // 5)) for d in drivers))
    best = [float("inf")] * len(apps)
    for _ in range(repeat):
        for i, drivers in enumerate(apps):
            gc.collect()
            start = time.process_time()
            await asyncio.gather(*(loop(d, per) for d in drivers))
            best[i] = min(best[i], (time.process_time() - start) / (per * connections))
    return [b * 1e6 for b in best]


def check(name: str, status: int, body: bytes) -> None:
    if status != 200 or b'"result"' not in body or b'"error"' in body:
        raise SystemExit(f"{name}: unexpected reply {status} {body[:300]!r}")


async def open_session(app: Any) -> str:
    status, body, headers = await asgi_request(app, _headers(P.ACCEPT), P.initialize(0).encode())
    check("initialize", status, body)
    sid = dict(headers)[b"mcp-session-id"].decode()
    status, body, _ = await asgi_request(app, _headers(P.session_headers(), sid), P.INITIALIZED.encode())
    if status != 202:
        raise SystemExit(f"notifications/initialized: {status} {body[:300]!r}")
    return sid


class Levels:
    """Driver factories per level, for one app, one request."""

    def __init__(self, app: Any, headers: Headers, body: bytes) -> None:
        self.app, self.headers, self.body = app, headers, body
        self.connections: list[UvicornConnection] = []

    def asgi(self) -> Driver:
        async def drive() -> None:
            await asgi_request(self.app, self.headers, self.body)

        return drive

    def uvicorn(self) -> Driver:
        conn = UvicornConnection(self.app)
        self.connections.append(conn)
        raw = raw_request(self.headers, self.body)

        async def drive() -> None:
            await conn.request(raw)

        return drive

    def close(self) -> None:
        for conn in self.connections:
            conn.close()


async def main(args: argparse.Namespace) -> int:
    from tests.settings.asgi import application as ours_app

    if args.floor == "starlette":
        from benchmarks.starlette_floor import app as floor_app
    else:
        from benchmarks.floor import application as floor_app

    levels = [level.strip() for level in args.level.split(",") if level.strip()]
    conns = [int(c) for c in args.connections.split(",")]
    only = [o.strip() for o in (args.only or "").split(",") if o.strip()]
    sid = await open_session(ours_app)
    rows: list[tuple[str, str, int, float, float]] = []
    for case in CASES:
        if only and case.name not in only:
            continue
        ours_headers = _headers(case.headers, sid if case.session else None)
        status, body, _ = await asgi_request(ours_app, ours_headers, case.body)
        check(f"ours {case.name}", status, body)
        for level in levels:
            for c in conns:
                ours = Levels(ours_app, ours_headers, case.body)
                floor = Levels(floor_app, ours_headers, case.body)
                ours_us, floor_us = await measure(
                    [getattr(ours, level), getattr(floor, level)], args.requests, c, args.repeat
                )
                ours.close()
                floor.close()
                rows.append((case.name, level, c, ours_us, floor_us))
                print(
                    f"{case.name:15} {level:8} c{c:<3} ours {ours_us:7.1f} µs  floor {floor_us:6.1f} µs  "
                    f"ours÷floor {ours_us / floor_us:.2f}  floor÷ours {floor_us / ours_us:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
    print("\n| case | level | conns | ours µs | floor µs | ours ÷ floor | floor ÷ ours |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for name, level, c, ours_us, floor_us in rows:
        ratios = f"{ours_us / floor_us:.2f} | {floor_us / ours_us:.2f}"
        print(f"| {name} | {level} | {c} | {ours_us:.1f} | {floor_us:.1f} | {ratios} |")
    if args.profile:
        await profile(args, ours_app, sid)
    return 0


async def profile(args: argparse.Namespace, app: Any, sid: str) -> None:
    """cProfile ``--requests`` of the first selected case at the ASGI level into ``--profile``."""
    import cProfile

    case = next(c for c in CASES if not args.only or c.name in args.only)
    headers = _headers(case.headers, sid if case.session else None)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.requests):
        await asgi_request(app, headers, case.body)
    profiler.disable()
    profiler.dump_stats(args.profile)
    print(f"profile of {case.name} written to {args.profile}", file=sys.stderr)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--connections", default="1,16")
    parser.add_argument("--level", default="asgi,uvicorn")
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument(
        "--floor",
        choices=("channels", "starlette"),
        default="channels",
        help="the floor: a bare Channels consumer (default) or the bare Starlette endpoint run.py compares with",
    )
    parser.add_argument("--profile", help="write a cProfile of the first selected case here")
    return parser.parse_args()


if __name__ == "__main__":
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    sys.exit(asyncio.run(main(parse())))
