"""Bad input over real HTTP: each gets the precise JSON-RPC error or HTTP status, never a 500."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from django_mcp.protocol import cursor
from tests.support.raw import ACCEPT, META, Raw, error_of, sse_messages
from tests.support.servers import LiveServer

#: own_config: refusals come from the transport and the protocol checks, the same on any database and
#: layer (pg-redis skips it).
pytestmark = pytest.mark.own_config


@pytest.fixture
def raw(mcp_server: LiveServer, server_log: Any) -> Iterator[Raw]:
    client = Raw(mcp_server)
    yield client
    # Whatever happened, the server still serves.
    sid = client.initialize()
    r = client.post({"jsonrpc": "2.0", "id": 99, "method": "ping"}, client.session_headers(sid))
    assert r.json() == {"jsonrpc": "2.0", "id": 99, "result": {}}
    client.http.close()


# -- parsing -------------------------------------------------------------------------------------


def test_malformed_json(raw: Raw) -> None:
    r = raw.post(None, raw=b'{"jsonrpc": "2.0", "id": 1,')
    assert r.status_code == 400
    assert error_of(r)["code"] == -32700
    assert "id" not in r.json()  # never a null id


def test_invalid_utf8(raw: Raw) -> None:
    r = raw.post(None, raw=b'{"jsonrpc":"2.0","id":1,"method":"ping\xff\xfe"}')
    assert r.status_code == 400 and error_of(r)["code"] == -32700


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1, 2]},
        {"jsonrpc": "2.0", "id": 1},
        "ping",
    ],
)
def test_wrong_jsonrpc_types(raw: Raw, body: Any) -> None:
    sid = raw.initialize()
    r = raw.post(body, raw.session_headers(sid))
    assert r.status_code == 400
    assert error_of(r)["code"] == -32600


def test_batch_refused_after_2025_03_26(raw: Raw) -> None:
    sid = raw.initialize("2025-11-25")
    r = raw.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], raw.session_headers(sid))
    assert r.status_code == 400 and error_of(r)["code"] == -32600


def test_batch_accepted_on_2025_03_26(raw: Raw) -> None:
    sid = raw.initialize("2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "b"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "nope/nope"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    r = raw.post(batch, raw.session_headers(sid, "2025-03-26"))
    assert r.status_code == 200
    by_id = {m.get("id"): m for m in r.json()}
    assert by_id[1]["result"] == {}
    assert by_id[2]["result"]["content"][0]["text"] == "b"
    assert by_id[3]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600
    assert len(r.json()) == 4


# -- methods and params ----------------------------------------------------------------------------


def test_unknown_method(raw: Raw) -> None:
    sid = raw.initialize()
    r = raw.post({"jsonrpc": "2.0", "id": 7, "method": "tools/destroy"}, raw.session_headers(sid))
    assert r.status_code == 200
    assert r.json()["id"] == 7 and error_of(r)["code"] == -32601


def test_method_of_another_revision(raw: Raw) -> None:
    sid = raw.initialize()
    r = raw.post({"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}, raw.session_headers(sid))
    assert error_of(r)["code"] == -32601


@pytest.mark.parametrize(
    "params",
    [{}, {"name": 5}, {"name": "add", "arguments": [1, 2]}],
)
def test_wrong_params(raw: Raw, params: dict[str, Any]) -> None:
    sid = raw.initialize()
    r = raw.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}, raw.session_headers(sid))
    err = error_of(r)
    assert err["code"] == -32602 and err["data"]["errors"]


def test_unknown_tool_and_resource(raw: Raw) -> None:
    sid = raw.initialize()
    h = raw.session_headers(sid)
    r = raw.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}}, h)
    assert error_of(r)["code"] == -32602
    r = raw.post({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "test://nothing"}}, h)
    err = error_of(r)
    assert err["code"] == -32002 and err["data"] == {"uri": "test://nothing"}


def test_bad_cursor(raw: Raw) -> None:
    sid = raw.initialize()
    r = raw.post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "garbage!"}}, raw.session_headers(sid)
    )
    assert error_of(r)["code"] == -32602
    # tasks/list of a tasks-capable session: a garbage cursor, and a well-formed one naming a huge offset, are
    # -32602 (the offset was once a -32603 and a logged traceback), through the server as through the test client.
    tasks = raw.initialize(capabilities={"tasks": {}})
    for bad in ("garbage!", cursor.encode(10**30, "tasks")):
        r = raw.post(
            {"jsonrpc": "2.0", "id": 2, "method": "tasks/list", "params": {"cursor": bad}}, raw.session_headers(tasks)
        )
        assert r.status_code == 200 and error_of(r)["code"] == -32602, (bad, r.text)


# -- HTTP level --------------------------------------------------------------------------------------


def test_oversized_body_declared(raw: Raw) -> None:
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (4 * 1024 * 1024 + 10) + b'"}}'
    r = raw.post(None, raw=big)
    assert r.status_code == 413 and error_of(r)["code"] == -32600


def test_oversized_body_chunked(raw: Raw) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
        for _ in range(5):
            yield b"a" * (1024 * 1024)
        yield b'"}}'

    r = raw.http.post(raw.url, content=chunks(), headers={"content-type": "application/json", "accept": ACCEPT})
    assert r.status_code == 413


def test_content_type_and_accept(raw: Raw) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert raw.post(ping, {"content-type": "text/plain"}).status_code == 415
    assert raw.post(ping, {"accept": "text/html"}).status_code == 406
    assert raw.post(ping, {"accept": "application/json"}).status_code == 406


def test_form_posts_of_api_clients_are_415_not_the_browsable_page(raw: Raw) -> None:
    """An API client's form-encoded POST (a bearer token, or MCP's Accept), and RFC 6750's form-encoded
    ``access_token`` body, get 415 with a JSON-RPC error; only a browser's form (HTML Accept, no
    Authorization) reaches the browsable page, where CSRF applies."""
    form = {"content-type": "application/x-www-form-urlencoded"}
    for headers, body in (
        ({**form, "authorization": "Bearer abc"}, b"jsonrpc=2.0&id=1&method=ping"),
        ({**form, "accept": ACCEPT}, b"jsonrpc=2.0&id=1&method=ping"),
        ({**form, "accept": "application/json"}, b"access_token=abc"),
        ({**form, "accept": "*/*"}, b"access_token=abc"),
    ):
        r = raw.post(None, headers, raw=body)
        assert r.status_code == 415, (headers, r.status_code, r.text[:200])
        assert r.headers["content-type"].startswith("application/json") and r.json()["error"]["code"] == -32600
    browser = raw.post(None, {**form, "accept": "text/html,application/xhtml+xml"}, raw=b"action=tools/list")
    assert browser.status_code == 403 and browser.headers["content-type"].startswith("text/html")


def test_http_method_not_allowed(raw: Raw) -> None:
    r = raw.http.put(raw.url, content=b"{}", headers={"content-type": "application/json"})
    assert r.status_code == 405 and "allow" in r.headers


@pytest.mark.parametrize(
    "headers",
    [{"origin": "http://evil.example.com"}, {"host": "evil.example.com"}, {"origin": "null"}],
)
def test_dns_rebinding(raw: Raw, headers: dict[str, str]) -> None:
    r = raw.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers)
    assert r.status_code == 403


def test_same_origin_allowed(raw: Raw, mcp_server: LiveServer) -> None:
    sid = raw.initialize()
    h = {**raw.session_headers(sid), "origin": f"http://127.0.0.1:{mcp_server.port}"}
    assert raw.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, h).status_code == 200


# -- sessions -------------------------------------------------------------------------------------------


def test_request_before_initialize(raw: Raw) -> None:
    r = raw.post({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
    assert r.status_code == 400 and error_of(r)["code"] == -32600 and r.json()["id"] == 4


def test_unknown_and_ended_session(raw: Raw) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert raw.post(ping, raw.session_headers("no-such-session")).status_code == 404
    sid = raw.initialize()
    h = raw.session_headers(sid)
    assert raw.post(ping, h).status_code == 200
    assert raw.http.delete(raw.url, headers=h).status_code == 200
    assert raw.post(ping, h).status_code == 404
    assert raw.http.delete(raw.url, headers=h).status_code == 404
    assert raw.http.get(raw.url, headers={**h, "accept": "text/event-stream"}).status_code == 404


def test_protocol_version_header_mismatch(raw: Raw) -> None:
    sid = raw.initialize("2025-11-25")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    r = raw.post(ping, {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"})
    assert r.status_code == 400 and error_of(r)["code"] == -32600
    r = raw.post(ping, {"mcp-session-id": sid, "mcp-protocol-version": "1999-01-01"})
    assert r.status_code == 400


def test_initialize_negotiates(raw: Raw) -> None:
    r = raw.post(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "1999-01-01",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        }
    )
    assert r.json()["result"]["protocolVersion"] == "2025-11-25"
    r = raw.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    assert r.status_code == 400 and error_of(r)["code"] == -32602  # capabilities/clientInfo are required


# -- cancellation and disconnects -------------------------------------------------------------------


def test_cancelled_request_gets_no_response(raw: Raw, mcp_server: LiveServer) -> None:
    sid = raw.initialize()
    h = raw.session_headers(sid)
    body = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/call",
        "params": {"name": "sleepy", "arguments": {"seconds": 20}, "_meta": {"progressToken": "p"}},
    }
    result: dict[str, Any] = {}

    def call() -> None:
        with httpx.Client(timeout=30) as c:
            resp = c.post(raw.url, json=body, headers={"accept": ACCEPT, **h})
            result["status"] = resp.status_code
            result["text"] = resp.text

    t = threading.Thread(target=call)
    started = time.monotonic()
    t.start()
    time.sleep(0.8)
    r = raw.post(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42, "reason": "test"}}, h
    )
    assert r.status_code == 202
    t.join(15)
    assert not t.is_alive() and time.monotonic() - started < 10
    messages = sse_messages(result["text"])
    assert messages and messages[0]["method"] == "notifications/progress", result
    assert not any(m.get("id") == 42 for m in messages)  # no response for a cancelled request


def test_client_disconnect_mid_stream(raw: Raw, mcp_server: LiveServer) -> None:
    sid = raw.initialize()
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "sleepy", "arguments": {"seconds": 5}, "_meta": {"progressToken": 1}},
        }
    ).encode()
    request = (
        f"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1:{mcp_server.port}\r\nContent-Type: application/json\r\n"
        f"Accept: {ACCEPT}\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection(("127.0.0.1", mcp_server.port), timeout=10) as s:
        s.sendall(request)
        first = s.recv(4096)
        assert b"200" in first.split(b"\r\n")[0]
    # The socket is gone mid-stream; the server carries on serving others.


def _hang_up_mid_body(port: int) -> None:
    """A POST announcing 100 bytes of body, 10 of them sent, then the socket closed."""
    head = (
        f"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: {ACCEPT}\r\nMCP-Protocol-Version: 2026-07-28\r\nContent-Length: 100\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head + b"\r\n" + b'{"jsonrpc"')


def test_a_client_gone_before_its_body_ends_gets_nothing_and_raises_nothing() -> None:
    """In process, the consumer the servers run: a disconnect while the body is read ends the request quietly."""
    import asyncio

    from django_mcp.transports.http import MCPConsumer

    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": b'{"jsonrpc"', "more_body": True}, {"type": "http.disconnect"}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp/",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"), (b"accept", ACCEPT.encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    asyncio.run(MCPConsumer.as_asgi()(scope, receive, send))  # raised CancelledError into the server before
    assert sent == [] and messages == []


def test_a_client_gone_before_its_body_ends_leaves_no_traceback_under_uvicorn(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """uvicorn logged "Exception in ASGI application" with a traceback for each such client (wrk ending a run)."""
    from tests.production.ops import start_uvicorn
    from tests.support.servers import server_env

    tmp = tmp_path_factory.mktemp("gone")
    server = start_uvicorn(server_env(tmp), tmp / "uvicorn.log")
    try:
        for _ in range(5):
            _hang_up_mid_body(server.port)
        raw = Raw(server)
        assert raw.modern("server/discover").status_code == 200  # and the server serves on
        time.sleep(0.3)  # the last hang-up reaches the consumer
        log = server.log.read_text()
        assert "Traceback" not in log and "Exception in ASGI application" not in log, log
    finally:
        server.stop()


# -- framing: every buffered reply says its length ---------------------------------------------------------


def assert_length_framed(r: httpx.Response, status: int) -> None:
    """``Content-Length`` equal to the body, no chunked encoding; none at all on a 204 (RFC 9110)."""
    assert r.status_code == status, r.text
    assert "transfer-encoding" not in r.headers, r.headers
    if status == 204:
        assert "content-length" not in r.headers and r.content == b""
    else:
        assert int(r.headers["content-length"]) == len(r.content), r.headers


def framed_replies(raw: Raw) -> None:
    """A result, an error, an accepted notification, a session's end and a preflight: each framed by length.

    Chunked replies cost the server a second write and a second TCP segment per request (the chunk and the
    terminator), about 7 % of a trivial call's rate on uvicorn (docs/performance.md).
    """
    assert_length_framed(raw.modern("tools/list"), 200)
    assert_length_framed(raw.post(None, raw=b"{not json"), 400)
    sid = raw.initialize()
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    assert_length_framed(raw.post(note, raw.session_headers(sid)), 202)
    assert_length_framed(raw.http.delete(raw.url, headers=raw.session_headers(sid)), 200)
    assert_length_framed(raw.http.options(raw.url), 204)


def test_replies_are_length_framed_under_daphne(raw: Raw) -> None:
    framed_replies(raw)


def test_replies_are_length_framed_under_uvicorn(tmp_path_factory: pytest.TempPathFactory) -> None:
    from tests.production.ops import start_uvicorn
    from tests.support.servers import server_env

    tmp = tmp_path_factory.mktemp("framed")
    server = start_uvicorn(server_env(tmp), tmp / "uvicorn.log")
    try:
        framed_replies(Raw(server))
    finally:
        server.stop()


# -- the stateless era ----------------------------------------------------------------------------------


def test_stateless_envelope_errors(raw: Raw) -> None:
    h = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    r = raw.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, h)
    assert r.status_code == 400 and error_of(r)["code"] == -32602 and r.json()["id"] == 1
    r = raw.modern("tools/list", **{"mcp_method": "tools/call"})
    assert r.status_code == 400 and error_of(r)["code"] == -32020
    r = raw.modern("tools/list", **{"mcp_method": "TOOLS/LIST"})
    assert r.status_code == 400 and error_of(r)["code"] == -32020
    r = raw.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}}, **{"mcp_name": "add"})
    assert r.status_code == 400 and error_of(r)["code"] == -32020


def test_stateless_unsupported_version(raw: Raw) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "server/discover",
        "params": {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}},
    }
    r = raw.post(body, {"mcp-protocol-version": "v999.0.0", "mcp-method": "server/discover"})
    assert r.status_code == 400
    err = error_of(r)
    assert err["code"] == -32022 and err["data"]["requested"] == "v999.0.0"
    discover = raw.modern("server/discover").json()["result"]
    assert set(err["data"]["supported"]) <= set(discover["supportedVersions"])
    # A header that disagrees with _meta is a mismatch, checked first.
    r = raw.post(body, {"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"})
    assert error_of(r)["code"] == -32020


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"])
def test_stateless_removed_methods_are_404(raw: Raw, method: str) -> None:
    params = {"uri": "test://static/hello"} if "subscribe" in method else {}
    if method == "logging/setLevel":
        params = {"level": "info"}
    r = raw.modern(method, params, rid="r1")
    assert r.status_code == 404
    assert error_of(r)["code"] == -32601 and r.json()["id"] == "r1"


def test_stateless_results_and_no_session(raw: Raw) -> None:
    r = raw.modern("tools/list")
    assert r.status_code == 200 and "mcp-session-id" not in r.headers
    result = r.json()["result"]
    assert result["resultType"] == "complete" and result["ttlMs"] == 0 and result["cacheScope"] == "private"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "django-mcp-tests"
    for verb in (raw.http.get, raw.http.delete):
        resp = verb(raw.url, headers={"mcp-protocol-version": "2026-07-28", "accept": ACCEPT})
        assert resp.status_code == 405


def test_stateless_missing_capability(raw: Raw) -> None:
    r = raw.modern("tools/call", {"name": "ask_name", "arguments": {}})
    assert r.status_code == 400
    err = error_of(r)
    assert err["code"] == -32021 and err["data"]["requiredCapabilities"] == {"elicitation": {}}


def test_stateless_input_required_and_tampering(raw: Raw) -> None:
    caps = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    h = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "ask_name"}

    def call(extra: dict[str, Any]) -> httpx.Response:
        params = {"name": "ask_name", "arguments": {}, "_meta": caps, **extra}
        return raw.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, h)

    first = call({}).json()["result"]
    assert first["resultType"] == "input_required"
    ((key, request),) = first["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    answer = {key: {"action": "accept", "content": {"name": "Grace"}}}
    done = call({"inputResponses": answer, "requestState": first["requestState"]}).json()["result"]
    assert done["content"][0]["text"] == "Hello, Grace!"
    tampered = first["requestState"][:-3] + ("AAA" if not first["requestState"].endswith("AAA") else "BBB")
    r = call({"inputResponses": answer, "requestState": tampered})
    assert error_of(r)["code"] == -32602


def test_stateless_notification_is_accepted(raw: Raw) -> None:
    r = raw.post(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"mcp-protocol-version": "2026-07-28"},
    )
    assert r.status_code == 202 and r.content == b""


def test_last_event_id_with_non_ascii_digits_is_400(raw: Raw, server_log: Any) -> None:
    """``²`` (byte 0xB2 in a latin-1 header) is a digit to ``str.isdigit`` but not to ``int()``."""
    sid = raw.initialize()
    for last in (b"abc_\xb2", b"gabc_1.\xb9", b"g0_\xb3.1"):
        headers = {**raw.session_headers(sid), "accept": "text/event-stream", "last-event-id": last}
        r = raw.http.get(raw.url, headers=headers)  # type: ignore[arg-type]  # httpx sends bytes as they are
        assert r.status_code == 400, (last, r.status_code, r.text)
        assert r.json()["error"]["code"] == -32600
