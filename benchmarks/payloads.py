"""Request bodies and headers for every case, and the floor's fixed replies.

Bodies carry ``__ID__`` where ``post.lua`` puts a per-request number, so that
concurrent requests on one session never share a JSON-RPC id.
"""

from __future__ import annotations

import json
from typing import Any

HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
ID = "__ID__"
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
CLIENT_INFO = {"name": "bench-client", "version": "1.0.0"}
CLIENT_CAPABILITIES: dict[str, Any] = {"roots": {"listChanged": True}}
META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    "io.modelcontextprotocol/clientCapabilities": CLIENT_CAPABILITIES,
}


def body(method: str, params: dict[str, Any] | None = None, request_id: Any = ID) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    text = json.dumps(message, separators=(",", ":"))
    return text.replace(f'"{ID}"', ID)  # a bare number after substitution


def initialize(request_id: Any = ID) -> str:
    params = {"protocolVersion": HANDSHAKE, "capabilities": CLIENT_CAPABILITIES, "clientInfo": CLIENT_INFO}
    return body("initialize", params, request_id)


INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
CALL = body("tools/call", {"name": "echo", "arguments": {"text": "hello"}})
LIST = body("tools/list", {})
# The progress token is the request id, as the SDK client does it.
PROGRESS_CALL = body(
    "tools/call", {"name": "progress_echo", "arguments": {"text": "hello"}, "_meta": {"progressToken": ID}}
).replace(f'"{ID}"', ID)
STATELESS_CALL = body("tools/call", {"name": "echo", "arguments": {"text": "hello"}, "_meta": META})
STATELESS_LIST = body("tools/list", {"_meta": META})
SYNC_CALL = body("tools/call", {"name": "echo_sync", "arguments": {"text": "hello"}})
STATELESS_SYNC_CALL = body("tools/call", {"name": "echo_sync", "arguments": {"text": "hello"}, "_meta": META})


def session_headers() -> dict[str, str]:
    return {**ACCEPT, "MCP-Protocol-Version": HANDSHAKE}


def stateless_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {**ACCEPT, "MCP-Protocol-Version": STATELESS, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


# What our server answers in the handshake era, as fixed results for the floor and the Django view.
_SCHEMA = {
    "properties": {"text": {"title": "Text", "type": "string"}},
    "required": ["text"],
    "type": "object",
}
FIXED_RESULTS: dict[str, Any] = {
    "tools/call": {"content": [{"type": "text", "text": "hello"}]},
    "tools/list": {
        "tools": [
            {"name": "echo", "inputSchema": _SCHEMA, "description": "Return the input."},
            {
                "name": "progress_echo",
                "inputSchema": _SCHEMA,
                "description": "Report progress once, then return the input (the reply becomes SSE).",
            },
            {
                "name": "echo_sync",
                "inputSchema": _SCHEMA,
                "description": "Return the input (a sync tool: it runs in the sync pool's threads).",
            },
        ]
    },
}


def fixed_reply(message: Any) -> dict[str, Any]:
    """The JSON-RPC response for a parsed request: a fixed result per method."""
    result = FIXED_RESULTS.get(message.get("method"), {})
    return {"jsonrpc": "2.0", "id": message.get("id"), "result": result}
