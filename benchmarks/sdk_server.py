"""The official SDK's ``MCPServer`` with the benchmark tools, as an ASGI app for uvicorn.

``SDK_MODE=stateless`` serves stateless HTTP with JSON replies; ``SDK_MODE=stateful``
serves sessions with SSE replies. Run: ``uvicorn benchmarks.sdk_server:app``.
"""

from __future__ import annotations

import os
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("sdk-bench", version="1.0", log_level="WARNING")


@mcp.tool()
async def echo(text: str) -> str:
    """Return the input."""
    return text


@mcp.tool()
async def progress_echo(text: str, ctx: Context) -> str:
    """Report progress once, then return the input (the reply becomes SSE)."""
    await ctx.report_progress(1, 1)
    return text


@mcp.tool()
def echo_sync(text: str) -> str:
    """Return the input (a sync tool: it runs in the sync pool's threads)."""
    return text


STATELESS = os.environ.get("SDK_MODE", "stateless") == "stateless"
app: Any = mcp.streamable_http_app(streamable_http_path="/mcp/", stateless_http=STATELESS, json_response=STATELESS)
