"""GET streams, resumption, notifications, the legacy SSE transport and the session admin; idle sessions expire and
unanswered server->client requests time out (a server with tight limits)."""

from __future__ import annotations

import queue
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from tests.support.raw import ACCEPT, Raw, sse_messages
from tests.support.servers import LiveServer, server_env, start_server
from tests.support.sse import SSEReader, first_event_then_drop


@pytest.fixture
def raw(mcp_server: LiveServer, server_log: Any) -> Raw:
    return Raw(mcp_server)


def call(rid: int, name: str, arguments: dict[str, Any], token: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def test_get_stream_receives_list_changed_and_subscribed_updates(raw: Raw) -> None:
    sid = raw.initialize()
    h = raw.session_headers(sid)
    sub = raw.post(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "test://static/hello"}}, h
    )
    assert sub.json()["result"] == {}
    stream = SSEReader("GET", raw.url, {**h, "accept": "text/event-stream"})
    try:
        assert stream.status == 200
        time.sleep(0.3)
        assert raw.post(call(2, "touch", {"uri": "test://static/hello"}), h).status_code == 200
        got = stream.messages_until(lambda m: m.get("method") == "notifications/resources/updated")
        methods = [m["method"] for m in got]
        assert methods == ["notifications/tools/list_changed", "notifications/resources/updated"]
        assert got[1]["params"] == {"uri": "test://static/hello"}
        # Not subscribed to this one: only list_changed arrives.
        raw.post(call(3, "touch", {"uri": "test://items/1"}), h)
        got = stream.messages_until(lambda m: True)
        assert got[0]["method"] == "notifications/tools/list_changed"
        with pytest.raises(queue.Empty):  # and nothing else arrives
            stream.next(timeout=0.5)
    finally:
        stream.close()


def test_delete_closes_get_stream(raw: Raw) -> None:
    sid = raw.initialize()
    h = raw.session_headers(sid)
    stream = SSEReader("GET", raw.url, {**h, "accept": "text/event-stream"})
    time.sleep(0.3)
    assert raw.http.delete(raw.url, headers=h).status_code == 200
    assert stream.next(timeout=5) is None  # the stream ended with the session
    stream.close()


def test_resume_post_stream_with_last_event_id(raw: Raw) -> None:
    sid = raw.initialize()
    h = raw.session_headers(sid)
    # Read the first progress event of a slow call, then drop the connection.
    body = call(7, "slow_count", {"steps": 4, "delay": 0.4}, token="t")
    first_id = first_event_then_drop(raw.url, body, {**h, "accept": ACCEPT})
    # Another stream of the same session must not leak into the replay.
    raw.post(call(8, "echo", {"text": "other"}), h)
    resumed = SSEReader("GET", raw.url, {**h, "accept": "text/event-stream", "last-event-id": first_id})
    try:
        got = resumed.messages_until(lambda m: m.get("id") == 7, timeout=10)
        assert [m["params"]["progress"] for m in got if m.get("method") == "notifications/progress"] == [2, 3, 4]
        assert got[-1]["result"]["content"][0]["text"] == "slowly counted to 4"
        assert all(m.get("id") != 8 for m in got)
    finally:
        resumed.close()
    bad = raw.http.get(raw.url, headers={**h, "accept": "text/event-stream", "last-event-id": "zz_1"})
    assert bad.status_code == 404


async def test_legacy_sse_transport(mcp_server: LiveServer) -> None:
    logs: list[Any] = []

    async def on_log(p: types.LoggingMessageNotificationParams) -> None:
        logs.append(p.data)

    url = mcp_server.url + "sse/"
    async with Client(sse_client(url), mode="legacy", logging_callback=on_log) as client:
        tools = await client.list_tools()
        assert "add" in [t.name for t in tools.tools]
        result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result.structured_content == {"total": 3, "terms": [1, 2]}
        await client.call_tool("count", {"steps": 2})
        assert logs == ["counted 1", "counted 2"]
        r = await client.read_resource("test://static/hello")
        assert r.contents[0].text == "Hello, world!"  # type: ignore[union-attr]


def test_legacy_sse_endpoint_event(mcp_server: LiveServer) -> None:
    with (
        httpx.Client(timeout=5) as c,
        c.stream("GET", mcp_server.url + "sse/", headers={"accept": "text/event-stream"}) as r,
    ):
        assert r.status_code == 200
        lines = []
        for line in r.iter_lines():
            lines.append(line)
            if line.startswith("data:"):
                break
    assert lines[0] == "event: endpoint"
    assert re.fullmatch(r"data: /mcp/messages/\?session_id=[A-Za-z0-9_-]{40,}", lines[1])


def test_admin_ends_session(raw: Raw, mcp_server: LiveServer) -> None:
    mcp_server.manage("shell", "-c", _CREATE_ADMIN)
    sid = raw.initialize()
    h = raw.session_headers(sid)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert raw.post(ping, h).status_code == 200
    with httpx.Client(base_url=mcp_server.base, timeout=10, follow_redirects=True) as admin:
        page = admin.get("/admin/login/")
        token = admin.cookies["csrftoken"]
        r = admin.post(
            "/admin/login/?next=/admin/",
            data={"username": "boss", "password": "pw-boss-123", "csrfmiddlewaretoken": token, "next": "/admin/"},
            headers={"referer": f"{mcp_server.base}/admin/login/"},
        )
        assert r.status_code == 200 and "Log out" in r.text, page.text[:200]
        listing = admin.get("/admin/django_mcp/mcpsession/")
        assert sid[:12] in listing.text
        r = admin.post(
            "/admin/django_mcp/mcpsession/",
            data={
                "action": "end_sessions",
                "_selected_action": [sid],
                "csrfmiddlewaretoken": admin.cookies["csrftoken"],
            },
            headers={"referer": f"{mcp_server.base}/admin/django_mcp/mcpsession/"},
        )
        assert r.status_code == 200 and "Ended 1 session" in r.text
    assert raw.post(ping, h).status_code == 404


_CREATE_ADMIN = (
    "from django.contrib.auth.models import User\n"
    "User.objects.filter(username='boss').exists() or "
    "User.objects.create_superuser('boss', 'boss@example.com', 'pw-boss-123')"
)


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("tight")
    env = server_env(
        tmp,
        MCP_SESSION_IDLE_TIMEOUT="3",  # a margin for last_seen's batched writes on a loaded machine
        MCP_SESSION_REVALIDATE="0.2",
        MCP_CLIENT_REQUEST_TIMEOUT="1",
    )
    server = start_server(env, tmp / "daphne.log")
    yield server
    server.stop()


def test_idle_session_expires(tight: LiveServer) -> None:
    raw = Raw(tight)
    sid = raw.initialize()
    h = raw.session_headers(sid)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    started = time.monotonic()
    while time.monotonic() - started < 4.5:  # activity keeps it alive past the idle timeout
        time.sleep(0.5)
        assert raw.post(ping, h).status_code == 200
    time.sleep(4.5)
    assert raw.post(ping, h).status_code == 404


def test_unanswered_elicitation_times_out(tight: LiveServer) -> None:
    raw = Raw(tight)
    sid = raw.initialize(capabilities={"elicitation": {}})
    h = raw.session_headers(sid)
    started = time.monotonic()
    r = raw.http.post(
        raw.url,
        json={"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}},
        headers={**h, "accept": ACCEPT, "content-type": "application/json"},
    )
    elapsed = time.monotonic() - started
    messages = sse_messages(r.text)
    assert messages[0]["method"] == "elicitation/create"
    assert messages[1]["method"] == "notifications/cancelled"  # the server withdraws its request
    assert messages[1]["params"]["requestId"] == messages[0]["id"]
    final = messages[-1]
    assert final["id"] == 5 and final["error"]["code"] == -32001
    assert 0.9 < elapsed < 10
