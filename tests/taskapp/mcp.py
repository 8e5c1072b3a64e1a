"""Every kind of tool the package makes, declared as a task: sync and async functions, a view, a DRF view."""

from __future__ import annotations

import asyncio
import time

from django_mcp import Context, site
from tests.drfapp import views as drf_views

from . import views


@site.tool(task="optional", title="Count slowly", annotations={"readOnlyHint": True})
async def count_slowly(ctx: Context, steps: int = 3, delay: float = 0.4) -> str:
    """Progress messages become the task's statusMessage."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
        await asyncio.sleep(delay)
    return f"counted to {steps} in task {ctx.task_id is not None}"


@site.tool(task="optional", title="Add slowly", annotations={"readOnlyHint": True})
def add_slowly(ctx: Context, a: int, b: int, delay: float = 0.2) -> int:
    """A sync tool in a task (in the worker's sync pool, in a transaction with ATOMIC_TOOL_CALLS)."""
    time.sleep(delay)
    ctx.check_cancelled()
    return a + b


site.register_view(views.shout, arguments={"text": str}, task="optional", title="Shout")
site.register_drf(drf_views.ping, name="ping_task", task="required", title="Ping as a task")
