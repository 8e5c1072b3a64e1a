"""Rate limits and task quotas: a middleware that refuses a caller over its limits with 429 + ``Retry-After``.

What counts (``RATE_LIMITS``, docs/operations.md): every request through the door, per user (or, for
an anonymous caller, per client address), per OAuth client, and each caller's calls of one tool
(``@site.tool(rate_limit=...)`` or ``RATE_LIMITS["tool"]``). A task's run is not counted again: its
``tools/call`` was. Counters are fixed windows on Django's cache (``RATE_LIMIT_CACHE``), leased in
slices so the hot path does no I/O (``counting``).

Task quotas (``TASK_LIMITS``) apply to a ``tools/call`` that becomes an MCP task: the tasks created
per period, and the tasks queued or running at once per user and per OAuth client. The database is
the truth for the latter (``working``/``input_required`` rows); a shared counter of admissions in
flight makes concurrent calls see each other, so a flood of simultaneous calls cannot pass the cap
before its rows exist. Anonymous callers (development mode, stdio) have no task quota.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from ..conf import DEFAULTS, mcp_settings
from ..exceptions import RateLimited
from ..middleware import Call, CallNext
from ..protocol.jsonrpc import ProtocolError
from ..runtime.sync_pool import run_bookkeeping
from ..server import hooks
from ..tasks import store
from .counting import cache_key, counters, release, reserve
from .rates import Rate, parse
from .sizes import capped

#: Seconds an admission in flight stays counted if its worker dies before releasing it.
ADMISSION_TTL = 120


def _rates(value: Any) -> tuple[Rate, ...]:
    return parse(value) if value else ()


@dataclass(frozen=True)
class Rules:
    """``RATE_LIMITS`` and ``TASK_LIMITS`` parsed once (each key left out keeps its default)."""

    user: tuple[Rate, ...]
    client: tuple[Rate, ...]
    tool: tuple[Rate, ...]
    anonymous: tuple[Rate, ...]
    active_per_user: int | None
    active_per_client: int | None
    created_per_user: tuple[Rate, ...]
    created_per_client: tuple[Rate, ...]

    @classmethod
    def read(cls, rate_limits: Any, task_limits: Any) -> Rules:
        r = {**DEFAULTS["RATE_LIMITS"], **rate_limits}
        t = {**DEFAULTS["TASK_LIMITS"], **task_limits}
        return cls(
            _rates(r["user"]),
            _rates(r["client"]),
            _rates(r["tool"]),
            _rates(r["anonymous"]),
            t["active_per_user"],
            t["active_per_client"],
            _rates(t["created_per_user"]),
            _rates(t["created_per_client"]),
        )


_read: tuple[Any, Any, Rules | None] = (None, None, None)


def rules() -> Rules:
    """The limits in force, parsed again only when the settings change."""
    global _read
    rate_limits, task_limits = mcp_settings.RATE_LIMITS, mcp_settings.TASK_LIMITS
    if _read[0] is not rate_limits or _read[1] is not task_limits or _read[2] is None:
        _read = (rate_limits, task_limits, Rules.read(rate_limits, task_limits))
    assert _read[2] is not None
    return _read[2]


async def spend(limit: str, key: str, rates: tuple[Rate, ...]) -> None:
    """Count one call of ``key`` against each of ``rates``; ``RateLimited`` naming ``limit`` when one is spent."""
    alias = mcp_settings.RATE_LIMIT_CACHE
    for rate in rates:
        taken = counters.try_take(key, rate, time.time())
        if taken is True:
            continue
        wait = int(taken) if taken is not False else await counters.take(alias, key, rate)
        if wait is not None:
            raise RateLimited(limit, wait, f"Rate limit exceeded: {rate.amount} per {_period(rate)} ({limit})")


def _period(rate: Rate) -> str:
    for unit, seconds in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if rate.seconds % seconds == 0:
            n = rate.seconds // seconds
            return unit if n == 1 else f"{n} {unit}s"
    return "second" if rate.seconds == 1 else f"{rate.seconds} seconds"


class Limits:
    """Refuses a caller over ``RATE_LIMITS`` or ``TASK_LIMITS`` with ``RateLimited`` (429 + ``Retry-After``),
    and replaces a result over ``MAX_RESULT_BYTES`` with an error that says so (``sizes``)."""

    keeps_replies = True  # never edits a reply an inner middleware returned (Call.encode)

    def __init__(self, call_next: CallNext) -> None:
        self.call_next = call_next

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        if call.transport == "task":  # a task's run: counted when its tools/call created it; its result capped
            return capped(call, await self.call_next(call))
        return capped(call, await self._admit(call))

    async def _admit(self, call: Call) -> dict[str, Any] | None:
        """The rest of the chain, once the call is within every limit."""
        limits = rules()
        user = call.user
        who: str | None = None
        if user is not None and user.is_authenticated:
            who = f"u{user.pk}"
            if limits.user:
                await spend("user", who, limits.user)
        elif call.address is not None:
            who = f"a{call.address}"
            if limits.anonymous:
                await spend("anonymous", who, limits.anonymous)
        # else stdio or the in-process test client: one local caller, nothing to tell apart
        if call.client_id and limits.client:
            await spend("client", f"c{call.client_id}", limits.client)
        if call.method != "tools/call":
            return await self.call_next(call)
        tool = call.target
        if tool is None:
            return await self.call_next(call)
        own = tool.rate_limit
        tool_rates = parse(own) if own else limits.tool
        if tool_rates and who is not None:
            await spend("tool", f"t{tool.name}:{who}", tool_rates)
        if not becomes_task(tool, call):
            return await self.call_next(call)
        return await self._task(call, limits)

    async def _task(self, call: Call, limits: Rules) -> dict[str, Any] | None:
        """A call that becomes a task: the tasks at once, then the tasks created per period (``TASK_LIMITS``).

        In this order so that calls refused for a full cap (a client retrying until a place frees)
        do not spend the period's count of tasks created.
        """
        user = call.user
        user_id = user.pk if user is not None and user.is_authenticated else None
        client_id = call.client_id
        user_cap = limits.active_per_user if user_id is not None else None
        client_cap = limits.active_per_client if client_id else None
        alias = mcp_settings.RATE_LIMIT_CACHE
        held: list[str] = []
        try:
            if user_cap is not None or client_cap is not None:
                admitting = {}
                for who, cap in ((f"u{user_id}", user_cap), (f"c{client_id}", client_cap)):
                    if cap is not None:
                        key = cache_key("tasks-admitting", who)
                        count = await _hold(alias, key)
                        if count is not None:
                            held.append(key)
                        admitting[who] = count or 1
                by_user, by_client = await run_bookkeeping(
                    store.active_counts, user_id if user_cap is not None else None, client_id if client_cap else ""
                )
                # Others admitted meanwhile (counted once here, maybe also as rows: never too few).
                if user_cap is not None and by_user + admitting[f"u{user_id}"] - 1 >= user_cap:
                    raise _busy("tasks.active.user", user_cap)
                if client_cap is not None and by_client + admitting[f"c{client_id}"] - 1 >= client_cap:
                    raise _busy("tasks.active.client", client_cap)
            if user_id is not None and limits.created_per_user:
                await spend("tasks.created.user", f"n{user_id}", limits.created_per_user)
            if client_id and limits.created_per_client:
                await spend("tasks.created.client", f"m{client_id}", limits.created_per_client)
            return await self.call_next(call)  # the task's row exists (or the call failed) when this returns
        finally:
            for key in held:
                await _release(alias, key)


def becomes_task(tool: Any, call: Call) -> bool:
    """Whether this ``tools/call`` is to run as an MCP task (the handler decides the same way, after us)."""
    tasks = hooks.tasks
    if tasks is None or (tool.task_support is None and "task" not in call.params):
        return False
    if getattr(call.exchange, "in_task", False):
        return False
    try:
        return bool(tasks.wants_task(tool, call.params, call.exchange))
    except ProtocolError:  # the handler refuses it with this same error
        return False


def _busy(limit: str, cap: int) -> RateLimited:
    wait = max(1, math.ceil(mcp_settings.TASK_POLL_INTERVAL_MS / 1000))
    who = "user" if limit.endswith("user") else "OAuth client"
    return RateLimited(limit, wait, f"Too many tasks: this {who} has {cap} queued or running; retry when one ends")


async def _hold(alias: str, key: str) -> int | None:
    """Count an admission in flight; how many there are now, or None when the cache cannot be reached."""
    try:
        return int(await run_bookkeeping(reserve, alias, key, 1, ADMISSION_TTL, refresh=True))
    except Exception:  # noqa: BLE001 - fail open: the database count still holds the cap for calls in turn
        return None


async def _release(alias: str, key: str) -> None:
    try:
        await run_bookkeeping(release, alias, key, ADMISSION_TTL)
    except Exception:  # noqa: BLE001 - the admission expires with its key
        pass


__all__ = ["Limits", "Rules", "becomes_task", "rules", "spend"]
