"""``MAX_RESULT_BYTES``: a result larger than the cap is replaced by an error that says so, never truncated.

A ``tools/call`` result becomes a tool error (``isError``) naming the size and the cap, which the
model can read; ``resources/read`` and ``prompts/get`` get a JSON-RPC error with the same figures.
A task's run goes through the same chain, so an oversized task result is never stored either.
The size is that of the reply as it goes on the wire (the result's JSON and the few dozen bytes of
the JSON-RPC envelope around it). Those bytes are made here once and, through ``Call.encode``,
carried on to the audit record and the transport. The ``Limits`` middleware applies it (a cap is a
limit: one middleware, one hop fewer per request).
"""

from __future__ import annotations

from typing import Any

from ..conf import mcp_settings
from ..exceptions import MCPError
from ..middleware import Call
from ..runtime.engine import engine

#: The methods whose results are measured.
MEASURED = frozenset({"tools/call", "resources/read", "prompts/get"})


class ResultTooLarge(MCPError):
    code = -32603
    default_message = "Result too large"


def capped(call: Call, response: dict[str, Any] | None) -> dict[str, Any] | None:
    """``response``, or the error that replaces a result over ``MAX_RESULT_BYTES`` (``ResultTooLarge`` raised)."""
    cap = mcp_settings.MAX_RESULT_BYTES
    if cap is None or response is None or call.method not in MEASURED:
        return response
    if not isinstance(response.get("result"), dict):
        return response
    response, raw = call.encode(response)
    size = len(raw)
    if size <= cap:
        return response
    what = f"{call.name!r}" if call.name else "the request"
    text = f"The result of {what} is {size} bytes, over the server's limit of {cap} bytes (MAX_RESULT_BYTES)"
    if call.method == "tools/call":
        error = {"content": [{"type": "text", "text": f"{text}; ask for less."}], "isError": True}
        return engine.answer(call.exchange, error)
    raise ResultTooLarge(text, {"reason": "result_too_large", "size": size, "limit": cap})


__all__ = ["MEASURED", "ResultTooLarge", "capped"]
