"""Registered on the default site by django_mcp's autodiscovery (``<app>.mcp`` modules)."""

from __future__ import annotations

from django_mcp import Context, site


@site.tool
async def echo(text: str) -> str:
    """Return the input."""
    return text


@site.tool
async def progress_echo(ctx: Context, text: str) -> str:
    """Report progress once, then return the input (the reply becomes SSE)."""
    await ctx.report_progress(1, 1)
    return text


@site.tool
def echo_sync(text: str) -> str:
    """Return the input (a sync tool: it runs in the sync pool's threads)."""
    return text
