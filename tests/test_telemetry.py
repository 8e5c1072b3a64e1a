"""OpenTelemetry per the MCP semantic conventions (``TELEMETRY``), read from real server processes.

Each server process (daphne, gunicorn, ``mcp_stdio``, ``db_worker``) runs ``tests.otel.settings``:
``TELEMETRY`` on and the OpenTelemetry SDK exporting its finished spans and metrics, as the SDK's own
JSON, to files the test reads (``tests.otel.export``). The clients are the official SDK client
(which puts its trace context in ``params._meta``) and raw HTTP with a ``traceparent`` header.
With ``TELEMETRY`` off, a call imports nothing of OpenTelemetry.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client
from opentelemetry.sdk.trace import TracerProvider

from django_mcp.telemetry.otel import BUCKETS
from tests.otel.export import histograms, spans
from tests.support.servers import (
    ROOT,
    LiveServer,
    TaskWorker,
    drop_pg_database,
    migrate_database,
    server_env,
    start_server,
    start_task_worker,
)
from tests.support.wsgi_server import start_wsgi_server

#: Spans and metrics do not depend on the database or the channel layer: one configuration (unit) runs these.
pytestmark = pytest.mark.own_config

ACCEPT = "application/json, text/event-stream"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "otel-tests", "version": "1"},
}


class Trace:
    """A made-up W3C trace context: ``traceparent`` and the ids a span's JSON shows."""

    def __init__(self) -> None:
        self.trace_id, self.span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
        self.traceparent = f"00-{self.trace_id}-{self.span_id}-01"


def hex_id(value: int, width: int) -> str:
    return f"0x{value:0{width}x}"


def wait_for(what: Callable[[], list[Any]], timeout: float = 20) -> list[Any]:
    """Poll until ``what()`` finds something (an exporter writes when a span ends)."""
    deadline = time.monotonic() + timeout
    while True:
        found = what()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def spans_where(out: Path, **match: Any) -> list[dict[str, Any]]:
    """The exported spans whose ``attributes`` (or, for ``name``/``trace``, name and trace id) match."""
    found = []
    for span in spans(out):
        attributes = span["attributes"]
        if "name" in match and span["name"] != match["name"]:
            continue
        if "trace" in match and span["context"]["trace_id"] != "0x" + match["trace"]:
            continue
        if all(attributes.get(k) == v for k, v in match.items() if k not in ("name", "trace")):
            found.append(span)
    return found


def one_span(out: Path, **match: Any) -> dict[str, Any]:
    found = wait_for(lambda: spans_where(out, **match))
    assert len(found) == 1, (match, found, spans(out))
    return found[0]


def points(out: Path, name: str, **match: Any) -> list[dict[str, Any]]:
    """Data points of histogram ``name`` whose attributes include ``match`` (polled: exported every 300 ms)."""

    def find() -> list[dict[str, Any]]:
        return [p for p in histograms(out, name) if all(p["attributes"].get(k) == v for k, v in match.items())]

    return wait_for(find)


def post(url: str, method: str, params: dict[str, Any], trace: Trace | None = None, **headers: str) -> Any:
    """One 2026-07-28 request over raw HTTP; ``trace`` goes in ``params._meta``."""
    meta = {**META, **({"traceparent": trace.traceparent} if trace else {})}
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": meta}}
    sent = {"content-type": "application/json", "accept": ACCEPT, "mcp-protocol-version": "2026-07-28"}
    sent["mcp-method"] = method
    if "name" in params:
        sent["mcp-name"] = params["name"]
    r = httpx.post(url, json=body, headers={**sent, **headers}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def otel_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    """daphne with ``TELEMETRY`` on; its spans and metrics land in the returned folder."""
    tmp = tmp_path_factory.mktemp("otel")
    out = tmp / "otel"
    server = start_server(server_env(tmp, settings="tests.otel.settings", TELEMETRY_TEST_DIR=str(out)), tmp / "d.log")
    yield server, out
    server.stop()
    if server.env["MCP_TEST_DB"] == "postgres":
        drop_pg_database(server.env["MCP_PG_NAME"])
    log = (tmp / "d.log").read_text()
    assert "Traceback" not in log, log


@pytest.fixture
def make_env() -> Iterator[Callable[..., dict[str, str]]]:
    """``server_env`` for a test's own server, its PostgreSQL database dropped afterwards."""
    made: list[dict[str, str]] = []

    def make(tmp: Path, **extra: str) -> dict[str, str]:
        made.append(server_env(tmp, **extra))
        return made[-1]

    yield make
    for env in made:
        if env["MCP_TEST_DB"] == "postgres":
            drop_pg_database(env["MCP_PG_NAME"])


def agent() -> Any:
    """A tracer of the test's own (not the global one): the span an agent would wrap its MCP calls in."""
    return TracerProvider().get_tracer("tests.agent")


# -- Streamable HTTP (daphne) ---------------------------------------------------------------------------
async def test_sdk_client_context_from_meta_is_the_parent(otel_server: tuple[LiveServer, Path]) -> None:
    server, out = otel_server
    with agent().start_as_current_span("invoke_agent librarian") as parent:
        async with Client(server.url, mode="legacy", read_timeout_seconds=30) as client:
            assert client.protocol_version == "2025-11-25"
            assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
            await client.get_prompt("greet", {"name": "Bob"})
            await client.read_resource("test://static/hello")
            assert (await client.call_tool("fail", {"kind": "tool"})).is_error
            with pytest.raises(MCPError):
                await client.call_tool("no_such_tool", {})
    context = parent.get_span_context()
    trace_id = f"{context.trace_id:032x}"

    echo = one_span(out, trace=trace_id, name="tools/call echo")
    assert echo["kind"] == "SpanKind.SERVER"
    assert echo["parent_id"] == hex_id(context.span_id, 16)  # the client's context, sent in _meta
    attributes = echo["attributes"]
    session = attributes.pop("mcp.session.id")
    assert len(session) >= 32
    assert attributes.pop("client.port") > 0
    assert attributes.pop("network.protocol.version") in ("1.1", "1.0")
    assert attributes.pop("jsonrpc.request.id").isdigit()
    assert attributes == {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": "2025-11-25",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "gen_ai.tool.call.arguments": '{"text": "hi"}',
        "gen_ai.tool.call.result": '[{"type": "text", "text": "hi"}]',
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "client.address": "127.0.0.1",
    }
    assert echo["status"]["status_code"] == "UNSET" and echo["links"] == []

    prompt = one_span(out, trace=trace_id, name="prompts/get greet")
    assert prompt["attributes"]["gen_ai.prompt.name"] == "greet" and prompt["parent_id"] == echo["parent_id"]
    read = one_span(out, trace=trace_id, name="resources/read")  # the URI is no span name by default
    assert read["attributes"]["mcp.resource.uri"] == "test://static/hello"
    assert "gen_ai.operation.name" not in read["attributes"]

    failed = one_span(out, trace=trace_id, name="tools/call fail")
    assert failed["attributes"]["error.type"] == "tool_error" and failed["status"]["status_code"] == "ERROR"
    unknown = one_span(out, trace=trace_id, name="tools/call")  # an unknown name is no span name
    assert unknown["attributes"]["gen_ai.tool.name"] == "no_such_tool"
    assert unknown["attributes"]["error.type"] == unknown["attributes"]["rpc.response.status_code"] == "-32602"
    assert unknown["status"] == {"status_code": "ERROR", "description": "Unknown tool: no_such_tool"}
    every = spans_where(out, trace=trace_id)
    assert {s["attributes"]["mcp.session.id"] for s in every} == {session}

    # The client's DELETE ended the session: its duration, with the session's revision.
    ended = points(out, "mcp.server.session.duration", **{"mcp.protocol.version": "2025-11-25"})
    assert ended and ended[0]["count"] >= 1 and ended[0]["unit"] == "s"
    assert ended[0]["explicit_bounds"] == BUCKETS
    assert ended[0]["attributes"] == {
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "tcp",
        "network.protocol.name": "http",
    }


async def test_operation_duration_histogram(otel_server: tuple[LiveServer, Path]) -> None:
    server, out = otel_server
    async with Client(server.url, mode="legacy", read_timeout_seconds=30) as client:
        await client.call_tool("square", {"x": 3})
        assert (await client.call_tool("fail", {"kind": "tool"})).is_error
    base = {"mcp.method.name": "tools/call", "mcp.protocol.version": "2025-11-25"}
    (ok,) = points(out, "mcp.server.operation.duration", **base, **{"gen_ai.tool.name": "square"})
    assert ok["count"] >= 1 and 0 < ok["sum"] < 30 and ok["unit"] == "s"
    assert ok["explicit_bounds"] == BUCKETS  # the conventions' bucket advice
    assert ok["attributes"] == {
        **base,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "square",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "network.protocol.version": ok["attributes"]["network.protocol.version"],
    }
    (failed,) = points(out, "mcp.server.operation.duration", **base, **{"gen_ai.tool.name": "fail"})
    assert failed["attributes"]["error.type"] == "tool_error"
    # No client address nor session id on a metric: too many values.
    assert not any("client.address" in p["attributes"] or "mcp.session.id" in p["attributes"] for p in [ok, failed])


def test_traceparent_header_is_the_parent_without_meta(otel_server: tuple[LiveServer, Path]) -> None:
    server, out = otel_server
    header = Trace()
    post(server.url, "tools/call", {"name": "echo", "arguments": {"text": "h"}}, traceparent=header.traceparent)
    span = one_span(out, trace=header.trace_id, name="tools/call echo")
    assert span["parent_id"] == "0x" + header.span_id and span["links"] == []
    assert span["attributes"]["mcp.protocol.version"] == "2026-07-28"
    assert span["attributes"]["jsonrpc.request.id"] == "7"
    assert "mcp.session.id" not in span["attributes"]  # 2026-07-28: no session

    # Both: the MCP client's context (_meta) is the parent, the HTTP request's a link.
    meta, header = Trace(), Trace()
    post(server.url, "tools/call", {"name": "echo", "arguments": {"text": "m"}}, meta, traceparent=header.traceparent)
    span = one_span(out, trace=meta.trace_id, name="tools/call echo")
    assert span["parent_id"] == "0x" + meta.span_id
    (link,) = span["links"]
    assert link["context"]["trace_id"] == "0x" + header.trace_id and link["context"]["span_id"] == "0x" + header.span_id

    # A broken _meta context is ignored: the header's is used.
    header = Trace()
    body_meta = {"traceparent": "00-nothex-00-01"}
    r = httpx.post(
        server.url,
        json={
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/list",
            "params": {"_meta": {**META, **body_meta}},
        },
        headers={
            "content-type": "application/json",
            "accept": ACCEPT,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/list",
            "traceparent": header.traceparent,
        },
        timeout=30,
    )
    assert r.status_code == 200 and "result" in r.json()
    assert one_span(out, trace=header.trace_id, name="tools/list")["parent_id"] == "0x" + header.span_id

    # A method the server does not answer is "_OTHER" (a client may send any name).
    header = Trace()
    body = {"jsonrpc": "2.0", "id": 9, "method": "no/such", "params": {"_meta": META}}
    headers = {"content-type": "application/json", "accept": ACCEPT, "mcp-protocol-version": "2026-07-28"}
    headers.update({"mcp-method": "no/such", "traceparent": header.traceparent})
    r = httpx.post(server.url, json=body, headers=headers, timeout=30)
    assert r.status_code == 404 and r.json()["error"]["code"] == -32601
    other = one_span(out, trace=header.trace_id, name="_OTHER")
    assert other["attributes"]["mcp.method.name"] == "_OTHER" and other["attributes"]["error.type"] == "-32601"


def test_task_run_links_to_the_call_that_created_it(otel_server: tuple[LiveServer, Path], tmp_path: Path) -> None:
    server, out = otel_server
    worker: TaskWorker = start_task_worker(server.env, tmp_path / "worker.log")
    try:
        meta = Trace()
        created = post(server.url, "tools/call", {"name": "task_sleep", "arguments": {"seconds": 0.1}}, meta)
        task_id = created["result"]["taskId"]
        creating = one_span(out, trace=meta.trace_id, name="tools/call task_sleep")
        assert creating["attributes"]["django_mcp.task.id"] == task_id
        assert creating["parent_id"] == "0x" + meta.span_id
        mine = creating["context"]["span_id"]
        run = wait_for(
            lambda: [s for s in spans_where(out, **{"django_mcp.task.id": task_id}) if s["context"]["span_id"] != mine]
        )
        assert len(run) == 1, (run, (tmp_path / "worker.log").read_text())
        (ran,) = run
        assert ran["pid"] != creating["pid"]  # recorded by the worker process
        assert ran["name"] == "tools/call task_sleep" and ran["kind"] == "SpanKind.SERVER"
        (link,) = ran["links"]  # its own trace, linked to the span of the call that created it
        assert link["context"]["span_id"] == creating["context"]["span_id"]
        assert link["context"]["trace_id"] == creating["context"]["trace_id"] == "0x" + meta.trace_id
        assert link["attributes"] == {"django_mcp.link": "task.created_by"}
        assert "jsonrpc.request.id" not in ran["attributes"] and ran["status"]["status_code"] == "UNSET"
    finally:
        worker.stop()


def test_idle_expiry_by_mcp_cleanup_records_a_timeout(otel_server: tuple[LiveServer, Path]) -> None:
    """Sessions ended by ``mcp_cleanup``, a process that serves no request, are measured there."""
    server, out = otel_server
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "idle", "version": "1"}}
    r = httpx.post(
        server.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        headers={"content-type": "application/json", "accept": ACCEPT},
        timeout=30,
    )
    assert r.status_code == 200 and r.headers["mcp-session-id"]
    time.sleep(0.5)  # idle for longer than the cleanup's SESSION_IDLE_TIMEOUT below
    env = {**server.env, "MCP_SESSION_IDLE_TIMEOUT": "0.3"}
    done = subprocess.run(
        [sys.executable, "-m", "django", "mcp_cleanup"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    (expired,) = points(out, "mcp.server.session.duration", **{"mcp.protocol.version": "2025-06-18"})
    assert expired["attributes"] == {"mcp.protocol.version": "2025-06-18", "error.type": "timeout"}
    assert expired["count"] == 1 and 0.25 < expired["sum"] < 30  # ended = last seen + the idle timeout


# -- WSGI under opentelemetry-instrumentation-django -----------------------------------------------------
@pytest.mark.parametrize(
    ("settings", "app", "asgi"),
    [
        ("tests.otel.settings_wsgi", "tests.otel.wsgi:application", False),  # gunicorn, the WSGI view
        ("tests.otel.settings_django_asgi", "tests.otel.asgi_django:application", True),  # uvicorn, mcp_view
    ],
    ids=["wsgi", "django-asgi"],
)
def test_the_views_span_is_the_child_of_django_instrumentation(
    tmp_path: Path, make_env: Any, settings: str, app: str, asgi: bool
) -> None:
    out = tmp_path / "otel"
    env = make_env(tmp_path, settings=settings, TELEMETRY_TEST_DIR=str(out))
    server = start_wsgi_server(env, tmp_path / "server.log", app, workers=1, asgi=asgi)
    try:
        header = Trace()
        post(server.url, "tools/call", {"name": "echo", "arguments": {"text": "w"}}, traceparent=header.traceparent)
        ours = one_span(out, trace=header.trace_id, name="tools/call echo")
        # Under ASGI, Django's span ends after the response is sent: polled as ours is.
        found = wait_for(lambda: [s for s in spans_where(out, trace=header.trace_id) if s["name"] != ours["name"]])
        assert len(found) == 1, spans(out)
        (django,) = found
        method = django["attributes"].get("http.request.method", django["attributes"].get("http.method"))
        assert django["kind"] == "SpanKind.SERVER" and method == "POST"
        assert django["parent_id"] == "0x" + header.span_id  # Django's span: the HTTP request's child
        assert ours["parent_id"] == django["context"]["span_id"]  # ours: the child of Django's, via the context
        assert ours["attributes"]["network.transport"] == "tcp"
        assert ours["attributes"]["network.protocol.version"] == "1.1"

        meta, header = Trace(), Trace()
        post(
            server.url, "tools/call", {"name": "echo", "arguments": {"text": "m"}}, meta, traceparent=header.traceparent
        )
        ours = one_span(out, trace=meta.trace_id, name="tools/call echo")
        assert ours["parent_id"] == "0x" + meta.span_id
        (django,) = wait_for(lambda: spans_where(out, trace=header.trace_id))
        (link,) = ours["links"]  # the current span (Django's HTTP span) as the link
        assert link["context"]["span_id"] == django["context"]["span_id"]
    finally:
        server.stop()


# -- stdio -------------------------------------------------------------------------------------------------
async def test_stdio_span_and_session(tmp_path: Path, make_env: Any) -> None:
    out = tmp_path / "otel"
    env = make_env(tmp_path, settings="tests.otel.settings", TELEMETRY_TEST_DIR=str(out))
    migrate_database(env)
    keys = ("DJANGO_SETTINGS_MODULE", "PYTHONPATH", "MCP_TEST_DB", "MCP_TEST_LAYER", "MCP_SQLITE", "MCP_PG_NAME")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "django", "mcp_stdio"],
        env={**{k: env[k] for k in keys if k in env}, "TELEMETRY_TEST_DIR": str(out)},
        cwd=str(ROOT),
    )
    with agent().start_as_current_span("invoke_agent") as parent:
        with anyio.fail_after(60), (tmp_path / "stderr.log").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=30) as client:
                await client.call_tool("add", {"a": 1, "b": 2})
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()
    context = parent.get_span_context()
    span = one_span(out, trace=f"{context.trace_id:032x}", name="tools/call add")
    assert span["parent_id"] == hex_id(context.span_id, 16)
    assert span["attributes"]["network.transport"] == "pipe"
    assert "network.protocol.name" not in span["attributes"] and "client.address" not in span["attributes"]
    assert span["attributes"]["mcp.session.id"]
    ended = points(out, "mcp.server.session.duration", **{"network.transport": "pipe"})
    assert ended and ended[0]["attributes"] == {"mcp.protocol.version": "2025-11-25", "network.transport": "pipe"}


# -- off -----------------------------------------------------------------------------------------------------
PROBE = """
import sys
try:  # what the project's other libraries import of OpenTelemetry themselves (redis-py 8 does, on the Redis layer)
    import channels_redis.core, redis
except ImportError:
    pass
before = {m for m in sys.modules if m.split(".")[0] == "opentelemetry"}
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)  # a project's database: the kill switches and the audit log use it
from django_mcp.test import MCPTestClient

client = MCPTestClient()
client.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
client.request("tools/list")
ours = "django_mcp.telemetry.otel" in sys.modules
print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry" and (m not in before or ours)))
"""


@pytest.mark.parametrize("on", [False, True])
def test_off_imports_nothing_of_opentelemetry(tmp_path: Path, on: bool, make_env: Any) -> None:
    env = make_env(tmp_path, settings="tests.otel.settings", MCP_TELEMETRY="1" if on else "0")
    migrate_database(env)  # a copy of the run's migrated file: the probe's migrate then applies nothing (~8 s less)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    imported = json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"'))
    if on:
        assert "opentelemetry.trace" in imported  # the probe sees it when it is there
    else:
        assert imported == []


def test_a_clients_baggage_is_not_trusted_by_default() -> None:
    """The trace context a client sends is the parent; its ``baggage`` (``enduser.id=root``) would become the
    tool's and travel with the tool's own calls: taken only with TELEMETRY_CLIENT_BAGGAGE."""
    from django.conf import settings
    from django.test import override_settings
    from opentelemetry import baggage
    from opentelemetry import trace as otel_trace

    from django_mcp.telemetry import otel

    made = Trace()
    carrier = {"traceparent": made.traceparent, "baggage": "enduser.id=root,tenant=acme"}
    context = otel._extract(carrier)
    assert context is not None and baggage.get_all(context) == {}
    assert otel_trace.get_current_span(context).get_span_context().trace_id == int(made.trace_id, 16)
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "TELEMETRY_CLIENT_BAGGAGE": True}):
        trusted = otel._extract(carrier)
    assert trusted is not None and baggage.get_all(trusted) == {"enduser.id": "root", "tenant": "acme"}
