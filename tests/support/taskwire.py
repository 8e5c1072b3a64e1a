"""2026-07-28 requests with the tasks extension, over HTTP, for the task tests."""

from __future__ import annotations

import time
from typing import Any

import httpx

EXTENSION = "io.modelcontextprotocol/tasks"
ENDED = ("completed", "failed", "cancelled")


def meta(extension: bool = True) -> dict[str, Any]:
    """The per-request ``_meta`` of a 2026-07-28 client, declaring the tasks extension or not."""
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}} if extension else {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }


def headers(method: str, name: str | None = None) -> dict[str, str]:
    """The headers 2026-07-28 requires (``Mcp-Name``: the tool, or the task id for ``tasks/*``)."""
    h = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if name is not None:
        h["mcp-name"] = name
    return h


def post(
    url: str, method: str, params: dict[str, Any], name: str | None = None, extension: bool = True
) -> dict[str, Any]:
    """One request; the JSON-RPC response."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta(extension)}}
    r = httpx.post(url, json=body, headers=headers(method, name), timeout=10)
    assert r.headers.get("content-type", "").startswith("application/json"), r.text
    return r.json()  # type: ignore[no-any-return]


def until_ended(url: str, task_id: str, seen: list[str] | None = None, timeout: float = 30) -> dict[str, Any]:
    """Poll ``tasks/get`` until the task ends (``seen`` collects the status messages on the way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = post(url, "tasks/get", {"taskId": task_id}, task_id)["result"]
        if seen is not None and task.get("statusMessage"):
            seen.append(task["statusMessage"])
        if task["status"] in ENDED:
            return task  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"task {task_id} did not end in {timeout}s")
