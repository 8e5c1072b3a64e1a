"""A middleware that does nothing: the cost of the chain itself, apart from what a middleware does."""

from __future__ import annotations

from typing import Any

from django_mcp.middleware import Call, CallNext


class Passthrough:
    def __init__(self, call_next: CallNext) -> None:
        self.call_next = call_next

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        return await self.call_next(call)
