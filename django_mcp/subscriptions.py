"""2026-07-28 ``subscriptions/listen``: which notifications a listen stream agreed to carry.

Shared by every transport that serves listen streams (HTTP, stdio): the filter
turns the hub's broadcasts into the notifications the client opted into, each
stamped with the subscription id, and builds the acknowledgement that opens the
stream.
"""

from __future__ import annotations

from typing import Any

from .protocol import jsonrpc
from .routing import BROADCAST

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
_FLAGS = {"tools": "toolsListChanged", "prompts": "promptsListChanged", "resources": "resourcesListChanged"}


class ListenFilter:
    def __init__(self, request: jsonrpc.Request) -> None:
        wanted = (request.params or {}).get("notifications") or {}
        self.honoured: dict[str, Any] = {f: True for f in _FLAGS.values() if wanted.get(f) is True}
        self.uris = [u for u in wanted.get("resourceSubscriptions") or [] if isinstance(u, str)]
        if self.uris:
            self.honoured["resourceSubscriptions"] = self.uris
        asked = wanted.get("taskIds")
        self.task_ids = [t for t in asked if isinstance(t, str)] if isinstance(asked, list) else []
        self.meta = {SUBSCRIPTION_ID: request.id}

    @property
    def groups(self) -> list[str]:
        """The hub groups this stream listens on: the broadcasts, and each task it follows."""
        from .tasks.notify import task_group

        return [BROADCAST, *(task_group(t) for t in self.task_ids)]

    async def restrict(self, server: Any, ex: Any) -> None:
        """Drop resource subscriptions the caller could not make with ``resources/subscribe``.

        Same check, same outcome: a resource the caller may not read (scope, permission,
        ``check``, or a model object it cannot see) is left out of the acknowledgement.
        """
        from .exceptions import MCPError
        from .server import check_subscription

        await self._restrict_tasks(ex)

        kept: list[str] = []
        for uri in self.uris:
            try:
                await check_subscription(server, uri, ex)
            except MCPError:  # not found, or refused as a read would be
                continue
            kept.append(uri)
        self.uris = kept
        if self.uris:
            self.honoured["resourceSubscriptions"] = self.uris
        else:
            self.honoured.pop("resourceSubscriptions", None)

    async def _restrict_tasks(self, ex: Any) -> None:
        """Task ids need the tasks extension (-32021 without it); only the caller's own tasks are followed."""
        if not self.task_ids:
            return
        from .sync import run_bookkeeping
        from .tasks import protocol, store

        protocol.require_extension(ex, "subscriptions/listen with taskIds")
        owner = store.owner_of(ex.user, ex.auth)
        kept = [t for t in self.task_ids if await run_bookkeeping(store.find, t, owner) is not None]
        self.task_ids = kept
        if kept:
            self.honoured["taskIds"] = kept

    def acknowledgement(self) -> dict[str, Any]:
        """The first message of the stream: the subset of notifications the server will send."""
        return jsonrpc.notification_message(
            "notifications/subscriptions/acknowledged", {"_meta": self.meta, "notifications": self.honoured}
        )

    def notification_for(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The notification a hub broadcast becomes on this stream, or None if not opted into."""
        kind = payload.get("kind")
        if kind == "list_changed" and self.honoured.get(_FLAGS.get(payload.get("list", ""), "")):
            return jsonrpc.notification_message(f"notifications/{payload['list']}/list_changed", {"_meta": self.meta})
        if kind == "task" and isinstance(payload.get("task"), dict) and payload["task"].get("taskId") in self.task_ids:
            return jsonrpc.notification_message("notifications/tasks", {**payload["task"], "_meta": self.meta})
        if kind == "resource_updated" and payload.get("uri") in self.uris:
            return jsonrpc.notification_message(
                "notifications/resources/updated", {"uri": payload["uri"], "_meta": self.meta}
            )
        return None
