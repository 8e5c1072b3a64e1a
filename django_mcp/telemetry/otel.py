"""Spans and metrics of the OpenTelemetry semantic conventions for MCP (semantic-conventions docs/gen-ai/mcp.md).

The one module of the package that imports ``opentelemetry`` (the ``otel`` extra), and only when
``TELEMETRY`` is on (``operations.telemetry``). The tracer and meter come from the global providers,
so the project configures the SDK and its exporters as for any other instrumentation.

Per request: a ``SERVER`` span named ``{mcp.method.name} {target}`` and a measurement of
``mcp.server.operation.duration``. Its parent is, as the conventions say, the trace context the client
put in ``params._meta`` (``traceparent``, ``tracestate``, ``baggage``; in every revision), with a
link to the transport's context (the current span, such as the HTTP span of
``opentelemetry-instrumentation-django``, or else the request's ``traceparent`` header). Without it
the span is a child of the current span, or else of the ``traceparent`` header. A task's run
links to the span of the call that created the task. Sessions ending record
``mcp.server.session.duration``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import Link, SpanKind, StatusCode

from ..conf import mcp_settings
from ..middleware import Call, CallNext
from ..state.sessions import EndedSession
from ..version import __version__

#: The conventions' advice for both histograms (seconds).
BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
#: Methods whose target is a resource URI (``mcp.resource.uri``).
RESOURCE_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
#: Transports over HTTP (``network.transport`` "tcp", ``network.protocol.name`` "http").
HTTP_TRANSPORTS = frozenset({"http", "sse", "wsgi", "browser"})
#: Longest name or URI recorded from a request (a client may send anything).
MAX_VALUE = 256
#: ``mcp.method.name`` of a method the server does not answer (the conventions' fallback value).
OTHER = "_OTHER"
#: ``error.type`` of a request the client cancelled, and of a session that expired idle.
CANCELLED, TIMEOUT = "cancelled", "timeout"


class Instruments:
    """The tracer and the two histograms, made once per process from the global providers."""

    def __init__(self) -> None:
        self.tracer = trace.get_tracer("django_mcp", __version__)
        meter = metrics.get_meter("django_mcp", __version__)
        self.operation_duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="MCP request or notification duration as observed on the receiver from the time it was "
            "received until the result or ack is sent.",
            explicit_bucket_boundaries_advisory=BUCKETS,
        )
        self.session_duration = meter.create_histogram(
            "mcp.server.session.duration",
            unit="s",
            description="The duration of the MCP session as observed on the MCP server.",
            explicit_bucket_boundaries_advisory=BUCKETS,
        )

    # -- requests ------------------------------------------------------------------------------------------
    async def observe(self, call: Call, call_next: CallNext) -> dict[str, Any] | None:
        """Run the rest of the chain inside the request's span (current, so user code's spans nest under it)."""
        method = call.method
        if not call.exchange.server.handles(method):  # a client may send any name: few values for span names
            method = OTHER
        metric: dict[str, Any] = {"mcp.method.name": method, "mcp.protocol.version": call.revision}
        scope = call.scope
        transport = call.transport
        if transport in HTTP_TRANSPORTS:
            metric.update(_http(scope))
        elif transport == "stdio":
            metric["network.transport"] = "pipe"
        name = method
        target = call.name
        extra: dict[str, Any] = {}
        if target is not None:
            target = target[:MAX_VALUE]
            known = call.target is not None  # a registered name: few values, fit for a span name and a metric
            if method == "tools/call":
                extra["gen_ai.tool.name"] = target
                if known:
                    metric["gen_ai.tool.name"], name = target, f"{method} {target}"
            elif method == "prompts/get":
                extra["gen_ai.prompt.name"] = target
                if known:
                    metric["gen_ai.prompt.name"], name = target, f"{method} {target}"
            elif method in RESOURCE_METHODS:
                extra["mcp.resource.uri"] = target
                if mcp_settings.TELEMETRY_RESOURCE_SPAN_NAMES:
                    name = f"{method} {target}"
        if method == "tools/call":
            metric["gen_ai.operation.name"] = "execute_tool"
            if mcp_settings.TELEMETRY_TOOL_CONTENT:
                extra["gen_ai.tool.call.arguments"] = _json(call.arguments)
        if call.session_id is not None:
            extra["mcp.session.id"] = call.session_id
        if call.task_id is not None:
            extra["django_mcp.task.id"] = call.task_id
        elif call.request_id is not None:
            extra["jsonrpc.request.id"] = str(call.request_id)[:MAX_VALUE]  # chosen by the client, as names are
        if scope is not None:
            client = scope.get("client")
            if client and isinstance(client[0], str):  # spans only: too many values for a metric
                extra["client.address"] = client[0]
                if len(client) > 1 and isinstance(client[1], int) and client[1] > 0:
                    extra["client.port"] = client[1]
        parent, links = self._parent(call)
        span = self.tracer.start_span(name, parent, SpanKind.SERVER, {**metric, **extra}, links)
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        error: str | None = None
        try:
            response = await call_next(call)
        except asyncio.CancelledError:  # the client went away (a 2026-07-28 request's connection closed)
            error = CANCELLED
            raise
        except BaseException as exc:  # not expected: the guarded chain turns exceptions into responses
            error = type(exc).__qualname__
            span.record_exception(exc)
            raise
        finally:
            otel_context.detach(token)
            if error is not None:
                self._end(span, metric, call, error)
        message = None
        if response is None:
            error = CANCELLED
        elif "error" in response:
            failure = response["error"]
            error, message = str(failure.get("code")), str(failure.get("message", ""))
            span.set_attribute("rpc.response.status_code", error)
            metric["rpc.response.status_code"] = error
        elif method == "tools/call":
            error = self._tool_result(span, response["result"])
        self._end(span, metric, call, error, message)
        return response

    def _end(
        self, span: Any, metric: dict[str, Any], call: Call, error: str | None, message: str | None = None
    ) -> None:
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(StatusCode.ERROR, message)
            metric["error.type"] = error
        span.end()
        self.operation_duration.record(time.monotonic() - call.started, metric)

    @staticmethod
    def _tool_result(span: Any, result: Mapping[str, Any]) -> str | None:
        """A ``tools/call`` result on its span; "tool_error" for one with ``isError`` (the conventions' value)."""
        if result.get("isError") is True:
            return "tool_error"
        task = result.get("task")  # 2025-11-25 CreateTaskResult; 2026-07-28 has the task's fields at the top
        task_id = task.get("taskId") if isinstance(task, dict) else result.get("taskId")
        if isinstance(task_id, str):
            span.set_attribute("django_mcp.task.id", task_id)
        elif mcp_settings.TELEMETRY_TOOL_CONTENT and "content" in result:
            span.set_attribute("gen_ai.tool.call.result", _json(result.get("structuredContent", result["content"])))
        return None

    def _parent(self, call: Call) -> tuple[otel_context.Context | None, list[Link] | None]:
        """The span's parent (None: the current context) and its links, as the conventions order them."""
        links: list[Link] = []
        parent = _extract(call.exchange.meta)
        current = trace.get_current_span().get_span_context()
        if parent is not None:  # the MCP client's span; the transport's context (current, or the headers') a link
            transport = current if current.is_valid else _span_context(_from_headers(call.scope))
            if transport is not None:
                links.append(Link(transport))
        elif not current.is_valid:  # no HTTP instrumentation made a span current: the traceparent header
            parent = _from_headers(call.scope)
        if call.task_id is not None:  # a task's run: a link to the span of the tools/call that created the task
            creator = _span_context(_extract(getattr(call.exchange, "trace_context", None)))
            if creator is not None:
                links.append(Link(creator, {"django_mcp.link": "task.created_by"}))
        return parent, links or None

    def carrier(self) -> dict[str, str]:
        """The current trace context as W3C headers, for a task to keep."""
        out: dict[str, str] = {}
        propagate.inject(out)
        return out

    # -- sessions ------------------------------------------------------------------------------------------
    def sessions_ended(self, sessions: Iterable[EndedSession], reason: str, transport: str | None) -> None:
        """``mcp.server.session.duration`` of each ended session; an idle expiry is ``error.type`` "timeout"."""
        base = _network(transport)
        if reason == "expired":
            base["error.type"] = TIMEOUT
        for session in sessions:
            self.session_duration.record(session.duration, {**base, "mcp.protocol.version": session.revision})


def _http(scope: Mapping[str, Any] | None) -> dict[str, str]:
    """``network.*`` of a request over HTTP (one shared dict per HTTP version)."""
    version = scope.get("http_version") if scope is not None else None
    found = _HTTP.get(version)
    if found is None:
        found = {"network.transport": "tcp", "network.protocol.name": "http"}
        if isinstance(version, str) and version:
            found["network.protocol.version"] = version
            _HTTP[version] = found
    return found


_HTTP: dict[Any, dict[str, str]] = {}


def _network(transport: str | None) -> dict[str, str]:
    """``network.*`` of what a session ended over (its HTTP version unknown); none for the test client."""
    if transport == "stdio":
        return {"network.transport": "pipe"}
    if transport in HTTP_TRANSPORTS:
        return {"network.transport": "tcp", "network.protocol.name": "http"}
    return {}


#: What a carrier's trace context is read from; with ``TELEMETRY_CLIENT_BAGGAGE`` its baggage too.
CONTEXT_KEYS = ("traceparent", "tracestate")
TRUSTED_KEYS = (*CONTEXT_KEYS, "baggage")


def _extract(carrier: Any) -> otel_context.Context | None:
    """The context ``carrier`` (``_meta``, headers, a task's record) names, None without a valid ``traceparent``."""
    if not isinstance(carrier, Mapping) or "traceparent" not in carrier:
        return None
    # A client's baggage would become the tool's and travel on to the services it calls ("enduser.id=root"):
    # taken only when the project says it trusts its clients' (TELEMETRY_CLIENT_BAGGAGE).
    keys = TRUSTED_KEYS if mcp_settings.TELEMETRY_CLIENT_BAGGAGE else CONTEXT_KEYS
    clean = {k: v for k in keys if isinstance(v := carrier.get(k), str)}
    try:
        found = propagate.extract(clean)
    except (TypeError, ValueError):
        return None
    return found if trace.get_current_span(found).get_span_context().is_valid else None


def _span_context(ctx: otel_context.Context | None) -> trace.SpanContext | None:
    return trace.get_current_span(ctx).get_span_context() if ctx is not None else None


def _from_headers(scope: Mapping[str, Any] | None) -> otel_context.Context | None:
    """The context of an HTTP request's W3C trace headers (only those are decoded), None without them."""
    carrier: dict[str, str] = {}
    headers = scope.get("headers") if scope is not None else None
    for key, value in headers or ():
        if key in (b"traceparent", b"tracestate", b"baggage"):
            carrier[key.decode("latin-1")] = value.decode("latin-1")
    return _extract(carrier) if carrier else None


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


__all__ = ["BUCKETS", "Instruments"]
