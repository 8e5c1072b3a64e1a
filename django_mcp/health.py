"""``GET <ENDPOINT>health``: whether this worker can serve MCP now, for a load balancer to poll.

200 ``{"status": "ok", ...}`` when the worker reaches its database and its channel
layer, 503 with ``Retry-After`` while it drains (SIGTERM) or when a backend is down.
No authentication and nothing sensitive: backend states and three per-worker counts
(cached sessions, open streams, calls in flight) that help size and debug a worker.
Each check is bounded by ``HEALTH_TIMEOUT``, so a hung backend reads as down, not as
a hung probe.

A site with task tools also reports its task workers (``tasks``: queued and running MCP tasks,
how long the oldest queued one has waited, the newest worker heartbeat). Work that no worker
picks up makes the status ``degraded``, still 200: this web worker serves fine, and a balancer
must not take it out of rotation for a missing task worker; a monitor alerts on it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from django.db import connection

from .auth import token_cache
from .conf import mcp_settings
from .runtime.drain import RETRY_AFTER, drain
from .runtime.sync_pool import run_bookkeeping
from .server import servers
from .state.hub import channel_layer
from .state.sessions import store
from .tasks import framework
from .tasks import store as task_store
from .transports.base import open_streams

logger = logging.getLogger("django_mcp")

#: The group a health probe sends to: nobody listens, so the send only proves the layer answers.
_PROBE_GROUP = "mcp.health"


def _database_ok() -> None:
    """One ``SELECT 1`` (the bookkeeping pool runs it between two ``close_old_connections()``)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


#: The database probe in flight: a hung database must not pile up one blocked thread per probe.
_probe: asyncio.Future[None] | None = None


async def check_database() -> str:
    """``SELECT 1`` on the bookkeeping pool, one probe at a time (later probes wait on the same one)."""
    global _probe

    if _probe is None or _probe.done() or _probe.get_loop() is not asyncio.get_running_loop():
        _probe = asyncio.ensure_future(run_bookkeeping(_database_ok))
        _probe.add_done_callback(lambda done: done.cancelled() or done.exception())
    try:
        await asyncio.wait_for(asyncio.shield(_probe), float(mcp_settings.HEALTH_TIMEOUT))
    except Exception as exc:  # noqa: BLE001 - any failure means "down"; the reason goes to the log
        logger.warning("django_mcp health: database check failed: %r", exc)
        return "down"
    return "ok"


async def check_channel_layer() -> str:
    layer = channel_layer(mcp_settings.CHANNEL_LAYER)
    if layer is None:
        return "none"
    try:
        await asyncio.wait_for(
            layer.group_send(_PROBE_GROUP, {"type": "mcp.health"}), float(mcp_settings.HEALTH_TIMEOUT)
        )
    except Exception as exc:  # noqa: BLE001 - as above
        logger.warning("django_mcp health: channel layer check failed: %r", exc)
        return "down"
    return "ok"


def _task_workers() -> dict[str, Any]:
    report = task_store.queue_report()
    report["busy_workers"] = framework.busy_workers(mcp_settings.TASK_BACKEND)
    return report


async def check_task_workers() -> dict[str, Any]:
    """``tasks.store.queue_report`` on the bookkeeping pool within ``HEALTH_TIMEOUT``; ``unknown`` if it cannot."""
    try:
        return dict(await asyncio.wait_for(run_bookkeeping(_task_workers), float(mcp_settings.HEALTH_TIMEOUT)))
    except Exception as exc:  # noqa: BLE001 - the database check reports an outage; this only cannot tell
        logger.warning("django_mcp health: task worker check failed: %r", exc)
        return {"status": "unknown"}


async def report() -> tuple[int, dict[str, Any]]:
    """The status code and body of one probe."""
    database, layer = await asyncio.gather(check_database(), check_channel_layer())
    store.prune()
    body: dict[str, Any] = {
        "status": "ok",
        "checks": {"database": database, "channel_layer": layer},
        "worker": {
            "sessions_cached": len(store),
            "tokens_cached": len(token_cache.cache),
            "open_streams": open_streams(),
            "requests_in_flight": drain.in_flight(),
        },
    }
    if servers and database == "ok":  # a site with task tools: are its tasks being run?
        body["tasks"] = await check_task_workers()
    if drain.draining:
        body["status"] = "draining"
    elif "down" in (database, layer):
        body["status"] = "unavailable"
    elif body.get("tasks", {}).get("status") == "degraded":
        body["status"] = "degraded"  # still 200: this worker serves; its tasks wait for a task worker
    return (200 if body["status"] in ("ok", "degraded") else 503), body


class HealthEndpoint:
    """A plain ASGI application (no consumer machinery: a probe should cost next to nothing)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        drain.install()
        method = scope.get("method", "GET")
        if method not in ("GET", "HEAD"):
            await self._send(send, 405, {"status": "method not allowed"}, [(b"allow", b"GET, HEAD")])
            return
        status, body = await report()
        extra = [] if status == 200 else [(b"retry-after", str(RETRY_AFTER).encode())]
        await self._send(send, status, body, extra, head=method == "HEAD")

    async def _send(
        self, send: Any, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]], head: bool = False
    ) -> None:
        data = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"cache-control", b"no-store"),
            (b"content-length", str(len(data)).encode()),
            *extra,
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else data})


__all__ = ["HealthEndpoint", "report"]
