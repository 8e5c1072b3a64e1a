"""Raw HTTP clients for the task tests: the stateless 2026-07-28 wire and a 2025-11-25 session."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from django_mcp.tasks import EXTENSION, RELATED_TASK
from tests.support.raw import messages

ACCEPT = "application/json, text/event-stream"
#: Capabilities of a 2026-07-28 client that declares the tasks extension (and can answer elicitations).
TASKS = {"extensions": {EXTENSION: {}}, "elicitation": {}}
TERMINAL = ("completed", "failed", "cancelled")

__all__ = ["ACCEPT", "RELATED_TASK", "TASKS", "TERMINAL", "Modern", "Session"]


class Modern:
    """The stateless 2026-07-28 wire: capabilities in every request's ``_meta``, Mcp-* headers."""

    def __init__(self, url: str, caps: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.caps = TASKS if caps is None else caps
        self.http = httpx.Client(timeout=30, headers=headers)

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON-RPC response (``result`` or ``error``)."""
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": self.caps,
            "io.modelcontextprotocol/clientInfo": {"name": "task-tests", "version": "1"},
        }
        params = {**(params or {}), "_meta": meta}
        headers = {"content-type": "application/json", "accept": ACCEPT, "mcp-protocol-version": "2026-07-28"}
        headers["mcp-method"] = method
        name = params.get("name") if method == "tools/call" else params.get("taskId")
        if isinstance(name, str):
            headers["mcp-name"] = name
        r = self.http.post(
            self.url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
        )
        assert r.status_code < 500, r.text
        (message,) = [m for m in messages(r) if m.get("id") == 1]
        return message

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message = self.rpc(method, params)
        assert "result" in message, message
        return dict(message["result"])

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message = self.rpc(method, params)
        assert "error" in message, message
        return dict(message["error"])

    def start(self, tool: str, **arguments: Any) -> str:
        created = self.result("tools/call", {"name": tool, "arguments": arguments})
        assert created["resultType"] == "task", created
        return str(created["taskId"])

    def get(self, task_id: str) -> dict[str, Any]:
        return self.result("tasks/get", {"taskId": task_id})

    def wait(
        self, task_id: str, until: tuple[str, ...] = TERMINAL, timeout: float = 20, every: float = 0.1
    ) -> dict[str, Any]:
        """Poll ``tasks/get`` every ``every`` seconds until the task's status is one of ``until``."""
        deadline = time.monotonic() + timeout
        while True:
            task = self.get(task_id)
            if task["status"] in until:
                return task
            assert time.monotonic() < deadline, f"task still {task} after {timeout}s"
            time.sleep(every)


class Session:
    """A 2025-11-25 session (initialize, Mcp-Session-Id) over raw HTTP, answering server requests on a stream."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, capabilities: dict[str, Any] | None = None):
        self.url = url
        self.http = httpx.Client(timeout=30, headers=headers)
        self._id = 0
        self.sid = ""
        init = self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}, "tasks": {}} if capabilities is None else capabilities,
                "clientInfo": {"name": "task-tests", "version": "1"},
            },
        )
        self.initialize = init["result"]
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}).close()

    def _headers(self) -> dict[str, str]:
        h = {"content-type": "application/json", "accept": ACCEPT, "mcp-protocol-version": "2025-11-25"}
        if self.sid:
            h["mcp-session-id"] = self.sid
        return h

    def _post(self, body: Any) -> httpx.Response:
        return self.http.post(self.url, json=body, headers=self._headers())

    def request(
        self, method: str, params: dict[str, Any] | None = None, answer: Callable[[dict[str, Any]], Any] | None = None
    ) -> dict[str, Any]:
        """Send a request; the response. Server requests on its stream go to ``answer`` (its result is POSTed)."""
        self._id += 1
        rid = self._id
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        with self.http.stream("POST", self.url, json=body, headers=self._headers()) as r:
            assert r.status_code == 200, (r.status_code, r.read())
            if "mcp-session-id" in r.headers:
                self.sid = r.headers["mcp-session-id"]
            if not r.headers.get("content-type", "").startswith("text/event-stream"):
                return dict(json.loads(r.read()))
            data: list[str] = []
            for line in r.iter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].strip())
                    continue
                if line or not data:
                    continue
                joined, data = "".join(data), []
                if not joined:  # a priming event (an id to resume from, no message)
                    continue
                message = json.loads(joined)
                if "method" in message and "id" in message:  # the server asks: answer on a POST of our own
                    assert answer is not None, message
                    reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
                    assert self._post(reply).status_code == 202
                elif message.get("id") == rid:
                    return dict(message)
        raise AssertionError(f"{method}: the stream ended without a response")

    def result(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        message = self.request(method, params, **kw)
        assert "result" in message, message
        return dict(message["result"])

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message = self.request(method, params)
        assert "error" in message, message
        return dict(message["error"])

    def start(self, tool: str, ttl: int | None = 60_000, **arguments: Any) -> dict[str, Any]:
        """``tools/call`` with a ``task`` parameter; the ``Task``."""
        task = {} if ttl is None else {"ttl": ttl}
        created = self.result("tools/call", {"name": tool, "arguments": arguments, "task": task})
        return dict(created["task"])
