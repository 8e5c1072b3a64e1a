"""Task status notifications, sent through the channel layer from whichever process changed the task.

2026-07-28: ``notifications/tasks`` (a ``DetailedTask``) on the ``subscriptions/listen``
streams that asked for the task's id; each task has a layer group of its own.
2025-11-25: ``notifications/tasks/status`` (a ``Task``) on the creating session's GET
stream, stored in the event store like every session notification.

Optional by both specs, so a layer outage is logged and clients keep polling. The
task worker (``db_worker``) publishes straight to the layer: with the in-memory
layer, which crosses no process, only ``tasks/get`` shows its changes.
"""

from __future__ import annotations

import logging

from ..models import MCPTask
from ..protocol import jsonrpc
from ..protocol.versions import at_least, is_stateless
from ..runtime.unavailable import Unavailable
from ..state.hub import hub
from . import store

logger = logging.getLogger("django_mcp")


def task_group(task_id: str) -> str:
    """The layer group of one task's listen streams (ids are URL-safe base64: valid group names)."""
    return f"mcp.t.{task_id}"


async def announce(row: MCPTask) -> None:
    """Tell the task's listeners its current state; never raises."""
    try:
        if is_stateless(row.protocol_version):
            await hub.publish(task_group(row.pk), {"kind": "task", "task": store.task_v2(row, detailed=True)})
        elif row.session and at_least(row.protocol_version, "2025-11-25"):
            message = jsonrpc.notification_message("notifications/tasks/status", store.task_v1(row))
            await hub.notify_session(row.session, message)
    except Unavailable as exc:  # optional news: polling still tells the client
        logger.warning("django_mcp: status of task %s not announced (%s)", row.pk[:8], exc)
