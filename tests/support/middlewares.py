"""Middleware for the tests (``DJANGO_MCP["MIDDLEWARE"]``): each acts only on the tools named here."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import MiddlewareNotUsed

from django_mcp.exceptions import MCPError, Refused
from django_mcp.middleware import Call, CallNext
from django_mcp.telemetry.middleware import Telemetry

#: What ``Recorder`` saw, in process.
SEEN: list[dict[str, Any]] = []


class Recorder:
    """Records what every request looked like to a middleware, and how it ended."""

    def __init__(self, call_next: CallNext) -> None:
        self.call_next = call_next

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        response = await self.call_next(call)
        target = call.target
        SEEN.append(
            {
                "method": call.method,
                "name": call.name,
                "target": getattr(target, "name", None),
                "transport": call.transport,
                "user": getattr(call.user, "username", ""),
                "client_id": call.client_id,
                "scopes": call.scopes,
                "session_id": call.session_id,
                "task_id": call.task_id,
                "revision": call.revision,
                "order": list(call.state.get("order", [])),
                "error": (response or {}).get("error", {}).get("code"),
                "refused": getattr(call.refused, "status", None),
            }
        )
        return response


class Rewrite:
    """``echo``: the text upper-cased on the way in, a line naming the transport added on the way out."""

    def __init__(self, call_next: CallNext) -> None:
        self.call_next = call_next

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        call.state.setdefault("order", []).append("rewrite")
        if call.method != "tools/call" or call.name != "echo":
            return await self.call_next(call)
        call.arguments = {**call.arguments, "text": str(call.arguments.get("text", "")).upper()}
        response = await self.call_next(call)
        if response is not None and "result" in response:
            response["result"]["content"].append({"type": "text", "text": f"via {call.transport}"})
        return response


class SlowDown(Refused):
    status = 429
    code = -32000
    default_message = "Too many calls of limited_tool"

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(b"retry-after", b"7")]


class Refuse:
    """``forbidden_tool``: an MCPError; ``limited_tool``: a refusal with a status (429 + Retry-After);
    ``closed_tool``: one ``Refused`` instance, its code, status and headers given, no subclass."""

    def __init__(self, call_next: CallNext) -> None:
        self.call_next = call_next

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        call.state.setdefault("order", []).append("refuse")
        if call.name == "forbidden_tool":
            raise MCPError("Not on Sundays", {"why": "sunday"}, code=-32001)
        if call.name == "limited_tool":
            raise SlowDown(data={"retryAfter": 7})
        if call.name == "closed_tool":
            raise Refused("Closed for maintenance", code=-32000, status=503, headers=[(b"retry-after", b"600")])
        if call.name == "broken_tool":
            raise RuntimeError("a middleware bug")
        return await self.call_next(call)


class SyncStamp:
    """A sync middleware (``call_next`` is sync, it runs in a thread): stamps ``_meta`` of every result."""

    def __init__(self, call_next: Any) -> None:
        self.call_next = call_next

    def __call__(self, call: Call) -> dict[str, Any] | None:
        call.state.setdefault("order", []).append("sync")
        response: dict[str, Any] | None = self.call_next(call)
        if response is not None and isinstance(response.get("result"), dict):
            response["result"].setdefault("_meta", {})["example.com/stamped"] = True
        return response


class NotUsed:
    """Switched off: raises ``MiddlewareNotUsed``, so the chain leaves it out (and would fail if it ran)."""

    def __init__(self, call_next: CallNext) -> None:
        raise MiddlewareNotUsed

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        raise AssertionError("a middleware not used ran")


class TelemetrySubclass(Telemetry):
    """A project's own telemetry middleware (check E189 accepts subclasses)."""
