"""The per-process hub: everything that crosses a request goes through the Channels layer.

One channel per worker process, one receive loop. Local listeners join named
groups (a session, a resumed stream, the broadcast group); the hub adds its
channel to the layer group when the first local listener joins, and hands each
message it receives to the listeners of that group. With no channel layer
configured, or without Channels installed (the ``asgi`` extra: WSGI mode needs neither),
messages are delivered in-process only.

Groups:
  ``mcp.s.<session id>``  answers to server->client requests, cancellations,
                          notifications for a session's GET stream, session end
  ``mcp.all``             list_changed / resource updates / session invalidation

A group counts as joined only once ``group_add`` returned; after a layer outage the
receive loop re-adds every group before it receives again (a restarted Redis has
none) and tells local listeners to ``resync`` from the event store, and a refresher
re-adds them well before the layer's ``group_expiry`` would drop this worker.

An outage does not always reach the receive loop as an error: Redis replaced behind
connections that stay open (flushed, failed over, restarted under a client that
reconnects by itself) drops every group while ``receive`` goes on quietly, and a receive
on a connection to a host that vanished may never return. So the hub also probes
itself: every half ``PROBE_INTERVAL`` it sends a message to a group only it is in, once
the last one is back; a probe not back within ``PROBE_INTERVAL`` means the layer lost this
worker (found within about 1.5 s of the loss), and the hub restarts its receive, re-adds
every group and has its listeners ``resync``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import defaultdict
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ..conf import mcp_settings
from ..protocol import jsonrpc
from ..runtime.unavailable import BackendUnavailable, Unavailable
from .event_store import events

logger = logging.getLogger("django_mcp")

Listener = Callable[[dict[str, Any]], None]
BROADCAST = "mcp.all"
#: How long a probe of this worker's own group membership may take (one goes out every half of it).
PROBE_INTERVAL = 1.0
_PROBE = "probe"

#: False while serving a request whose event loop ends with it (WSGI mode, ``django_mcp.transports.wsgi``):
#: nothing may outlive the request there, so no hub is started (its receive loop would die with the
#: loop), sessions are read from the database rather than a cache nobody keeps up to date, and
#: nothing that needs a held stream is offered.
long_lived: ContextVar[bool] = ContextVar("django_mcp_long_lived", default=True)


def _no_channels(alias: str) -> Any:
    """What ``channel_layer`` does without Channels: no layer, as Channels itself says for an alias not configured."""
    if alias in (getattr(settings, "CHANNEL_LAYERS", None) or {}):
        raise ImproperlyConfigured(
            f"CHANNEL_LAYERS[{alias!r}] is configured but Channels is not installed: "
            "pip install 'django-mcp-toolkit[asgi]'"
        )
    return None


#: ``channels.layers.get_channel_layer``, or ``_no_channels`` without Channels; imported at the first use.
_get_layer: Callable[[str], Any] | None = None


def channel_layer(alias: str) -> Any:
    """The channel layer ``CHANNEL_LAYERS[alias]``, or None when there is none (messages stay in this process).

    Channels is the ``asgi`` extra, so WSGI mode runs without it: as with Channels and no
    ``CHANNEL_LAYERS``, there is no layer. Imported once (a failed import would search the path again
    on every call: a WSGI request that publishes calls this).
    """
    global _get_layer

    if _get_layer is None:
        try:
            # reason: optional dependency (the asgi extra), imported once at the first use
            from channels.layers import get_channel_layer
        except ImportError:
            _get_layer = _no_channels
        else:
            _get_layer = get_channel_layer
    return _get_layer(alias)


def _in_memory(layer: Any) -> bool:
    """Whether ``layer`` is Channels' in-memory layer (a process's own memory loses nothing: no probing)."""
    # reason: optional dependency (the asgi extra); a layer exists, so Channels is installed
    from channels.layers import InMemoryChannelLayer

    return isinstance(layer, InMemoryChannelLayer)


def session_group(session_id: str) -> str:
    return f"mcp.s.{session_id}"


class Hub:
    def __init__(self) -> None:
        self._listeners: dict[str, set[Listener]] = defaultdict(set)
        self._layer: Any = None
        self._channel: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False
        self._lock: asyncio.Lock | None = None
        self._joined: set[str] = set()  # groups the layer confirmed (group_add returned)
        self._broken = False  # the layer failed: re-add every group before receiving again
        self._stale: set[str] = set()  # groups left locally whose group_discard failed: retried
        self._sweeper: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._probe_group = ""  # a group only this worker is in (empty: no probing)
        self._probe_sent = 0  # the number of the last probe sent
        self._probe_pending: float | None = None  # when the probe not back yet was sent
        self._cancelled: set[asyncio.Task[None]] = set()  # replaced receive loops, cancelled until they end
        #: Times the layer failed or lost this worker's groups: a cache kept up to date by broadcasts
        #: (the token cache) forgets what it holds when this changes, since messages may have been lost.
        self.outages = 0

    def _break(self) -> None:
        self._broken = True
        self.outages += 1

    def hearing(self) -> bool:
        """Whether this worker hears other processes' broadcasts now: started on the running loop, on a
        layer shared between processes (not the in-memory one, not none), with no outage under way.

        What a cache needs before it trusts broadcasts alone to learn of a change made elsewhere.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if not (self._started and self._loop is loop) or self._layer is None or self._broken:
            return False
        if not self._probe_group:  # the in-memory layer: no other process reaches it
            return False
        pending = self._probe_pending
        return pending is None or time.monotonic() - pending < PROBE_INTERVAL

    async def start(self) -> None:
        """Listen on the broadcast group from now on: a worker that caches sessions must hear them change."""
        await self._ensure()

    async def stop(self) -> None:
        """End the hub's tasks on the running loop, before that loop closes (a test client's, say).

        A channel layer talking to Redis does not finish a receive cancelled by a closing loop;
        cancelled while the loop still runs, it does. The next use on another loop starts again.
        """
        if self._loop is not asyncio.get_running_loop():
            return
        running = (self._task, self._refresher, self._sweeper, self._watcher, *self._cancelled)
        tasks = {t for t in running if t is not None and not t.done()}
        for _attempt in range(50):  # a Redis layer's receive may swallow a cancellation: cancel again
            if not tasks:
                break
            for task in tasks:
                task.cancel()
            _done, tasks = await asyncio.wait(tasks, timeout=0.1)
        self._started = False
        self.outages += 1  # what it would have heard meanwhile is lost
        self._task = self._refresher = self._sweeper = self._watcher = None
        self._cancelled = set()

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
            self._layer = channel_layer(mcp_settings.CHANNEL_LAYER)
            if self._layer is not None:
                try:
                    self._channel = await self._layer.new_channel("mcp-hub.")
                except Exception as exc:  # a layer that talks to Redis here (pub/sub): down means 503
                    raise BackendUnavailable(f"Channel layer unavailable ({type(exc).__name__})") from exc
                probing = not _in_memory(self._layer)
                self._probe_group = f"mcp.p.{secrets.token_hex(8)}" if probing else ""
                self._probe_pending = None
                try:
                    for group in sorted(self._wanted()):
                        await self._group_add(group)
                except Exception as exc:  # noqa: BLE001 - the receive loop re-adds them once the layer is back
                    logger.warning("django_mcp hub: channel layer unavailable at start (%s)", exc)
                    self._break()
                if probing:
                    self._watcher = loop.create_task(self._watch())
                self._task = loop.create_task(self._receive_loop())
                self._refresher = loop.create_task(self._refresh_loop())
            self._started = True

    async def _group_add(self, group: str) -> None:
        """Join ``group`` in the layer; recorded as joined only once the layer confirmed it."""
        if self._layer is not None and group not in self._joined:
            await self._layer.group_add(group, self._channel)
            self._joined.add(group)

    def _wanted(self) -> set[str]:
        groups = {BROADCAST, *(g for g, ls in self._listeners.items() if ls)}
        if self._probe_group:
            groups.add(self._probe_group)
        return groups

    async def _rejoin(self) -> None:
        """Add this worker's channel to every group it listens on (again): after a layer outage
        (a restarted Redis has no groups) and periodically, before ``group_expiry`` drops it."""
        for group in sorted(self._wanted()):
            await self._layer.group_add(group, self._channel)
            self._joined.add(group)

    def refresh_interval(self) -> float:
        """``LAYER_REFRESH_INTERVAL``, but at most a quarter of the layer's ``group_expiry``."""
        interval = float(mcp_settings.LAYER_REFRESH_INTERVAL)
        expiry = getattr(self._layer, "group_expiry", None)
        if isinstance(expiry, (int, float)) and expiry > 0:
            interval = min(interval, expiry / 4)
        return max(interval, 0.5)

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_interval())
            try:
                await self._rejoin()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the receive loop also notices, and recovers
                logger.warning("django_mcp hub: group refresh failed (%s)", exc)
                self._break()

    async def _recover(self) -> bool:
        """Re-add every group after a failure; tell local listeners to catch up from the store."""
        try:
            await self._rejoin()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - still down: try again shortly
            logger.debug("django_mcp hub: channel layer still unavailable (%s)", exc)
            return False
        self._broken = False
        logger.warning("django_mcp hub: channel layer back; %d groups re-added", len(self._joined))
        for group in list(self._listeners):
            self._deliver(group, {"kind": "resync"})
        return True

    async def _receive_loop(self) -> None:
        assert self._layer is not None and self._channel is not None
        while True:
            if self._broken and not await self._recover():
                await asyncio.sleep(0.5)
                continue
            try:
                message = await self._layer.receive(self._channel)
            except asyncio.CancelledError:
                raise
            except (TimeoutError, asyncio.TimeoutError) as exc:
                # channels_redis' blocking pop can time out on an idle socket: routine, retry at once.
                logger.debug("django_mcp hub: channel layer receive interrupted (%s); retrying", exc)
                continue
            except Exception as exc:  # noqa: BLE001 - a layer outage must not kill the hub
                if type(exc).__name__ == "TimeoutError":  # redis-py's own class: the same routine timeout
                    logger.debug("django_mcp hub: channel layer receive interrupted (%s); retrying", exc)
                    continue
                logger.warning("django_mcp hub: channel layer receive failed (%s); recovering", exc)
                self._break()
                await asyncio.sleep(0.2)
                continue
            group = message.get("group", "")
            if group == self._probe_group:
                self._probe_back(message.get("payload", {}))
                continue
            self._deliver(group, message.get("payload", {}))

    # -- the probe -----------------------------------------------------------------------------
    def _probe_back(self, payload: dict[str, Any]) -> None:
        if payload.get("n") == self._probe_sent:
            self._probe_pending = None

    async def _watch(self) -> None:
        """Probe this worker's membership; restart the receive and re-add the groups when it is gone."""
        broken_since: float | None = None
        while True:
            await asyncio.sleep(PROBE_INTERVAL / 2)
            for task in list(self._cancelled):  # a Redis layer's receive may swallow a cancellation
                if task.done():
                    self._cancelled.discard(task)
                else:
                    task.cancel()
            now = time.monotonic()
            if self._broken:  # the receive loop is recovering, unless its receive hangs on a dead connection
                self._probe_pending = None
                broken_since = broken_since or now
                if now - broken_since > 2 * PROBE_INTERVAL:
                    self._lost()
                    broken_since = now
                continue
            broken_since = None
            if self._probe_pending is not None:
                if now - self._probe_pending < PROBE_INTERVAL:
                    continue
                logger.warning("django_mcp hub: the channel layer lost this worker's groups; recovering")
                self._lost()
                continue
            self._probe_sent += 1
            self._probe_pending = now
            message = {
                "type": "mcp.message",
                "group": self._probe_group,
                "payload": {"kind": _PROBE, "n": self._probe_sent},
            }
            try:
                await self._layer.group_send(self._probe_group, message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the layer is down: its receive may hang on a dead connection
                logger.warning("django_mcp hub: channel layer probe failed (%s); recovering", exc)
                self._lost()

    def _lost(self) -> None:
        """Recover in a new receive loop: the current one may wait on a connection that never answers."""
        self._break()
        self._probe_pending = None
        old = self._task
        if old is not None and not old.done():
            old.cancel()
            self._cancelled.add(old)
        self._task = asyncio.get_running_loop().create_task(self._receive_loop())

    def deliver_local(self, group: str, payload: dict[str, Any]) -> None:
        """Hand ``payload`` to this process's listeners of ``group`` only (no channel layer)."""
        self._deliver(group, payload)

    def _deliver(self, group: str, payload: dict[str, Any]) -> None:
        for listener in list(self._listeners.get(group, ())):
            try:
                listener(payload)
            except Exception:
                logger.exception("django_mcp hub: listener failed")
        if group == BROADCAST:
            self.run_hooks(payload)

    def run_hooks(self, payload: dict[str, Any]) -> None:
        """Hand a broadcast to this process's hooks only, from any thread (they update plain caches).

        What sync code (the admin, a shell) calls for a change it makes itself: its own process
        learns it whether or not its hub listens, then ``broadcast`` tells the others.
        """
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
        """Listen on ``group``; ``Unavailable`` (and nothing left behind) when the layer refuses."""
        await self._ensure()
        self._listeners[group].add(listener)
        try:
            await self._group_add(group)
        except Exception as exc:
            self._drop(group, listener)
            raise BackendUnavailable(f"Channel layer unavailable ({type(exc).__name__})") from exc
        if group != BROADCAST and not self._listeners.get(group) and group in self._joined:
            await self._discard(group)  # its last listener left while group_add was under way

    def _drop(self, group: str, listener: Listener) -> bool:
        """Forget a listener; True when it was the group's last one."""
        listeners = self._listeners.get(group)
        if listeners is None:
            return False
        listeners.discard(listener)
        if listeners:
            return False
        del self._listeners[group]
        return True

    async def leave(self, group: str, listener: Listener) -> None:
        if self._drop(group, listener) and group != BROADCAST and group in self._joined:
            await self._discard(group)

    async def _discard(self, group: str) -> None:
        """Take this worker's channel out of ``group`` in the layer (retried until it works)."""
        self._joined.discard(group)
        if self._layer is not None:
            try:
                await self._layer.group_discard(group, self._channel)
            except Exception as exc:  # noqa: BLE001 - pool exhausted, layer down: whatever it raises
                # Pool exhausted or layer down: retried, so no group is left behind in the layer.
                logger.debug("django_mcp hub: group_discard failed (%s); retrying", exc)
                self._stale.add(group)
                if self._sweeper is None or self._sweeper.done():
                    self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def _sweep(self) -> None:
        """Discard the groups ``leave`` could not, until none is left (or the layer is gone for good)."""
        for _attempt in range(600):
            await asyncio.sleep(0.5)
            for group in sorted(self._stale):
                if group in self._listeners:  # joined again meanwhile: keep it
                    self._stale.discard(group)
                    continue
                try:
                    await self._layer.group_discard(group, self._channel)
                except Exception as exc:  # noqa: BLE001 - as above
                    logger.debug("django_mcp hub: group_discard failed again (%s)", exc)
                    continue
                self._stale.discard(group)
            if not self._stale:
                return

    async def publish(self, group: str, payload: dict[str, Any]) -> None:
        """Send to every listener of ``group`` on any worker; ``Unavailable`` when the layer is down.

        Sending needs no channel of our own: code outside the worker's loop (the admin's
        ``async_to_sync``, a management command) sends straight to the layer instead of
        starting a hub whose channel would join the broadcast group and never be read.
        """
        if self._started and self._loop is asyncio.get_running_loop():
            layer = self._layer
        else:
            layer = channel_layer(mcp_settings.CHANNEL_LAYER)
        if layer is None:
            self._deliver(group, payload)
            return
        message = {"type": "mcp.message", "group": group, "payload": payload}
        for attempt in (1, 2):  # once more: after a Redis restart the pool's first connection is a dead one
            try:
                await layer.group_send(group, message)
                return
            except Exception as exc:
                if attempt == 2 or "MaxConnections" in type(exc).__name__:
                    raise BackendUnavailable(f"Channel layer unavailable ({type(exc).__name__})") from exc

    async def broadcast(self, payload: dict[str, Any]) -> None:
        """Publish to every worker; replayable kinds are stored first, so a resumed GET stream gets them."""
        await self.publish(BROADCAST, await events.stamp_broadcast(payload))

    async def broadcast_or_log(self, payload: dict[str, Any]) -> None:
        """``broadcast`` for news the sender can do without: a layer outage is logged, not raised.

        Replayable kinds are stored first, so resumed streams still get them; caches catch
        up on their next revalidation.
        """
        try:
            await self.broadcast(payload)
        except Unavailable as exc:
            logger.warning("django_mcp: %s not broadcast (%s)", payload.get("kind"), exc)

    async def notify_session(self, session_id: str, message: dict[str, Any]) -> None:
        """A server notification for a session's GET stream: stored (numbered per session), then sent."""
        seq = await events.append_session(session_id, jsonrpc.dumps(message))
        await self.publish(session_group(session_id), {"kind": "notify", "message": message, "sseq": seq})

    def has_local(self, group: str) -> bool:
        return bool(self._listeners.get(group))


hub = Hub()
