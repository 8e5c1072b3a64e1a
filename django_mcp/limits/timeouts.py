"""Timeouts: a ``tools/call`` that outlives its deadline answers a tool error the model can read.

The deadline is the tool's ``timeout=``, else ``TOOL_TIMEOUT``; a task's run uses ``TASK_TIMEOUT``,
and without one runs until its task expires (nobody could fetch a later result). The call that
creates a task is not timed: it only stores the task, and its run is. At the deadline
the call is cancelled as a client's cancellation would be: an async tool gets ``CancelledError``
and ``ctx.cancelled`` turns true. A sync tool's thread cannot be stopped from outside: its caller
gets the answer at the deadline, ``ctx.cancelled`` turns true for a tool that looks, and its slot
of the sync pool stays taken until the thread returns (``django_mcp.runtime.sync_pool``), so a stuck tool
never admits more threads than the pool has.

The answer is an ``isError`` result, not a JSON-RPC error: a timeout is the tool's failure, which
the model can read and act on (retry with less work, tell the user), as any other tool error.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from django.utils import timezone

from ..conf import mcp_settings
from ..middleware import Call, CallNext
from ..runtime.engine import engine
from ..runtime.timers import Later, uncancel
from .middleware import becomes_task


def deadline(call: Call) -> float | None:
    """Seconds this call may run, or None for no limit (a call that only creates a task: its run is timed)."""
    tool = call.target
    if tool is None or (call.transport != "task" and becomes_task(tool, call)):
        return None
    seconds = tool.timeout
    if seconds is None:
        if call.transport == "task":
            seconds = mcp_settings.TASK_TIMEOUT
            expires = getattr(call.exchange, "expires", None)
            if seconds is None and expires is not None:
                seconds = max(0.001, (expires - timezone.now()).total_seconds())
        else:
            seconds = mcp_settings.TOOL_TIMEOUT
    return None if seconds is None or math.isinf(seconds) else float(seconds)


def timed_out(call: Call, seconds: float) -> dict[str, Any]:
    """The tool error a timed-out call answers, shaped for the call's revision."""
    text = f"Tool {call.name!r} timed out after {seconds:g} s and was stopped; its result is lost."
    return engine.answer(call.exchange, {"content": [{"type": "text", "text": text}], "isError": True})


class Timeouts:
    """Stops a ``tools/call`` at its deadline and answers a timed-out tool error (``isError``)."""

    keeps_replies = True  # never edits a reply an inner middleware returned (Call.encode)

    def __init__(self, call_next: CallNext) -> None:
        self.call_next = call_next
        #: One timer per deadline length (``Later``): a call that ends in time costs a dict insert and delete,
        #: not a timer in the loop's heap. Task runs' deadlines (until the task expires) vary: a timer each.
        self._timers: dict[float, Later] = {}

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        if call.method != "tools/call":
            return await self.call_next(call)
        seconds = deadline(call)
        if seconds is None:
            return await self.call_next(call)
        task = asyncio.current_task()
        assert task is not None
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        timers = self._timers
        later = timers.get(seconds)
        handle: asyncio.TimerHandle | None = None
        if later is not None:
            later.add(call, expire)
        elif call.transport == "task" or len(timers) >= 64:
            handle = asyncio.get_running_loop().call_later(seconds, expire)
        else:
            later = timers[seconds] = Later(seconds)
            later.add(call, expire)
        try:
            response = await self.call_next(call)
        except asyncio.CancelledError:
            if not expired:
                raise  # cancelled from outside (shutdown, the client): not ours to answer
            uncancel(task)
            call.exchange.cancelled.set()  # a sync tool still running can see it and stop
            return timed_out(call, seconds)
        finally:
            if later is not None:
                later.discard(call)
            elif handle is not None:
                handle.cancel()
        if expired:  # the inner code swallowed the cancellation (a client's cancel answers None)
            uncancel(task)
            if response is not None:
                call.exchange.cancelled.set()
                return timed_out(call, seconds)
        return response


__all__ = ["Timeouts", "deadline", "timed_out"]
