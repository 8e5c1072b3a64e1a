"""``benchmarks.settings`` with ``TELEMETRY`` as ``MCP_BENCH_TELEMETRY`` says ("on": the SDK exporting to nowhere;
``MCP_BENCH_SAMPLE``: the share of traces its sampler keeps, all by default)."""

import os

from benchmarks.settings import *  # noqa: F403
from benchmarks.settings import DJANGO_MCP

TELEMETRY = os.environ.get("MCP_BENCH_TELEMETRY") == "on"
DJANGO_MCP = {**DJANGO_MCP, "TELEMETRY": TELEMETRY}
if TELEMETRY:
    from benchmarks.otel_noop import configure_sdk

    configure_sdk(float(os.environ["MCP_BENCH_SAMPLE"]) if os.environ.get("MCP_BENCH_SAMPLE") else None)
