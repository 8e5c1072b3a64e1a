"""An async hand-driven MCP client (httpx): concurrent requests with exact timings and statuses."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import httpx

ACCEPT = "application/json, text/event-stream"
REVISION = "2025-11-25"
_ids = itertools.count(1)


class Reply:
    """One HTTP exchange: status, headers, the JSON-RPC messages of the body, and how long it took."""

    def __init__(self, response: httpx.Response, seconds: float) -> None:
        self.status = response.status_code
        self.headers = response.headers
        self.text = response.text
        self.seconds = seconds
        self.messages: list[dict[str, Any]] = []
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            for block in self.text.split("\n\n"):
                data = [line[5:].strip() for line in block.splitlines() if line.startswith("data:")]
                if data and data[0]:
                    self.messages.append(json.loads("".join(data)))
        elif self.text:
            try:
                parsed = json.loads(self.text)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                self.messages.append(parsed)

    @property
    def last(self) -> dict[str, Any]:
        return self.messages[-1] if self.messages else {}

    @property
    def result(self) -> Any:
        return self.last.get("result")

    @property
    def error(self) -> Any:
        return self.last.get("error")

    def __repr__(self) -> str:
        return f"<{self.status} {self.seconds:.2f}s {self.text[:300]!r}>"


class AsyncRaw:
    def __init__(self, url: str, timeout: float = 20) -> None:
        self.url = url
        self.http = httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=200))

    async def __aenter__(self) -> AsyncRaw:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def post(self, body: Any, headers: dict[str, str] | None = None) -> Reply:
        h = {"content-type": "application/json", "accept": ACCEPT, **(headers or {})}
        start = time.monotonic()
        response = await self.http.post(self.url, content=json.dumps(body).encode(), headers=h)
        return Reply(response, time.monotonic() - start)

    async def initialize(self) -> Reply:
        params = {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        return await self.post({"jsonrpc": "2.0", "id": next(_ids), "method": "initialize", "params": params})

    async def session(self) -> str:
        """A new, initialized session id."""
        reply = await self.initialize()
        assert reply.status == 200, reply
        sid = str(reply.headers["mcp-session-id"])
        done = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers(sid))
        assert done.status == 202, done
        return sid

    @staticmethod
    def headers(sid: str) -> dict[str, str]:
        return {"mcp-session-id": sid, "mcp-protocol-version": REVISION}

    async def request(
        self, sid: str, method: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
        if params is not None:
            body["params"] = params
        return await self.post(body, {**self.headers(sid), **(headers or {})})

    async def call(self, sid: str, tool: str, arguments: dict[str, Any] | None = None, **extra: Any) -> Reply:
        return await self.request(sid, "tools/call", {"name": tool, "arguments": arguments or {}, **extra})

    async def ping(self, sid: str) -> Reply:
        return await self.request(sid, "ping")
