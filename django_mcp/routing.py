"""The per-process hub: everything that crosses a request goes through the Channels layer.

One channel per worker process, one receive loop. Local listeners join named
groups (a session, a resumed stream, the broadcast group); the hub adds its
channel to the layer group when the first local listener joins, and hands each
message it receives to the listeners of that group. With no channel layer
configured, messages are delivered in-process only.

Groups:
  ``mcp.s.<session id>``  answers to server->client requests, cancellations,
                          notifications for a session's GET stream, session end
  ``mcp.all``             list_changed / resource updates / session invalidation
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from channels.layers import get_channel_layer

from .conf import mcp_settings

logger = logging.getLogger("django_mcp")

Listener = Callable[[dict[str, Any]], None]
BROADCAST = "mcp.all"


def session_group(session_id: str) -> str:
    return f"mcp.s.{session_id}"


class Hub:
    def __init__(self) -> None:
        self._listeners: dict[str, set[Listener]] = defaultdict(set)
        self._layer: Any = None
        self._channel: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False
        self._lock: asyncio.Lock | None = None
        self._joined: set[str] = set()

    async def _ensure(self) -> None:
        loop = asyncio.get_running_loop()
        if self._started and self._loop is loop:
            return
        if self._lock is None or self._loop is not loop:
            self._lock = asyncio.Lock()
            self._loop = loop
            self._started = False
            self._joined = set()
        async with self._lock:
            if self._started:
                return
            self._layer = get_channel_layer(mcp_settings.CHANNEL_LAYER)
            if self._layer is not None:
                self._channel = await self._layer.new_channel("mcp-hub.")
                self._task = loop.create_task(self._receive_loop())
                await self._group_add(BROADCAST)
            self._started = True

    async def _group_add(self, group: str) -> None:
        if self._layer is not None and group not in self._joined:
            self._joined.add(group)
            await self._layer.group_add(group, self._channel)

    async def _receive_loop(self) -> None:
        assert self._layer is not None and self._channel is not None
        while True:
            try:
                message = await self._layer.receive(self._channel)
            except asyncio.CancelledError:
                raise
            except (TimeoutError, asyncio.TimeoutError, ConnectionError) as exc:
                # channels_redis' blocking pop can time out on an idle socket: routine, retry at once.
                logger.debug("django_mcp hub: channel layer receive interrupted (%s); retrying", exc)
                continue
            except Exception as exc:  # a layer hiccup must not kill the hub
                if type(exc).__name__ in ("TimeoutError", "ConnectionError"):  # redis-py's own classes
                    logger.warning("django_mcp hub: channel layer receive failed (%s); retrying", exc)
                else:
                    logger.exception("django_mcp hub: channel layer receive failed")
                await asyncio.sleep(0.5)
                continue
            self._deliver(message.get("group", ""), message.get("payload", {}))

    def _deliver(self, group: str, payload: dict[str, Any]) -> None:
        for listener in list(self._listeners.get(group, ())):
            try:
                listener(payload)
            except Exception:
                logger.exception("django_mcp hub: listener failed")
        if group == BROADCAST:
            for hook in list(self._broadcast_hooks):
                try:
                    hook(payload)
                except Exception:
                    logger.exception("django_mcp hub: broadcast hook failed")

    _broadcast_hooks: list[Listener] = []

    def on_broadcast(self, hook: Listener) -> None:
        """Process-wide hook for every broadcast (session invalidation, list changes)."""
        if hook not in self._broadcast_hooks:
            self._broadcast_hooks.append(hook)

    async def join(self, group: str, listener: Listener) -> None:
        await self._ensure()
        self._listeners[group].add(listener)
        await self._group_add(group)

    async def leave(self, group: str, listener: Listener) -> None:
        listeners = self._listeners.get(group)
        if listeners is None:
            return
        listeners.discard(listener)
        if not listeners:
            del self._listeners[group]
            if self._layer is not None and group in self._joined and group != BROADCAST:
                self._joined.discard(group)
                with contextlib.suppress(Exception):
                    await self._layer.group_discard(group, self._channel)

    async def publish(self, group: str, payload: dict[str, Any]) -> None:
        await self._ensure()
        if self._layer is None:
            self._deliver(group, payload)
            return
        await self._layer.group_send(group, {"type": "mcp.message", "group": group, "payload": payload})

    async def broadcast(self, payload: dict[str, Any]) -> None:
        await self.publish(BROADCAST, payload)

    def has_local(self, group: str) -> bool:
        return bool(self._listeners.get(group))


hub = Hub()
