"""The OpenTelemetry SDK as a production setup has it, exporting to nowhere: what telemetry costs on its own.

A ``BatchSpanProcessor`` (its thread's CPU is the process's) and a ``MeterProvider`` whose periodic
reader exports every second, both to exporters that drop what they get.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def configure_sdk(sample: float | None = None, *, install: bool = True) -> tuple[Any, Any]:
    """Set the global tracer and meter providers (once per process); ``sample``: the share of traces kept.

    ``install=False``: only make them (``telemetry.py --sdk-floor`` uses them directly). Returns both.
    """
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    class NoSpans(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class NoMetrics(MetricExporter):
        def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            return None

    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(sample)) if sample is not None else None)
    provider.add_span_processor(BatchSpanProcessor(NoSpans()))
    reader = PeriodicExportingMetricReader(NoMetrics(), export_interval_millis=1000)
    meter_provider = MeterProvider(metric_readers=[reader])
    if install:
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(meter_provider)
    return provider, meter_provider
