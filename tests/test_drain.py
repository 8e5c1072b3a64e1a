"""The SIGTERM drain in process: stop listening, serve what arrives on open connections, hand over when quiet.

The real-process half (daphne, uvicorn and gunicorn behind the guide's nginx, a rolling restart
under steady traffic with 0 errors) is tests/production/test_shutdown.py.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from channels.testing import HttpCommunicator
from django.test import override_settings

from django_mcp.runtime.drain import drain
from django_mcp.runtime.sockets import Listener, listeners_of, stop_listening
from django_mcp.state.hub import hub

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


@pytest.fixture(autouse=True)
def fresh_drain(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(drain, "_installed", True)  # never chain into the test process's own SIGTERM handler
    drain.reset()
    yield
    drain.reset()


def _echo(text: str) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}
    body["params"]["_meta"] = META  # type: ignore[index]
    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"echo"),
    ]
    return json.dumps(body).encode(), headers


async def _request(method: str, path: str, body: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    from tests.settings.asgi import (
        application,  # the project's application: get_asgi_application(), DrainMiddleware outermost
    )

    communicator = HttpCommunicator(application, method, path, body=body, headers=headers or [(b"host", b"127.0.0.1")])
    try:
        return await communicator.get_response(timeout=10)
    finally:
        await hub.stop()  # before pytest-asyncio closes this test's loop (routing.Hub.stop)


class _Server:
    """What the drain chains in front of under uvicorn: a handler bound to an object with ``servers``."""

    def __init__(self, servers: list[asyncio.AbstractServer]) -> None:
        self.servers = servers

    def handle_exit(self, sig: int, frame: Any) -> None:  # pragma: no cover - never called here
        pass


async def test_stop_listening_refuses_new_connections_and_keeps_open_ones() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(100):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        found = listeners_of(_Server([server]).handle_exit)
        assert [listener.socket.fileno() for listener in found] == [s.fileno() for s in server.sockets]
        await stop_listening(found)
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"still here")  # a connection accepted before goes on
        assert await asyncio.wait_for(reader.read(100), 5) == b"still here"
    finally:
        writer.close()
        server.close()


@pytest.mark.skipif(sys.platform != "linux", reason="the SYN filter is Linux's")
async def test_a_connection_queued_when_listening_stops_is_served_not_reset() -> None:
    """The kernel completed it and a request is on it, the server has not accepted it yet: closing the
    socket then would reset it (nginx: 502). New handshakes are held meanwhile, then refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    queued = socket.create_connection(("127.0.0.1", port))
    queued.sendall(b"POST / HTTP/1.1")  # sent, nobody has accepted the connection yet
    stopping = asyncio.ensure_future(stop_listening([Listener(sock, sock.close)]))
    await asyncio.sleep(0.05)
    late = socket.socket()
    late.settimeout(0.3)
    with pytest.raises(TimeoutError):  # its SYN is dropped: no handshake completes while the queue drains
        late.connect(("127.0.0.1", port))
    late.close()
    accepted, _ = sock.accept()  # the busy server gets round to it
    assert accepted.recv(100) == b"POST / HTTP/1.1"
    await asyncio.wait_for(stopping, 5)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
    accepted.close()
    queued.close()


def test_no_sockets_for_an_unknown_server() -> None:
    def handler(sig: int, frame: Any) -> None:  # pragma: no cover - never called
        pass

    for unknown in (signal.SIG_DFL, None, handler, _Server([]).handle_exit):
        assert listeners_of(unknown) == []


async def test_draining_while_still_listening_refuses_new_requests() -> None:
    """Under a server whose sockets could not be closed, new requests get a retryable 503 (nothing ran)."""
    drain.start()  # no signal: nothing to chain, nothing stops listening
    assert drain.refusing
    body, headers = _echo("late")
    response = await _request("POST", "/mcp/", body, headers)
    assert response["status"] == 503, response
    got = dict(response["headers"])
    assert got[b"retry-after"] == b"1" and got[b"connection"] == b"close"
    error = json.loads(response["body"])["error"]
    assert error["data"] == {"reason": "shutdown", "retryable": True, "retryAfter": 1}


@pytest.mark.django_db(transaction=True)  # the health probe runs its database check
async def test_draining_after_listening_stopped_serves_with_connection_close() -> None:
    """Requests still arriving on open connections are served, and told the connection closes: MCP and views."""
    drain.start()
    drain.stopped_listening = True  # what the SIGTERM handler does under daphne, uvicorn and gunicorn
    assert not drain.refusing
    body, headers = _echo("late")
    response = await _request("POST", "/mcp/", body, headers)
    assert response["status"] == 200, response
    assert json.loads(response["body"])["result"]["content"][0]["text"] == "late"
    assert dict(response["headers"])[b"connection"] == b"close"
    probe = await _request("GET", "/mcp/health")
    assert probe["status"] == 503 and json.loads(probe["body"])["status"] == "draining"
    assert dict(probe["headers"])[b"connection"] == b"close"


async def test_requests_are_counted_and_not_closed_outside_a_drain() -> None:
    body, headers = _echo("on time")
    before = drain.requests
    response = await _request("POST", "/mcp/", body, headers)
    assert response["status"] == 200 and b"connection" not in dict(response["headers"])
    assert drain.requests == before and drain.last_request > 0


def test_hand_over_waits_for_requests_and_a_quiet_spell() -> None:
    drain.start()
    drain.stopped_listening = True
    with override_settings(DJANGO_MCP={"SHUTDOWN_QUIET": 0.3}):
        drain.request_started()
        assert not drain._settled()  # a request in flight
        drain.request_finished()
        assert not drain._settled()  # it has only just come: the proxy may still hold the connection
        time.sleep(0.35)
        assert drain._settled()
    drain.stopped_listening = False  # refusing: nothing arrives to wait for, hand over once calls are done
    assert drain._settled()


@pytest.mark.django_db(transaction=True)  # the stream's session is a row
async def test_a_legacy_sse_stream_does_not_hold_the_drain() -> None:
    """The 2024-11-05 stream lasts until the server stops (closing it ends the session): it is not waited for."""
    from channels.testing import ApplicationCommunicator

    from tests.settings.asgi import application

    before = drain.requests
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "path": "/mcp/sse/",
        "raw_path": b"/mcp/sse/",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "headers": [(b"host", b"127.0.0.1"), (b"accept", b"text/event-stream")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }
    stream = ApplicationCommunicator(application, scope)
    try:
        await stream.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await stream.receive_output(10)
        assert start["type"] == "http.response.start" and start["status"] == 200, start
        first = await stream.receive_output(10)
        assert b"event: endpoint" in first["body"]
        assert drain.requests == before  # open, and not counted in flight
        await stream.send_input({"type": "http.disconnect"})
        await stream.wait(10)
    finally:
        # The stream joined the hub, which then runs its receive loop on this test's event loop. A Redis
        # layer's receive cancelled by a closing loop may never end (routing.Hub.stop): pytest-asyncio's
        # loop close then hung in teardown (pg-redis pass, intermittently). Stopped here, while the loop runs.
        await hub.stop()
