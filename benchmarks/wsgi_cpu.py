#!/usr/bin/env python
"""CPU cost per request in WSGI mode, in process: the WSGI application called with prebuilt environs.

``wsgi_peers.py`` measures requests per second under gunicorn, where gunicorn's accept and
parsing and the client's threads share the two cores with the application. This script calls
``benchmarks.wsgi:application`` (``benchmarks.settings_wsgi``: ``django_mcp.wsgi``'s wiring,
``CONN_MAX_AGE = 60`` as the deployment guide advises for sync workers) directly, on one thread
as a sync worker runs it, and counts the CPU time of this process per request
(``time.process_time()``, every thread: a hop to a bookkeeping thread counts) for

* ``stateless call``: a 2026-07-28 ``tools/call`` of ``echo``;
* ``session call``: the same call on a 2025-11-25 session (``initialize`` first);
* ``view call``: the stateless call through Django's own handler (``benchmarks.wsgi:view_application``), the
  endpoint's view in the full request cycle;
* ``django view``: the floor, a plain sync Django view doing the same JSON work (``benchmarks/views.py``)
  in the same project, settings and middleware: what any Django view costs a WSGI worker;

Each figure is the best of ``--repeat`` rounds of ``--requests`` calls, the cases taking turns
within each round, so their ratio holds on a busy machine where absolute figures do not.
``--profile FILE`` writes a cProfile of one case.

Use ``--pin`` (``make bench-wsgi-cpu`` does). Unpinned, this loop never blocks, so the audit
writer's thread, woken by each GIL release of the loop's ``epoll``, waits for the GIL through
thousands of futile wake-ups per batch: the default middleware then read ~60 µs a call instead
of ~37. A gunicorn worker blocks between requests, and there the writer thread costs 7-8 µs a
call with 0.03 context switches (its threads' own ``/proc`` counters under ``wrk``).

Usage: ``python benchmarks/wsgi_cpu.py [--requests 2000] [--repeat 5] [--only "session call"]
[--profile FILE] [--pin]``
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.settings_wsgi"
os.environ.setdefault("MCP_SQLITE", os.path.join(tempfile.mkdtemp(prefix="django-mcp-wsgi-cpu-"), "cpu.sqlite3"))

from benchmarks.wsgi_peers import STATELESS_HEADERS, call, initialize  # noqa: E402

PATH = "/mcp/"


def environ(body: bytes, headers: dict[str, str], path: str = PATH) -> dict[str, Any]:
    """A WSGI environ as gunicorn builds it for a POST of ``body``."""
    env: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "40000",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_ACCEPT": "application/json, text/event-stream",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.input": io.BytesIO(body),
    }
    for key, value in headers.items():
        env["HTTP_" + key.upper().replace("-", "_")] = value
    return env


def driver(app: Callable[..., Any], body: bytes, headers: dict[str, str], path: str = PATH) -> Callable[[], bytes]:
    """One request per call, its reply's body returned (the iterable consumed and closed as a server does)."""
    status: list[str] = []

    def start_response(s: str, h: list[tuple[str, str]], exc_info: Any = None) -> None:
        status.append(s)

    def run() -> bytes:
        status.clear()
        result = app(environ(body, headers, path), start_response)
        try:
            data = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if not status or not status[0].startswith("200"):
            raise SystemExit(f"{path}: {status} {data[:300]!r}")
        return data

    return run


def session_headers(app: Callable[..., Any]) -> dict[str, str]:
    """A 2025-11-25 session opened as a client opens one: ``initialize``, then ``notifications/initialized``."""
    captured: dict[str, str] = {}

    def start_response(s: str, h: list[tuple[str, str]], exc_info: Any = None) -> None:
        captured.update((k.lower(), v) for k, v in h)

    b"".join(app(environ(json.dumps(initialize("2025-11-25")).encode(), {}), start_response))
    headers = {"Mcp-Session-Id": captured["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    b"".join(app(environ(note, headers), start_response))
    return headers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--profile", help="write a cProfile of the first case to this file")
    parser.add_argument("--pin", action="store_true", help="run on one CPU core (threads included)")
    args = parser.parse_args()
    if args.pin:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from benchmarks.wsgi import application as app
    from benchmarks.wsgi import view_application

    stateless = json.dumps(call(stateless=True)).encode()
    cases = {
        "stateless call": driver(app, stateless, STATELESS_HEADERS),
        "session call": driver(app, json.dumps(call()).encode(), session_headers(app)),
        # The same view run by Django's own handler: URL resolving, middleware, request signals.
        "view call": driver(view_application, stateless, STATELESS_HEADERS),
        # The floor: a plain Django view doing the same JSON work (benchmarks/views.py), same project and settings.
        "django view": driver(app, stateless, STATELESS_HEADERS, "/sync-view/"),
    }
    only = [o.strip() for o in (args.only or "").split(",") if o.strip()]
    cases = {name: run for name, run in cases.items() if not only or name in only}
    for name, run in cases.items():
        reply = run()
        text = json.loads(reply)["result"]["content"][0]["text"]
        assert text == ("hello" if name == "django view" else "echo-me"), (name, reply[:300])  # the floor's fixed reply

    if args.profile:
        name, run = next(iter(cases.items()))
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.requests):
            run()
        profiler.disable()
        profiler.dump_stats(args.profile)
        print(f"profile of {name} written to {args.profile}", file=sys.stderr)
        return 0

    best = dict.fromkeys(cases, float("inf"))
    for round_ in range(args.repeat + 1):  # the first round warms up
        for name, run in cases.items():
            gc.collect()
            start = time.process_time()
            for _ in range(args.requests):
                run()
            spent = (time.process_time() - start) / args.requests
            if round_:
                best[name] = min(best[name], spent)
    print("| case | µs of CPU per request (best round) |")
    print("|---|--:|")
    for name, us in best.items():
        print(f"| {name} | {us * 1e6:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
