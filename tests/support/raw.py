"""The hand-driven HTTP client of the live-server tests: exactly the bytes and headers a test wants, and the
readers of what comes back (a JSON-RPC error, the messages of an SSE body)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.servers import LiveServer

ACCEPT = "application/json, text/event-stream"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (priming events without data skipped)."""
    out = []
    for block in text.split("\n\n"):
        data = "".join(line[5:].strip() for line in block.splitlines() if line.startswith("data:"))
        if data:
            out.append(json.loads(data))
    return out


def messages(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response, whether an SSE stream or one JSON body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return sse_messages(response.text)
    return [response.json()] if response.content else []


class Raw:
    """A hand-driven client: exactly the bytes and headers each test wants."""

    def __init__(self, server: LiveServer) -> None:
        self.url = server.url
        self.http = httpx.Client(timeout=20)

    def post(self, body: Any, headers: dict[str, str] | None = None, raw: bytes | None = None) -> httpx.Response:
        h = {"content-type": "application/json", "accept": ACCEPT, **(headers or {})}
        content = raw if raw is not None else json.dumps(body).encode()
        return self.http.post(self.url, content=content, headers=h)

    def initialize(self, revision: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> str:
        """A session whose client declared ``capabilities``, with notifications/initialized sent."""
        r = self.post(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": revision,
                    "capabilities": capabilities or {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert r.status_code == 200, r.text
        sid = r.headers["mcp-session-id"]
        assert sid.isascii() and sid.isprintable() and len(sid) >= 32
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.session_headers(sid, revision))
        return sid

    @staticmethod
    def session_headers(sid: str, revision: str = "2025-11-25") -> dict[str, str]:
        return {"mcp-session-id": sid, "mcp-protocol-version": revision}

    def modern(self, method: str, params: dict[str, Any] | None = None, rid: Any = 1, **headers: str) -> httpx.Response:
        body_params = {"_meta": META, **(params or {})}
        h = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
        name = (params or {}).get("name") or (params or {}).get("uri")
        if name:
            h["mcp-name"] = name
        h.update({k.replace("_", "-"): v for k, v in headers.items()})
        return self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": body_params}, h)


def error_of(r: httpx.Response) -> dict[str, Any]:
    body = r.json()
    assert "result" not in body
    return body["error"]  # type: ignore[no-any-return]
