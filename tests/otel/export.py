"""The OpenTelemetry SDK of a test server process, writing spans and metrics to files a test reads.

The SDK's own exporters (``ConsoleSpanExporter``, ``ConsoleMetricExporter``) with their own JSON,
one line per span or metrics export, in ``<pid>.spans.jsonl`` and ``<pid>.metrics.jsonl``: spans as
each one ends, metrics every ``INTERVAL_MS`` and at exit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

INTERVAL_MS = 300


def configure(directory: str) -> None:
    """Set this process's global tracer and meter providers (once, from its settings)."""
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    resource = Resource.create({"service.name": "django-mcp-tests", "process.pid": pid})
    spans = (folder / f"{pid}.spans.jsonl").open("a", buffering=1)
    tracer_provider = TracerProvider(resource=resource)
    exporter = ConsoleSpanExporter(out=spans, formatter=lambda span: span.to_json(indent=None) + "\n")
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(tracer_provider)
    points = (folder / f"{pid}.metrics.jsonl").open("a", buffering=1)
    metric_exporter = ConsoleMetricExporter(out=points, formatter=lambda data: data.to_json(indent=None) + "\n")
    reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=INTERVAL_MS)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader], resource=resource))


def _lines(path: Path) -> list[dict[str, Any]]:
    """The complete JSON lines of ``path`` (the last one may still be being written: it is left out)."""
    found = []
    for line in path.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def spans(directory: Path) -> list[dict[str, Any]]:
    """Every span the server processes finished so far, as the SDK's JSON (``pid`` added)."""
    out = []
    for path in sorted(directory.glob("*.spans.jsonl")):
        for span in _lines(path):
            span["pid"] = int(path.name.split(".")[0])
            out.append(span)
    return out


def histograms(directory: Path, name: str) -> list[dict[str, Any]]:
    """The data points of histogram ``name`` in each process's newest metrics export (cumulative)."""
    points: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.metrics.jsonl")):
        for export in reversed(_lines(path)):
            found = [
                point
                for resource in export["resource_metrics"]
                for scope in resource["scope_metrics"]
                for metric in scope["metrics"]
                if metric["name"] == name
                for point in _with_unit(metric)
            ]
            if found:
                points.extend(found)
                break
    return points


def _with_unit(metric: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**point, "unit": metric["unit"]} for point in metric["data"]["data_points"]]
