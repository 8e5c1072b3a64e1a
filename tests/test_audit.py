"""The audit log in process: what a record holds for each outcome, redaction, per-declaration policies,
task runs, the ``django_mcp.calls`` log line, the bounded buffer and its background writer, and pruning.

Every call goes through the one door with the audit middleware in the chain (the test client, or
Django's test client against the WSGI view); the records are written with ``flush()``, as a project's
own tests do. The background writer is exercised with a real thread and a real database here, and in
real server processes in ``test_audit_live.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import OperationalError, connection
from django.test import Client, override_settings
from django.urls import re_path
from django.utils import timezone

from django_mcp import Context, MCPServer, ToolError
from django_mcp.audit import calllog, middleware, redaction
from django_mcp.audit.redaction import SUBSTITUTE
from django_mcp.audit.writer import BatchWriter
from django_mcp.models import MCPCallRecord
from django_mcp.tasks import EXTENSION
from django_mcp.test import MCPClientError, MCPTestClient
from django_mcp.tools import Tool
from django_mcp.transports.wsgi import mcp_view_for

server = MCPServer("audit-tests")


@server.tool
def search(query: str, options: dict[str, Any] | None = None) -> str:
    """Arguments are kept with their sensitive keys masked (the default policy)."""
    if options is not None:
        options["api_key"] = "changed by the tool"  # what was recorded must not change with it
    return f"found {query}"


@server.tool(scopes=["vault:read"])
def vault() -> str:
    return "the vault"


@server.tool
def broken(why: str) -> str:
    raise ToolError(f"cannot: {why}")


@server.tool(audit="hidden")
def login(username: str, one_time_code: str) -> str:
    return f"welcome {username}"


@server.tool(audit="full")
def convert(amount: float, token: str) -> dict[str, float]:
    return {"euros": amount * 2}


@server.tool(audit=False)
def heartbeat() -> str:
    return "alive"


@server.tool
def limited_tool() -> str:  # refused with 429 by tests.support.middlewares.Refuse, inside the audit middleware
    return "ran"


@server.tool(task="optional")
async def report(ctx: Context, year: int) -> str:
    return f"report {year}"


@server.resource("audit://notes/{name}", mime_type="text/plain")
def note(name: str) -> str:
    return f"note {name}"


@server.resource("audit://quiet", audit=False)
def quiet() -> str:
    return "shh"


@server.prompt
def greet(name: str, password: str = "") -> str:
    return f"Hello {name}"


urlpatterns = [re_path(r"^mcp/?$", mcp_view_for(server, wsgi=True))]
CHAIN = ["django_mcp.audit.middleware.AuditMiddleware", "tests.support.middlewares.Refuse"]


def audited(**extra: Any) -> Any:
    """The audit middleware outside the tests' refusing one, and any setting of ``extra``."""
    return override_settings(ROOT_URLCONF=__name__, DJANGO_MCP={**settings.DJANGO_MCP, "MIDDLEWARE": CHAIN, **extra})


def records(**filters: Any) -> list[MCPCallRecord]:
    middleware.flush()
    return list(MCPCallRecord.objects.filter(**filters).order_by("id"))


def call(client: MCPTestClient, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return client.request("tools/call", {"name": name, "arguments": arguments or {}})


# -- what a record holds ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_tools_resources_and_prompts_are_recorded_with_who_what_and_how() -> None:
    alice = User.objects.create_user("alice")
    with audited():
        client = MCPTestClient(server, protocol_version="2025-11-25")
        client.force_authenticate(alice, scopes=["mcp"], client_id="client-a")
        call(client, "search", {"query": "dune"})
        client.read_resource("audit://notes/today")
        client.get_prompt("greet", {"name": "Ann"})
        client.list_tools()  # not audited: lists are not calls
        client.ping()
        call(client, "search", {"query": "d" * 104})  # 100 bytes more params, 100 more bytes of result
    *found, longer = records()
    assert [(r.method, r.target) for r in found] == [
        ("tools/call", "search"),
        ("resources/read", "audit://notes/today"),
        ("prompts/get", "greet"),
    ]
    sid = client.session.id
    for record in found:
        assert (record.user_id, record.username, record.oauth_client) == (alice.pk, "alice", "client-a")
        assert (record.session, record.revision, record.transport) == (sid[:8], "2025-11-25", "test")
        assert record.outcome == MCPCallRecord.OK and record.error_code is None and record.http_status is None
        assert 0 < record.duration_ms < 10_000
        assert abs((timezone.now() - record.at).total_seconds()) < 60
        assert record.response_bytes > 20 and record.task_id == "" and record.result is None
    tool, resource, prompt = found
    assert (longer.request_bytes - tool.request_bytes, longer.response_bytes - tool.response_bytes) == (100, 100)
    assert tool.arguments == {"query": "dune"}
    assert resource.arguments is None  # a read has no arguments, only its URI
    assert prompt.arguments == {"name": "Ann"}


@pytest.mark.django_db
def test_every_outcome_is_recorded_with_its_code_and_status() -> None:
    """A tool error, a JSON-RPC error, an inner middleware's 429, the door's 403 and a middleware bug."""
    bob = User.objects.create_user("bob")
    with audited():
        client = MCPTestClient(server)
        client.force_authenticate(bob, scopes=["mcp"], client_id="client-b")
        assert call(client, "broken", {"why": "no"})["isError"] is True
        with pytest.raises(MCPClientError) as unknown:
            call(client, "no_such_tool")
        with pytest.raises(MCPClientError) as limited:
            call(client, "limited_tool")
        with pytest.raises(MCPClientError) as scope:
            call(client, "vault")  # the token lacks vault:read
        with pytest.raises(MCPClientError) as bad:
            client.request("tools/call", {"name": "search", "arguments": ["not", "an", "object"]})
    assert (limited.value.status, scope.value.status) == (429, 403)
    by_target = {r.target: r for r in records()}
    assert (by_target["broken"].outcome, by_target["broken"].error_code) == ("tool_error", None)
    assert (by_target["no_such_tool"].outcome, by_target["no_such_tool"].error_code) == ("error", unknown.value.code)
    assert (by_target["limited_tool"].outcome, by_target["limited_tool"].http_status) == ("refused", 429)
    assert by_target["limited_tool"].error_code == -32000
    assert (by_target["vault"].outcome, by_target["vault"].http_status) == ("refused", 403)
    assert (
        (by_target["search"].outcome, by_target["search"].error_code) == ("error", bad.value.code) == ("error", -32602)
    )
    assert {r.oauth_client for r in by_target.values()} == {"client-b"}
    assert {r.session for r in by_target.values()} == {""}  # 2026-07-28: no session


@pytest.mark.django_db(transaction=True)  # the view's session is written by the bookkeeping threads
def test_the_wsgi_view_records_its_transport_and_refusal_status() -> None:
    with audited():
        http = Client(SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1")
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        accept = {"HTTP_ACCEPT": "application/json, text/event-stream"}
        r = http.post(
            "/mcp/", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, "application/json", **accept
        )
        sid = r["Mcp-Session-Id"]
        headers = {**accept, "HTTP_MCP_SESSION_ID": sid, "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "limited_tool", "arguments": {}}}
        assert http.post("/mcp/", body, "application/json", **headers).status_code == 429
        body["params"] = {"name": "search", "arguments": {"query": "x"}}
        assert http.post("/mcp/", body, "application/json", **headers).status_code == 200
    limited, ok = records()
    assert (limited.transport, limited.outcome, limited.http_status, limited.session) == (
        "wsgi",
        "refused",
        429,
        sid[:8],
    )
    assert (ok.transport, ok.outcome, ok.target) == ("wsgi", "ok", "search")


# -- what is kept of the arguments and the result -------------------------------------------------------


@pytest.mark.django_db
def test_sensitive_keys_are_masked_at_every_depth_and_the_record_is_what_the_client_sent() -> None:
    arguments = {
        "query": "dune",
        "options": {
            "API_KEY": "k-1",
            "Authorization": "Bearer x",
            "nested": [{"session_token": "t", "page": 2}, "plain"],
            "limit": 3,
            "db_password": "pw",
            "x-csrf-cookie": "c",
            "signature": "s",
            "client_secret": "cs",
        },
    }
    with audited():
        call(MCPTestClient(server), "search", arguments)
        MCPTestClient(server).get_prompt("greet", {"name": "Ann", "password": "hunter2"})
    tool, prompt = records()
    assert tool.arguments == {
        "query": "dune",
        "options": {
            "API_KEY": SUBSTITUTE,
            "Authorization": SUBSTITUTE,
            "nested": [{"session_token": SUBSTITUTE, "page": 2}, "plain"],
            "limit": 3,
            "db_password": SUBSTITUTE,
            "x-csrf-cookie": SUBSTITUTE,
            "signature": SUBSTITUTE,
            "client_secret": SUBSTITUTE,
        },
    }
    assert prompt.arguments == {"name": "Ann", "password": SUBSTITUTE}


@pytest.mark.django_db
def test_the_words_and_pairs_of_forms_and_headers_are_masked_too() -> None:
    """pwd, otp, sessionid, credentials; ``{"name": ..., "value": ...}`` and ``[name, value]`` pairs."""
    arguments = {
        "query": "q",
        "options": {
            "pwd": "p1",
            "otp": "123456",
            "sessionid": "s1",
            "credentials": {"user": "u", "secret": "c1"},
            "fields": [{"name": "Password", "value": "p2"}, {"name": "title", "value": "kept"}],
            "headers": [["X-Api-Token", "t1"], ["Accept", "text/html"]],
        },
    }
    with audited():
        call(MCPTestClient(server), "search", arguments)
    (tool,) = records()
    assert tool.arguments == {
        "query": "q",
        "options": {
            "pwd": SUBSTITUTE,
            "otp": SUBSTITUTE,
            "sessionid": SUBSTITUTE,
            "credentials": SUBSTITUTE,
            "fields": [{"name": "Password", "value": SUBSTITUTE}, {"name": "title", "value": "kept"}],
            "headers": [["X-Api-Token", SUBSTITUTE], ["Accept", "text/html"]],
        },
    }


@pytest.mark.django_db
def test_a_record_keeps_a_bounded_part_of_a_huge_argument_and_says_so() -> None:
    big = "x" * 3_000_000
    with audited(AUDIT_MAX_PAYLOAD_BYTES=4096):
        call(MCPTestClient(server), "search", {"query": big})
        call(MCPTestClient(server), "search", {"query": "small"})
    huge, small = records()
    assert huge.arguments["truncated"] is True and huge.arguments["bytes"] > 3_000_000
    assert huge.arguments["preview"].startswith('{"query":"xxx') and len(huge.arguments["preview"]) <= 4096
    assert small.arguments == {"query": "small"}
    assert huge.request_bytes > 3_000_000  # the record still says how big the request was


@pytest.mark.django_db
def test_the_sensitive_keys_are_a_setting() -> None:
    with audited(AUDIT_SENSITIVE_KEYS=r"^query$"):
        call(MCPTestClient(server), "search", {"query": "private", "options": {"token": "visible now"}})
    (record,) = records()
    assert record.arguments == {"query": SUBSTITUTE, "options": {"token": "visible now"}}
    # Each key's verdict is remembered for the pattern that gave it: back to the default, "token" is masked
    # again and "query" is not, though both keys were judged just before under the other pattern.
    with audited():
        call(MCPTestClient(server), "search", {"query": "public", "options": {"token": "hidden again"}})
    assert records()[-1].arguments == {"query": "public", "options": {"token": SUBSTITUTE}}


def test_the_keys_judged_are_remembered_up_to_a_bound() -> None:
    """Clients choose argument names: past ``MAX_VERDICTS`` keys are judged every time, never kept."""
    sensitive = redaction.pattern(r"secret")
    made_up = {f"k{i}": i for i in range(redaction.MAX_VERDICTS + 500)}
    made_up["my_secret"] = "x"
    masked = redaction.redact(made_up, sensitive)
    assert masked["my_secret"] == SUBSTITUTE and masked["k7"] == 7
    judged, verdicts = redaction._verdicts
    assert judged is sensitive and len(verdicts) == redaction.MAX_VERDICTS
    assert redaction.redact({"another_secret": 1}, sensitive) == {"another_secret": SUBSTITUTE}  # judged, not kept
    assert "another_secret" not in verdicts


@pytest.mark.django_db
def test_each_declaration_chooses_what_is_kept() -> None:
    """hidden: no arguments; full: arguments as sent and the result; False: no record at all."""
    with audited():
        client = MCPTestClient(server)
        call(client, "login", {"username": "ann", "one_time_code": "123456"})
        call(client, "convert", {"amount": 2, "token": "t-9"})
        call(client, "heartbeat")
        client.read_resource("audit://quiet")
        client.read_resource("audit://notes/a")
    login, convert, note_read = records()
    assert login.target == "login" and login.arguments is None and login.result is None
    assert convert.arguments == {"amount": 2, "token": "t-9"}  # full: not masked
    assert convert.result["structuredContent"] == {"euros": 4.0}
    assert note_read.target == "audit://notes/a"
    assert not MCPCallRecord.objects.filter(target__in=["heartbeat", "audit://quiet"]).exists()


def test_a_wrong_policy_is_refused_at_registration() -> None:
    with pytest.raises(TypeError, match="audit must be 'redacted', 'hidden', 'full' or False"):
        Tool(lambda: None, name="bad", audit="everything")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Prompt 'p'"):
        MCPServer("x").prompt(name="p", audit=True)(lambda: "x")  # type: ignore[arg-type]
    assert MCPServer("y").tool(name="ok", audit="full")(lambda: "x") is not None


@pytest.mark.django_db
def test_the_audit_log_can_be_turned_off() -> None:
    with audited(AUDIT_LOG=False):
        call(MCPTestClient(server), "search", {"query": "x"})
    assert records() == []


# -- tasks ---------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_task_is_recorded_when_created_and_when_run() -> None:
    from django_mcp.tasks import framework

    immediate = framework.tasks_module().__name__ + ".backends.immediate.ImmediateBackend"
    with audited(), override_settings(TASKS={"default": {"BACKEND": immediate}}):
        client = MCPTestClient(server, capabilities={"extensions": {EXTENSION: {}}})
        created = client.request("tools/call", {"name": "report", "arguments": {"year": 2026}})
        assert created["resultType"] == "task"
        # 2025-11-25: the task parameter, and the CreateTaskResult shape
        old = MCPTestClient(server, protocol_version="2025-11-25")
        handle = old.request("tools/call", {"name": "report", "arguments": {"year": 1999}, "task": {}})["task"]
    by_transport = {(r.transport, r.arguments["year"]): r for r in records(target="report")}
    assert set(by_transport) == {("test", 2026), ("task", 2026), ("test", 1999), ("task", 1999)}
    made, ran = by_transport[("test", 2026)], by_transport[("task", 2026)]
    assert (made.outcome, made.task_id) == ("task", created["taskId"])
    assert (ran.outcome, ran.task_id, ran.method) == ("ok", created["taskId"], "tools/call")
    assert by_transport[("test", 1999)].task_id == by_transport[("task", 1999)].task_id == handle["taskId"]


# -- cancellation ---------------------------------------------------------------------------------------

slow = MCPServer("audit-slow")


@slow.tool
async def wait(ctx: Context) -> str:
    await asyncio.sleep(30)
    return "late"


@pytest.mark.django_db(transaction=True)
async def test_a_cancelled_call_is_recorded_as_cancelled() -> None:
    from asgiref.sync import sync_to_async

    from django_mcp.protocol import jsonrpc
    from django_mcp.runtime import dispatch

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    request = jsonrpc.Request(id=7, method="tools/call", params={"name": "wait", "arguments": {}, "_meta": meta})
    with audited():
        caller = dispatch.Caller(user=None, transport="stdio")
        running = asyncio.ensure_future(dispatch.handle(slow, request, "2026-07-28", None, caller))
        await asyncio.sleep(0.2)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        found = await sync_to_async(_records_and_close)()
    (record,) = found
    assert (record.target, record.outcome, record.transport) == ("wait", "cancelled", "stdio")
    assert record.duration_ms >= 150


def _records_and_close() -> list[MCPCallRecord]:
    """On asgiref's shared thread: the records, then its connection closed (the test database is dropped after)."""
    try:
        return records()
    finally:
        connection.close()


# -- the structured log line ----------------------------------------------------------------------------


class Collect(logging.Handler):
    """A real handler: keeps each record and the line a Formatter naming the extra fields makes of it."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(mcp_method)s %(mcp_target)s %(mcp_outcome)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def call_log() -> Any:
    handler = Collect()
    log = logging.getLogger("django_mcp.calls")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    yield handler
    log.removeHandler(handler)
    log.setLevel(level)


@pytest.mark.django_db
def test_one_log_line_per_call_with_its_facts_as_extra(call_log: Collect) -> None:
    carol = User.objects.create_user("carol")
    with audited():
        client = MCPTestClient(server, protocol_version="2025-06-18")
        client.force_authenticate(carol, scopes=["mcp"], client_id="client-c")
        call(client, "search", {"query": "x"})
        with pytest.raises(MCPClientError):
            call(client, "limited_tool")
        client.list_tools()
    ok, refused = call_log.records
    sid = client.session.id[:8]
    assert ok.getMessage().startswith("tools/call search ok ")
    assert ok.getMessage().endswith(f" ms user={carol.pk} client=client-c session={sid} transport=test")
    assert refused.getMessage().startswith("tools/call limited_tool refused -32000 ")
    assert {name: getattr(ok, name) for name in calllog.FIELDS} == {
        "mcp_method": "tools/call",
        "mcp_target": "search",
        "mcp_outcome": "ok",
        "mcp_error_code": None,
        "mcp_http_status": None,
        "mcp_duration_ms": ok.mcp_duration_ms,
        "mcp_user_id": carol.pk,
        "mcp_client_id": "client-c",
        "mcp_session": sid,
        "mcp_transport": "test",
        "mcp_revision": "2025-06-18",
        "mcp_task_id": None,
        "mcp_request_bytes": ok.mcp_request_bytes,
        "mcp_response_bytes": ok.mcp_response_bytes,
    }
    assert ok.mcp_duration_ms > 0 and ok.mcp_request_bytes > 0 and ok.mcp_response_bytes > 0
    assert (refused.mcp_error_code, refused.mcp_http_status) == (-32000, 429)
    assert call_log.format(refused) == "INFO tools/call limited_tool refused"
    json.dumps({name: getattr(refused, name) for name in calllog.FIELDS})  # a JSON formatter can emit them


@pytest.mark.django_db
def test_client_chosen_names_cannot_forge_a_log_line(call_log: Collect) -> None:
    """A tool name or URI with a newline (or a fake ``user=``) is quoted in the message and escaped in the
    ``extra`` attributes: one call, one line, whatever a formatter prints."""
    forged = "x ok 1.0 ms user=1\ntools/call admin_tool ok"
    with audited():
        client = MCPTestClient(server)
        with pytest.raises(MCPClientError):
            call(client, forged)
        with pytest.raises(MCPClientError):
            client.request("resources/read", {"uri": "note://1\u2028user=root"})
    (tool, resource) = call_log.records
    for record in (tool, resource):
        line = record.getMessage()
        assert "\n" not in line and "\u2028" not in line and "\n" not in call_log.format(record)
    assert f" {json.dumps(forged)} " in tool.getMessage()
    assert tool.mcp_target == "x ok 1.0 ms user=1\\ntools/call admin_tool ok"
    assert resource.mcp_target == "note://1\\u2028user=root"


@pytest.mark.django_db
def test_the_log_line_needs_no_database_record(call_log: Collect) -> None:
    with audited(AUDIT_LOG=False):
        call(MCPTestClient(server), "search", {"query": "x"})
    assert [r.mcp_target for r in call_log.records] == ["search"] and records() == []


# -- the buffer and its writer ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_full_buffer_drops_the_oldest_with_a_counted_warning(caplog: pytest.LogCaptureFixture) -> None:
    before = middleware.writer.dropped
    with audited(AUDIT_BUFFER_SIZE=3), caplog.at_level(logging.WARNING, "django_mcp"):
        middleware.writer._warned_at = 0.0  # the warning is rate-limited per process: let this test see it
        client = MCPTestClient(server)
        for n in range(5):
            call(client, "search", {"query": str(n)})
        kept = records()
    assert [r.arguments["query"] for r in kept] == ["2", "3", "4"]
    assert middleware.writer.dropped - before == 2
    assert any("audit buffer is full (3 items): dropped the" in m for m in caplog.messages), caplog.messages


def test_a_full_buffer_emptied_by_the_writer_meanwhile_still_takes_the_record() -> None:
    """The writer thread may drain the buffer between ``add``'s "is it full?" and its drop of the oldest
    (the GIL changes hands between any two bytecodes): the call adding a record must not fail for it.
    Here the capacity, read between the two, is where the drain happens, so the interleaving is certain."""
    written: list[list[int]] = []
    race = threading.Event()

    def capacity() -> int:
        if race.is_set():
            writer.flush()  # what the writer thread does: everything buffered is written and gone
        return 2

    writer: BatchWriter[int] = BatchWriter(
        "race", written.append, interval=lambda: 3600.0, batch_size=lambda: 100, capacity=capacity
    )
    writer.add(1)
    writer.add(2)
    race.set()
    writer.add(3)  # full (2 of 2) when counted, empty when the oldest is dropped
    assert written == [[1, 2]] and list(writer._items) == [3]
    assert writer.dropped == 0  # nothing was dropped: the others were written


def _writer(sink: Any, **kwargs: Any) -> BatchWriter[int]:
    options: dict[str, Any] = {"interval": lambda: 0.05, "batch_size": lambda: 3, "capacity": lambda: 100}
    options.update(kwargs)
    return BatchWriter("test", sink, background=True, **options)


def _until(condition: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_writer_thread_writes_in_batches_off_the_calling_thread() -> None:
    batches: list[tuple[str, list[int]]] = []
    writer = _writer(lambda batch: batches.append((threading.current_thread().name, batch)))
    for n in range(7):
        writer.add(n)
    _until(lambda: sum(len(b) for _, b in batches) == 7)
    assert [b for _, b in batches][:2] == [[0, 1, 2], [3, 4, 5]]  # at most batch_size each, in order
    assert {name for name, _ in batches} == {"mcp-test-writer"}
    writer.stop()


def test_what_arrives_during_a_write_waits_for_a_full_batch_or_a_wake() -> None:
    """Not written at once in a small batch of its own: under steady load that made every row cost about
    twice as much (a transaction per handful of rows, and the GIL traded around each statement)."""
    batches: list[list[int]] = []
    writing, go_on = threading.Event(), threading.Event()

    def sink(batch: list[int]) -> None:
        writing.set()
        assert go_on.wait(10)
        batches.append(batch)

    writer = _writer(sink, interval=lambda: 3600.0)
    for n in range(3):  # a full batch wakes the thread early
        writer.add(n)
    assert writing.wait(10)
    writer.add(3)  # while [0, 1, 2] is being written
    writer.add(4)
    go_on.set()
    _until(lambda: batches == [[0, 1, 2]])
    time.sleep(0.3)
    assert batches == [[0, 1, 2]] and len(writer) == 2  # two of three: they wait
    writer.add(5)  # a full batch again
    _until(lambda: batches == [[0, 1, 2], [3, 4, 5]])
    writer.add(6)
    time.sleep(0.2)
    assert len(writer) == 1
    writer.wake()  # what a drain asks: everything buffered, now
    _until(lambda: batches == [[0, 1, 2], [3, 4, 5], [6]])
    writer.stop()


def test_a_failing_database_keeps_the_records_until_it_is_back(caplog: pytest.LogCaptureFixture) -> None:
    """An outage is logged once, in one line without a traceback (middleware.writer's ``away``); the rest with one."""
    written: list[int] = []
    down = threading.Event()
    down.set()

    def sink(batch: list[int]) -> None:
        if down.is_set():
            raise OperationalError("the database is away")
        written.extend(batch)

    writer = _writer(sink)
    writer.away = lambda exc: isinstance(exc, OperationalError)
    with caplog.at_level(logging.WARNING, "django_mcp"):
        for n in range(5):
            writer.add(n)
        _until(lambda: any("could not write" in r.getMessage() for r in caplog.records))
        time.sleep(0.3)  # several failed tries
        assert written == [] and len(writer) == 5
        down.clear()
        _until(lambda: len(written) == 5, timeout=40)
    assert written == [0, 1, 2, 3, 4]
    writer.stop()
    failed = [r for r in caplog.records if "could not write" in r.getMessage()]
    assert len(failed) == 1 and not failed[0].exc_info
    assert "OperationalError: the database is away" in failed[0].getMessage()
    assert any("writes again" in r.getMessage() for r in caplog.records)


def test_closing_writes_what_the_thread_had_not_written_yet() -> None:
    written: list[int] = []
    writer = _writer(written.extend, interval=lambda: 3600.0, batch_size=lambda: 1000)
    writer.add(1)
    writer.add(2)
    time.sleep(0.1)
    assert written == []
    writer.close()  # what atexit runs
    assert written == [1, 2]
    writer.add(3)  # after close: buffered, no thread starts again
    assert len(writer) == 1 and written == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_the_background_writer_inserts_records_through_its_own_connection() -> None:
    """The real writer function on a thread, against the real database (transactional: nothing to hide)."""
    dana = User.objects.create_user("dana")
    with audited():
        client = MCPTestClient(server)
        client.force_authenticate(dana, scopes=["mcp"], client_id="client-d")
        for n in range(4):
            call(client, "search", {"query": str(n)})
    entries: list[middleware.Entry] = []
    while len(middleware.writer):
        entries.append(middleware.writer._items.popleft())
    writer = BatchWriter(
        "audit-test",
        middleware.write,
        interval=lambda: 0.05,
        batch_size=lambda: 3,
        capacity=lambda: 100,
        background=True,
    )
    for entry in entries:
        writer.add(entry)

    def written() -> bool:
        try:
            return MCPCallRecord.objects.filter(oauth_client="client-d").count() == 4
        except OperationalError as exc:  # the in-memory test database's shared cache locks a table being written
            if "locked" not in str(exc):  # to readers at once ("database table is locked"), seen once in CI
                raise
            return False

    _until(written)
    writer.stop()
    assert sorted(r.arguments["query"] for r in MCPCallRecord.objects.filter(user=dana)) == ["0", "1", "2", "3"]


#: POSIX times whose text is made by hand (``middleware.TimeText``): a whole second, microseconds, one rounded up
#: into the next second, one rounded to zero, half a microsecond (rounded to even), before 1970.
TIMES = (1764300000.0, 1764300000.25, 1764300001.000123, 1764300000.9999996, 1764300002.0000004, 7.5e-06, -1.25)


@pytest.mark.django_db
@pytest.mark.parametrize("use_tz", [True, False])
def test_a_record_keeps_the_time_of_its_entry_to_the_microsecond(use_tz: bool) -> None:
    """What the writer stores reads back as ``datetime.fromtimestamp`` makes it (the driver's own adapter did)."""
    base = middleware.Entry(0.0, "tools/call", "search", None, "", "", "", "2025-11-25", "test", 1.0, "ok",
                       None, None, 0, 0, "", None, None)  # fmt: skip
    with override_settings(USE_TZ=use_tz, TIME_ZONE="America/Sao_Paulo"):
        middleware.write([base._replace(at=at, target=str(n)) for n, at in enumerate(TIMES)])
        stored = {int(r.target): r.at for r in MCPCallRecord.objects.all()}
        assert stored == {n: base._replace(at=at).when() for n, at in enumerate(TIMES)}
    assert stored[0].microsecond == 0 and stored[3].second == 1 and stored[3].microsecond == 0


def test_the_time_text_is_what_str_of_the_datetime_is() -> None:
    """``TimeText`` against ``str(datetime.fromtimestamp(...))`` over many times, zones with summer time included."""
    import random
    from datetime import datetime, timezone
    from zoneinfo import ZoneInfo

    rng = random.Random(7)
    times = sorted([*TIMES, *(rng.uniform(-2e9, 4e9) for _ in range(3000)), *(1.7e9 + k / 3 for k in range(3000))])
    for zone in (timezone.utc, ZoneInfo("Europe/Paris"), ZoneInfo("America/Sao_Paulo")):
        text = middleware.TimeText(zone)
        assert [text(t) for t in times] == [str(datetime.fromtimestamp(t, tz=zone).replace(tzinfo=None)) for t in times]


@pytest.mark.django_db
def test_a_row_the_database_refuses_does_not_sink_its_batch(caplog: pytest.LogCaptureFixture) -> None:
    with audited():
        client = MCPTestClient(server)
        call(client, "search", {"query": "a"})
        call(client, "search", {"query": "b"})
    first, _second = list(middleware.writer._items)
    middleware.writer._items[0] = first._replace(request_bytes=-1)  # a PositiveIntegerField: its CHECK refuses it
    with caplog.at_level(logging.ERROR, "django_mcp"):
        assert middleware.flush() == 2
    assert [r.arguments["query"] for r in records()] == ["b"]
    assert any("dropped an audit record the database refused" in m for m in caplog.messages)


@pytest.mark.django_db
def test_a_nul_character_from_the_client_is_recorded_not_refused(caplog: pytest.LogCaptureFixture) -> None:
    """PostgreSQL's text and jsonb refuse NUL (the pg-redis pass runs this on PostgreSQL): it becomes U+FFFD."""
    with audited(), caplog.at_level(logging.ERROR, "django_mcp"):
        client = MCPTestClient(server)
        call(client, "search", {"query": "a\x00b", "options": {"k\x00": ["\x00"]}})
        with pytest.raises(MCPClientError):
            call(client, "no\x00such")
        got = {r.target: r for r in records()}
    assert got["search"].arguments == {"query": "a\ufffdb", "options": {"k\ufffd": ["\ufffd"]}}
    assert got["no\ufffdsuch"].outcome == MCPCallRecord.ERROR
    assert not any("dropped" in m for m in caplog.messages)


# -- pruning ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_mcp_cleanup_deletes_records_past_the_retention() -> None:
    with audited():
        client = MCPTestClient(server)
        for n in range(3):
            call(client, "search", {"query": str(n)})
    assert len(records()) == 3
    MCPCallRecord.objects.filter(arguments__query__in=["0", "1"]).update(at=timezone.now() - timedelta(days=31))
    out = StringIO()
    call_command("mcp_cleanup", "--dry-run", stdout=out)
    assert "audit records would be deleted: 2" in out.getvalue()
    assert MCPCallRecord.objects.count() == 3
    out = StringIO()
    call_command("mcp_cleanup", stdout=out)
    assert "audit records deleted: 2" in out.getvalue()
    assert [r.arguments["query"] for r in MCPCallRecord.objects.all()] == ["2"]
    out = StringIO()
    call_command("mcp_cleanup", "--audit-retention", "0", stdout=out)
    assert "audit records deleted: 1" in out.getvalue() and not MCPCallRecord.objects.exists()
