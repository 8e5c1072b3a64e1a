"""2026-07-28 ``subscriptions/listen``: which notifications a listen stream agreed to carry.

Shared by every transport that serves listen streams (HTTP, stdio): the filter
turns the hub's broadcasts into the notifications the client opted into, each
stamped with the subscription id, builds the acknowledgement that opens the
stream, and runs the stream (``ListenFilter.listen``) for a transport that only
says how to write one message. A stream whose OAuth client staff disable ends at
once (``auth_clients.CLIENTS_CHANGED``): it holds no token check of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..auth.clients import CLIENTS_CHANGED
from ..exceptions import MCPError
from ..protocol import jsonrpc
from ..runtime.sync_pool import run_bookkeeping
from ..server import check_subscription
from ..tasks import methods as task_methods
from ..tasks import store
from ..tasks.notify import task_group
from .hub import BROADCAST, hub
from .notifications import notification_for

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
_FLAGS = {"tools": "toolsListChanged", "prompts": "promptsListChanged", "resources": "resourcesListChanged"}


class ListenFilter:
    def __init__(self, request: jsonrpc.Request, client_id: str = "") -> None:
        #: The OAuth client of the caller ("" without a token): the stream ends when staff disable it.
        self.client_id = client_id
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
        return [BROADCAST, *(task_group(t) for t in self.task_ids)]

    async def restrict(self, server: Any, ex: Any) -> None:
        """Drop resource subscriptions the caller could not make with ``resources/subscribe``.

        Same check, same outcome: a resource the caller may not read (scope, permission,
        ``check``, or a model object it cannot see) is left out of the acknowledgement.
        """
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

        task_methods.require_extension(ex, "subscriptions/listen with taskIds")
        owner = task_methods.owner(ex)
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
        lists = [name for name, flag in _FLAGS.items() if self.honoured.get(flag)]
        return notification_for(payload, lists=lists, uris=self.uris, tasks=self.task_ids, meta=self.meta)

    def cut_off(self, payload: dict[str, Any]) -> bool:
        """Whether ``payload`` says staff disabled this stream's OAuth client."""
        return bool(
            self.client_id
            and payload.get("kind") == CLIENTS_CHANGED
            and payload.get("disabled")
            and self.client_id in (payload.get("clients") or ())
        )

    async def listen(
        self,
        emit: Callable[[dict[str, Any]], Awaitable[object]],
        follow: Callable[[asyncio.Queue[dict[str, Any] | None]], Awaitable[None]] | None = None,
    ) -> None:
        """Run the stream: join its groups, acknowledge, then hand ``emit`` each opted-in notification.

        The groups are joined before the acknowledgement goes out, so nothing published after
        the client sees it is missed; they are left however the stream ends. ``follow`` drains
        the queue instead (HTTP: keep-alives, the client leaving, a drain putting ``None``);
        by default every notification goes to ``emit`` until the task is cancelled.
        """
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def on_broadcast(payload: dict[str, Any]) -> None:
            if self.cut_off(payload):
                queue.put_nowait(None)
                return
            message = self.notification_for(payload)
            if message is not None:
                queue.put_nowait(message)

        joined: list[str] = []
        try:
            for group in self.groups:
                await hub.join(group, on_broadcast)
                joined.append(group)
            await emit(self.acknowledgement())
            if follow is not None:
                await follow(queue)
                return
            while (message := await queue.get()) is not None:
                await emit(message)
        finally:
            for group in joined:
                await hub.leave(group, on_broadcast)


__all__ = ["SUBSCRIPTION_ID", "ListenFilter"]
