"""``DJANGO_MCP["MIDDLEWARE"]``: one chain around every request through the door, whatever carries it.

In process: the test client, the WSGI view (Django's test client) and a task's run see the same chain,
which refuses (an MCPError, a 429 with ``Retry-After``), rewrites arguments and results, runs a sync
middleware in a thread, and turns its own bug into -32603. End to end: the official SDK client against
daphne, and ``mcp_stdio`` over real pipes, through the same test middleware.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import re_path
from mcp import Client as SDKClient

from django_mcp import Context, MCPServer
from django_mcp.middleware import Call
from django_mcp.tasks import EXTENSION
from django_mcp.test import MCPClientError, MCPTestClient
from django_mcp.transports.wsgi import mcp_view_for
from tests.support import middlewares
from tests.support.servers import ROOT, migrate_database, server_env, start_server

server = MCPServer("middleware-tests")


@server.tool
async def echo(text: str) -> str:
    return text


@server.tool
def forbidden_tool() -> str:
    return "ran"


@server.tool
def limited_tool() -> str:
    return "ran"


@server.tool
def broken_tool() -> str:
    return "ran"


@server.tool(task="optional")
async def background(ctx: Context, text: str) -> str:
    return f"done {text}"


@server.prompt
def hello_prompt(name: str) -> str:
    return f"Hello {name}"


urlpatterns = [re_path(r"^mcp/?$", mcp_view_for(server, wsgi=True))]
CHAIN = ["tests.support.middlewares.Recorder", "tests.support.middlewares.Rewrite", "tests.support.middlewares.Refuse"]


def chain(*extra: str) -> Any:
    return override_settings(ROOT_URLCONF=__name__, DJANGO_MCP={**settings.DJANGO_MCP, "MIDDLEWARE": [*CHAIN, *extra]})


@pytest.fixture(autouse=True)
def seen() -> Any:
    middlewares.SEEN.clear()
    yield middlewares.SEEN
    middlewares.SEEN.clear()


def wsgi_post(client: Client, body: dict[str, Any], sid: str | None = None) -> Any:
    headers = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": "2025-11-25"}
    if sid:
        headers["HTTP_MCP_SESSION_ID"] = sid
    return client.post("/mcp/", json.dumps(body), content_type="application/json", **headers)


def wsgi_session(client: Client) -> str:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    r = client.post(
        "/mcp/",
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
    )
    assert r.status_code == 200, r.content
    return str(r["Mcp-Session-Id"])


def tool(client: MCPTestClient, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return client.request("tools/call", {"name": name, "arguments": arguments})


@pytest.mark.django_db(transaction=True)
def test_the_chain_sees_and_rewrites_every_call_of_the_test_client(seen: list[dict[str, Any]]) -> None:
    alice = User.objects.create_user("alice")
    with chain():
        client = MCPTestClient(server, user=alice)
        result = tool(client, "echo", {"text": "hi"})
        client.request("tools/list")
        prompt = client.request("prompts/get", {"name": "hello_prompt", "arguments": {"name": "Al"}})
    assert [c["text"] for c in result["content"]] == ["HI", "via test"]
    assert prompt["messages"][0]["content"]["text"] == "Hello Al"
    calls = {s["method"]: s for s in seen}
    echo_seen = calls["tools/call"]
    assert echo_seen["name"] == echo_seen["target"] == "echo"
    assert (echo_seen["transport"], echo_seen["user"], echo_seen["error"]) == ("test", "alice", None)
    assert (echo_seen["revision"], echo_seen["session_id"]) == ("2026-07-28", None)  # stateless: no session
    assert echo_seen["order"] == ["rewrite", "refuse"]  # the first listed runs first
    assert calls["prompts/get"]["target"] == "hello_prompt"
    assert calls["tools/list"]["target"] is None  # every request goes through it, not only calls


@pytest.mark.django_db(transaction=True)
def test_refusals_reach_the_test_client_and_the_wsgi_view_alike(seen: list[dict[str, Any]]) -> None:
    with chain():
        client = MCPTestClient(server)
        with pytest.raises(MCPClientError) as refused:
            tool(client, "forbidden_tool", {})
        assert (refused.value.code, refused.value.message, refused.value.data) == (
            -32001,
            "Not on Sundays",
            {"why": "sunday"},
        )
        with pytest.raises(MCPClientError) as limited:
            tool(client, "limited_tool", {})
        assert (limited.value.status, limited.value.code, limited.value.data) == (429, -32000, {"retryAfter": 7})
        with pytest.raises(MCPClientError) as broken:
            tool(client, "broken_tool", {})
        assert (broken.value.code, broken.value.message) == (-32603, "Internal error")

        http = Client(SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1")
        sid = wsgi_session(http)
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        r = wsgi_post(http, {**call, "params": {"name": "forbidden_tool", "arguments": {}}}, sid)
        assert r.status_code == 200 and r.json()["error"]["code"] == -32001
        r = wsgi_post(http, {**call, "params": {"name": "limited_tool", "arguments": {}}}, sid)
        assert r.status_code == 429 and r["Retry-After"] == "7"
        expected = {"code": -32000, "message": "Too many calls of limited_tool", "data": {"retryAfter": 7}}
        assert r.json()["error"] == expected
        r = wsgi_post(http, {**call, "params": {"name": "closed_tool", "arguments": {}}}, sid)
        assert r.status_code == 503 and r["Retry-After"] == "600"
        assert r.json() == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32000, "message": "Closed for maintenance"},
        }
        r = wsgi_post(http, {**call, "params": {"name": "broken_tool", "arguments": {}}}, sid)
        assert r.status_code == 200 and r.json()["error"]["code"] == -32603
        r = wsgi_post(http, {**call, "params": {"name": "echo", "arguments": {"text": "yo"}}}, sid)
        assert [c["text"] for c in r.json()["result"]["content"]] == ["YO", "via wsgi"]
    # The refusals never reached the tools; the outer middleware saw each outcome.
    by_name = {(s["transport"], s["name"]): s for s in seen if s["method"] == "tools/call"}
    assert by_name[("wsgi", "forbidden_tool")]["error"] == -32001 and by_name[("wsgi", "echo")]["error"] is None
    assert by_name[("wsgi", "echo")]["session_id"] == sid
    # An outer middleware reads a refusal's status from call.refused; an MCPError has none.
    refused = {name: s["refused"] for (transport, name), s in by_name.items() if transport == "wsgi"}
    assert refused == {
        "forbidden_tool": None,
        "limited_tool": 429,
        "closed_tool": 503,
        "broken_tool": None,
        "echo": None,
    }


@pytest.mark.django_db(transaction=True)
def test_a_task_run_goes_through_the_chain(seen: list[dict[str, Any]]) -> None:
    backend = (
        "django.tasks.backends.immediate.ImmediateBackend"
        if _has_native_tasks()
        else "django_tasks.backends.immediate.ImmediateBackend"
    )
    with chain(), override_settings(TASKS={"default": {"BACKEND": backend}}):
        client = MCPTestClient(server, capabilities={"extensions": {EXTENSION: {}}})
        created = client.request("tools/call", {"name": "background", "arguments": {"text": "x"}})
        assert created["resultType"] == "task"
        task = client.request("tasks/get", {"taskId": created["taskId"]})
    assert task["status"] == "completed"
    runs = [s for s in seen if s["transport"] == "task"]
    assert len(runs) == 1 and runs[0]["task_id"] == created["taskId"] and runs[0]["name"] == "background"
    assert [s["transport"] for s in seen if s["name"] == "background"] == ["task", "test"]  # the run, then the call


def _has_native_tasks() -> bool:
    try:
        import django.tasks  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.django_db(transaction=True)
def test_a_sync_middleware_runs_in_a_thread_with_a_sync_call_next() -> None:
    with chain("tests.support.middlewares.SyncStamp"):
        result = tool(MCPTestClient(server), "echo", {"text": "a"})
    assert result["_meta"]["example.com/stamped"] is True
    assert [c["text"] for c in result["content"]] == ["A", "via test"]


@pytest.mark.django_db(transaction=True)
def test_no_middleware_is_the_door_alone(seen: list[dict[str, Any]]) -> None:
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "MIDDLEWARE": []}):
        result = tool(MCPTestClient(server), "forbidden_tool", {})
    assert result["content"][0]["text"] == "ran" and seen == []


@pytest.mark.django_db(transaction=True)
def test_a_middleware_not_used_is_left_out(seen: list[dict[str, Any]]) -> None:
    """A factory raising Django's ``MiddlewareNotUsed`` (a feature switched off) is not in the chain."""
    from django_mcp.runtime import dispatch

    with chain("tests.support.middlewares.NotUsed"):
        result = tool(MCPTestClient(server), "echo", {"text": "hi"})
        assert [c["text"] for c in result["content"]] == ["HI", "via test"]  # the others ran
        assert [s["method"] for s in seen] == ["tools/call"]
    seen.clear()
    only_unused = ["tests.support.middlewares.NotUsed", "django_mcp.telemetry.middleware.Telemetry"]  # TELEMETRY is off
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "MIDDLEWARE": only_unused}):
        assert dispatch._chain() is None  # none in use: the door runs alone, no Call is built
        assert tool(MCPTestClient(server), "forbidden_tool", {})["content"][0]["text"] == "ran"
    with chain():  # a change of DJANGO_MCP rebuilds the chain
        assert dispatch._chain() is not None


def test_call_names_its_target_by_method() -> None:
    from django_mcp.protocol import jsonrpc
    from django_mcp.runtime.engine import Exchange

    def call(method: str, params: dict[str, Any]) -> Call:
        ex = Exchange(server, jsonrpc.Request(id=1, method=method, params=params), "2026-07-28", None, None, None)
        return Call(ex, None, None, "", "test")

    assert call("resources/read", {"uri": "test://x"}).name == "test://x"
    assert call("tools/call", {"name": "echo"}).name == "echo"
    assert call("tools/call", {"name": "echo"}).arguments == {}
    assert call("tools/list", {}).name is None


# -- end to end: daphne (the official SDK client) and mcp_stdio (raw pipes) -----------------------------


async def test_daphne_and_stdio_run_the_chain(tmp_path: Path) -> None:
    env = server_env(tmp_path, MCP_TEST_MIDDLEWARE=",".join(CHAIN))
    live = start_server(env, tmp_path / "daphne.log")
    try:
        async with SDKClient(live.url, mode="legacy", read_timeout_seconds=30) as client:
            result = await client.call_tool("echo", {"text": "hello"})
            texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
            assert texts == ["HELLO", "via http"]
        async with SDKClient(live.url, read_timeout_seconds=30, cache=None) as client:  # 2026-07-28
            result = await client.call_tool("echo", {"text": "modern"})
            assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["MODERN", "via http"]
    finally:
        live.stop()
    assert "Traceback" not in (tmp_path / "daphne.log").read_text(errors="replace")

    migrate_database(env)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "pipe"}}},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    out = subprocess.run(
        [sys.executable, "-m", "django", "mcp_stdio"],
        input=stdin,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    answers = {m["id"]: m for m in map(json.loads, out.stdout.splitlines()) if "id" in m}
    assert [c["text"] for c in answers[2]["result"]["content"]] == ["PIPE", "via stdio"], out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.django_db(transaction=True)
def test_a_missing_scope_reaches_the_middleware_as_a_response_and_the_client_as_403(
    seen: list[dict[str, Any]],
) -> None:
    """The door's own refusal passes through the chain like any other answer; its status and challenge stay."""
    from tests.support import door

    alice = User.objects.create_user("alice")
    with (
        door._oauth_settings(),
        override_settings(
            ROOT_URLCONF="tests.support.door", DJANGO_MCP={**settings.DJANGO_MCP, "AUTH": "oauth", "MIDDLEWARE": CHAIN}
        ),
    ):
        http = door.HTTP(door._token(alice, "mcp"), "2025-11-25")
        http.open()
        body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call"}
        r = http.post({**body, "params": {"name": "vault_write", "arguments": {"text": "x"}}})
    assert r.status_code == 403 and 'error="insufficient_scope"' in r["WWW-Authenticate"]
    assert r.json()["error"]["data"] == {"error": "insufficient_scope", "scope": "vault:write"}
    (refused,) = [s for s in seen if s["name"] == "vault_write"]
    assert (refused["error"], refused["user"], refused["scopes"]) == (-32600, "alice", frozenset({"mcp"}))
    assert refused["client_id"] and refused["transport"] == "wsgi" and refused["refused"] == 403


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("outermost", [None, "tests.support.middlewares.Rewrite"])
def test_a_reply_is_serialized_once_unless_a_middleware_edits_replies(
    monkeypatch: pytest.MonkeyPatch, outermost: str | None
) -> None:
    """With the built-in middleware alone (each ``keeps_replies``), a tools/call reply is serialized once, by the
    size cap, and the audit and the WSGI view send those bytes. A middleware that edits replies around them
    (``Rewrite``, with no ``keeps_replies``) seals nothing: its edit reaches the client."""
    from django_mcp.conf import DEFAULT_MIDDLEWARE
    from django_mcp.protocol import jsonrpc

    made: list[Any] = []
    to_json = jsonrpc.pydantic_core.to_json

    def counting(value: Any, *args: Any, **kwargs: Any) -> bytes:
        if isinstance(value, dict) and "result" in value and value.get("id") == 7:
            made.append(value)
        return to_json(value, *args, **kwargs)

    monkeypatch.setattr(jsonrpc.pydantic_core, "to_json", counting)
    paths = [*([outermost] if outermost else []), *DEFAULT_MIDDLEWARE]
    settings_ = {**settings.DJANGO_MCP, "MIDDLEWARE": paths, "AUDIT_LOG": True, "MAX_RESULT_BYTES": 1 << 20}
    with override_settings(ROOT_URLCONF=__name__, DJANGO_MCP=settings_):
        http = Client(SERVER_NAME="127.0.0.1", HTTP_HOST="127.0.0.1")
        sid = wsgi_session(http)
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}},
        }
        r = wsgi_post(http, body, sid)
    texts = [c["text"] for c in r.json()["result"]["content"]]
    if outermost is None:
        assert texts == ["x"] and len(made) == 1, made  # the cap made the bytes; the audit and the view reused them
    else:
        assert texts == ["X", "via wsgi"], texts  # the edit made after the cap is what the client gets
        assert len(made) == 3, made  # the cap, the audit and the view each serialize (nothing sealed)
