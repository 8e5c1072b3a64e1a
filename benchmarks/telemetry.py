#!/usr/bin/env python
"""CPU cost of telemetry per request, in process: no middleware, ``TELEMETRY`` off, ``TELEMETRY`` on.

The same requests as ``cpu.py`` (its cases and drivers), against ``tests.settings.asgi:application`` under
three settings that take turns within every round:

* ``none``: ``MIDDLEWARE = []``, the door alone (what the package cost before the middleware).
* ``off``: the default ``MIDDLEWARE`` with ``TELEMETRY = False``: the telemetry middleware raises
  ``MiddlewareNotUsed`` and is left out, so this should match ``none``.
* ``on``: ``TELEMETRY = True`` with the OpenTelemetry SDK set up as in production, exporting to a
  no-op exporter: a ``BatchSpanProcessor`` (its thread's CPU counts: ``process_time`` is the whole
  process) and a ``MeterProvider`` whose periodic reader exports every second.

At the ``uvicorn`` level, ``off ÷ on`` estimates the req/s kept by a saturated server with telemetry
on (the budget: at least 0.85). Each figure is the best of ``--repeat`` rounds. ``--no-sdk`` leaves
the providers unset (the API's no-op tracer and meter): what this package's own code costs.

``--rps`` measures requests per second instead, as ``run.py`` does: real daphne and uvicorn servers
(``benchmarks.settings_otel``, telemetry off and on in turns) under ``wrk``, 16 connections.

``--sdk-floor`` measures the OpenTelemetry SDK alone doing what one request asks of it, with the
span and measurement attributes a real request records (``sdk_floor``).

Usage: ``python benchmarks/telemetry.py [--requests 2000] [--repeat 5] [--connections 1]
[--level asgi,uvicorn] [--only "json call,stateless call"] [--sample 0.1 | --no-sdk]
[--rps [--seconds 5] [--servers daphne,uvicorn]] [--sdk-floor]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import cpu
from benchmarks.otel_noop import configure_sdk


def modes() -> dict[str, Any]:
    from django.conf import settings
    from django.test import override_settings

    base = dict(settings.DJANGO_MCP)
    return {
        "none": override_settings(DJANGO_MCP={**base, "MIDDLEWARE": []}),
        "off": override_settings(DJANGO_MCP={**base, "TELEMETRY": False}),
        "on": override_settings(DJANGO_MCP={**base, "TELEMETRY": True}),
    }


async def measure(case: cpu.Case, sid: str, level: str, connections: int, args: argparse.Namespace) -> dict[str, float]:
    from tests.settings.asgi import application

    headers = cpu._headers(case.headers, sid if case.session else None)
    levels = cpu.Levels(application, headers, case.body)
    drivers = [getattr(levels, level)() for _ in range(connections)]
    per = max(1, args.requests // connections)
    best: dict[str, float] = {}

    async def run(n: int) -> None:
        async def loop(driver: Any) -> None:
            for _ in range(n):
                await driver()

        await asyncio.gather(*(loop(d) for d in drivers))

    try:
        for name, override in modes().items():  # warm-up, and a check that each mode answers
            with override:
                status, body, _ = await cpu.asgi_request(application, headers, case.body)
                cpu.check(f"{name} {case.name}", status, body)
                await run(max(20, per // 5))
        for _ in range(args.repeat):
            for name, override in modes().items():
                with override:
                    gc.collect()
                    start = time.process_time()
                    await run(per)
                    spent = (time.process_time() - start) / (per * connections) * 1e6
                best[name] = min(best.get(name, float("inf")), spent)
    finally:
        levels.close()
    return best


async def main(args: argparse.Namespace) -> int:
    from tests.settings.asgi import application

    if not args.no_sdk:
        configure_sdk(args.sample)
    sid = await cpu.open_session(application)
    only = [o.strip() for o in (args.only or "").split(",") if o.strip()]
    rows = []
    for case in cpu.CASES:
        if only and case.name not in only:
            continue
        for level in (lvl.strip() for lvl in args.level.split(",") if lvl.strip()):
            for c in (int(n) for n in args.connections.split(",")):
                best = await measure(case, sid, level, c, args)
                rows.append((case.name, level, c, best))
                print(
                    f"{case.name:15} {level:8} c{c:<3} none {best['none']:6.1f} µs  off {best['off']:6.1f} µs  "
                    f"on {best['on']:6.1f} µs  off÷on {best['off'] / best['on']:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
    print("\n| case | level | conns | none µs | off µs | on µs | off - none µs | on - off µs | off ÷ on |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, level, c, b in rows:
        print(
            f"| {name} | {level} | {c} | {b['none']:.1f} | {b['off']:.1f} | {b['on']:.1f} | "
            f"{b['off'] - b['none']:+.1f} | {b['on'] - b['off']:+.1f} | {b['off'] / b['on']:.2f} |"
        )
    return 0


def rps(args: argparse.Namespace) -> int:
    """req/s of real servers with telemetry off and on, taking turns; the best of ``--repeat`` runs each."""
    from benchmarks import run

    tmp = Path(tempfile.mkdtemp(prefix="django-mcp-otel-bench-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "benchmarks.settings_otel",
        "PYTHONPATH": str(cpu.ROOT),
        "MCP_TEST_DB": "sqlite",
        "MCP_TEST_LAYER": "memory",
        "MCP_SQLITE": str(tmp / "bench.sqlite3"),
    }
    subprocess.run([sys.executable, "-m", "django", "migrate", "--noinput", "-v0"], env=env, cwd=cpu.ROOT, check=True)
    wrk = run.ensure_wrk()
    only = [o.strip() for o in (args.only or "stateless call,json call").split(",") if o.strip()]
    cases = [c for c in run.OURS_CASES if c.name in only]
    best: dict[tuple[str, str, str], float] = {}
    for server_name in (s.strip() for s in args.servers.split(",") if s.strip()):
        for _ in range(args.repeat):
            for mode in ("off", "on"):
                extra = (("MCP_BENCH_TELEMETRY", mode), ("MCP_BENCH_SAMPLE", str(args.sample or "")))
                spec = run.Spec("ours", server_name, "tests.settings.asgi:application", env=extra)
                server = run.Server(spec, env, tmp)
                server.log = tmp / f"{server_name}-{mode}.log"
                server.start()
                try:
                    with httpx.Client(timeout=10) as client:
                        for case in cases:
                            sid = run.open_session(client, server.url) if case.session else None
                            run.check_reply(client, server.url, case, sid)
                            run.run_wrk(wrk, server.url, case, 16, 1, server.port, sid, None)
                            stats = run.run_wrk(wrk, server.url, case, 16, args.seconds, server.port, sid, None)
                            value = stats["requests"] / (stats["duration_us"] / 1e6)
                            key = (server_name, case.name, mode)
                            best[key] = max(best.get(key, 0.0), value)
                            print(f"{server_name:8} {case.name:15} {mode:3} {value:8.0f} req/s", file=sys.stderr)
                finally:
                    server.stop()
                problems = server.problems()
                if problems:
                    raise SystemExit(f"errors in {server.log}:\n{problems}")
    print("\n| server | case | off req/s | on req/s | on ÷ off |")
    print("|---|---|--:|--:|--:|")
    for server_name in (s.strip() for s in args.servers.split(",") if s.strip()):
        for case in cases:
            off, on = best[(server_name, case.name, "off")], best[(server_name, case.name, "on")]
            print(f"| {server_name} | {case.name} | {off:.0f} | {on:.0f} | {on / off:.2f} |")
    return 0


async def sdk_floor(args: argparse.Namespace) -> int:
    """What the OpenTelemetry SDK alone costs a request, with the very attributes our telemetry records.

    One ``stateless call`` through the application with ``TELEMETRY`` on, into in-memory exporters,
    gives the span's name, kind and attributes and the duration measurement's attributes. Then the SDK
    alone, set up as ``otel_noop`` sets it up (a ``BatchSpanProcessor`` and a periodic metric reader
    exporting to nowhere, providers of their own), does per request what ``operations.otel`` asks of
    it: start the span, make it current and not, end it, record the duration. The budget of the
    operations issue is 15% of a trivial call's CPU (``--level uvicorn``'s "none" column).
    """
    from django.conf import settings
    from django.test import override_settings
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from benchmarks.otel_noop import configure_sdk
    from tests.settings.asgi import application

    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    capture = TracerProvider()
    capture.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(capture)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    case = next(c for c in cpu.CASES if c.name == "stateless call")
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "TELEMETRY": True}):
        status, body, _ = await cpu.asgi_request(application, cpu._headers(case.headers), case.body)
    cpu.check("telemetry on", status, body)
    (span,) = spans.get_finished_spans()
    points = [
        point
        for resource in reader.get_metrics_data().resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "mcp.server.operation.duration"
        for point in metric.data.data_points
    ]
    span_attributes, metric_attributes = dict(span.attributes or {}), dict(points[0].attributes)
    print(f"span {span.name!r}: {len(span_attributes)} attributes; duration: {len(metric_attributes)}", file=sys.stderr)

    tracer_provider, meter_provider = configure_sdk(None, install=False)
    tracer = tracer_provider.get_tracer("floor")
    histogram = meter_provider.get_meter("floor").create_histogram(
        "mcp.server.operation.duration", unit="s", explicit_bucket_boundaries_advisory=[0.01, 0.1, 1, 10]
    )

    def span_alone(attributes: dict[str, Any] | None) -> None:
        started = tracer.start_span(span.name, None, span.kind, attributes)
        token = otel_context.attach(trace.set_span_in_context(started))
        otel_context.detach(token)
        started.end()

    measures: dict[str, Any] = {
        "span, its attributes": lambda: span_alone(span_attributes),
        "span, no attributes": lambda: span_alone(None),
        "duration, its attributes": lambda: histogram.record(0.001, metric_attributes),
        "duration, no attributes": lambda: histogram.record(0.001),
    }
    n = args.requests * 10
    best = dict.fromkeys(measures, float("inf"))
    for _ in range(args.repeat):
        for name, measure in measures.items():
            gc.collect()
            start = time.process_time()
            for _ in range(n):
                measure()
            await asyncio.sleep(1.2)  # the batch processor's and the reader's threads do their part
            best[name] = min(best[name], (time.process_time() - start) / n * 1e6)
    print("\n| the SDK alone, per request | µs |\n|---|--:|")
    for name, us in best.items():
        print(f"| {name} | {us:.1f} |")
    total = best["span, its attributes"] + best["duration, its attributes"]
    print(f"| **span + duration, as recorded** | **{total:.1f}** |")
    return 0


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--connections", default="1")
    parser.add_argument("--level", default="asgi,uvicorn")
    parser.add_argument("--only", help="comma-separated case names (benchmarks/cpu.py's CASES)")
    parser.add_argument("--sample", type=float, help="share of traces the SDK's sampler keeps (default: all)")
    parser.add_argument("--no-sdk", action="store_true", help="no SDK: the API's no-op tracer and meter (ours alone)")
    parser.add_argument("--rps", action="store_true", help="req/s of real servers under wrk instead")
    parser.add_argument("--sdk-floor", action="store_true", help="the SDK alone, with our spans' attributes")
    parser.add_argument("--seconds", type=int, default=5, help="--rps: seconds per wrk run")
    parser.add_argument("--servers", default="daphne,uvicorn", help="--rps: which servers")
    return parser.parse_args()


if __name__ == "__main__":
    from django.core.management import call_command

    options = parse()
    if options.rps:
        sys.exit(rps(options))
    call_command("migrate", verbosity=0, interactive=False)
    sys.exit(asyncio.run(sdk_floor(options) if options.sdk_floor else main(options)))
