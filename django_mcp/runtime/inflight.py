"""The requests running on this worker, and the server->client requests waiting for the client's answer.

What cancellation and a client's answer must find, wherever they arrive: a
``notifications/cancelled`` or a closed connection stops the task running the request;
an answer to ``elicitation/create`` resolves the waiting future. Either may arrive on
another worker, so a request that waits (or outlives a few milliseconds) listens to its
session's group on the hub, and what is not found here is published there. The engine
registers what it runs; the transports cancel and deliver through ``inflight``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from ..protocol import jsonrpc
from ..state.hub import hub, session_group
from .timers import Later
from .unavailable import Unavailable

if TYPE_CHECKING:
    from .engine import Exchange

logger = logging.getLogger("django_mcp")


class Inflight:
    def __init__(self) -> None:
        #: Every request running on this worker: its task and exchange (the drain waits for them).
        self.running: dict[asyncio.Task[Any], Exchange] = {}
        #: The handshake-era requests among them, by (session id, request id): what a cancellation names.
        self.by_request: dict[tuple[str, str | int], tuple[asyncio.Task[Any], Exchange]] = {}
        #: Server->client requests waiting for the client's answer, by their JSON-RPC id.
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._listening: dict[str, int] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._late = Later(0.05)
        self._tracked: set[Hashable] = set()

    def running_in(self, session_id: str, request_id: Any) -> Exchange | None:
        """The exchange of request ``request_id`` of ``session_id`` running on this worker, if any."""
        running = self.by_request.get((session_id, request_id))
        return running[1] if running is not None else None

    # -- cancellation ---------------------------------------------------------------
    async def cancel(self, session_id: str, request_id: Any) -> None:
        """Stop request ``request_id`` of ``session_id``: here if it runs here, else on whichever worker runs it."""
        running = self.by_request.get((session_id, request_id))
        if running is not None:
            self.cancel_task(running[0])
        else:
            await hub.publish(session_group(session_id), {"kind": "cancel", "id": request_id, "session": session_id})

    async def cancel_here(self, session_id: str, request_id: Any) -> bool:
        """Cancel request ``request_id`` of ``session_id`` if it runs on this worker; whether it did."""
        running = self.by_request.get((session_id, request_id))
        if running is None:
            return False
        self.cancel_task(running[0])
        return True

    def cancel_task(self, task: asyncio.Task[Any]) -> None:
        """Stop the request running in ``task`` (its connection closed): ``Context.cancelled`` turns true first."""
        ex = self.running.get(task)
        if ex is not None:
            ex.cancelled.set()
        task.cancel()

    def track(self, key: Hashable, session_id: str | None) -> None:
        """Make a request cancellable from another worker once it outlives 50 ms; ``untrack`` when it ends.

        Most requests end sooner: joining the session's group for each would cost a hub round trip.
        """
        if session_id is None:
            return

        def join() -> None:
            self._tracked.add(key)
            self._spawn(asyncio.get_running_loop(), self.listen(session_id))

        self._late.add(key, join)

    def untrack(self, key: Hashable, session_id: str | None) -> None:
        if session_id is None:
            return
        self._late.discard(key)
        if key in self._tracked:
            self._tracked.discard(key)
            self._spawn(asyncio.get_running_loop(), self.unlisten(session_id))

    # -- the client's answers (handshake era) --------------------------------------------
    async def deliver_response(self, session_id: str, response: jsonrpc.Response) -> None:
        """A client's answer to a server->client request: to the call waiting for it, on whichever worker."""
        future = self.pending.get(str(response.id))
        if future is not None:
            if not future.done():
                future.set_result({"result": response.result, "error": response.error})
            return
        await hub.publish(
            session_group(session_id),
            {"kind": "response", "id": response.id, "result": response.result, "error": response.error},
        )

    def _on_session_message(self, payload: dict[str, Any]) -> None:
        kind = payload.get("kind")
        if kind == "response":
            future = self.pending.get(str(payload.get("id")))
            if future is not None and not future.done():
                future.set_result({"result": payload.get("result"), "error": payload.get("error")})
        elif kind == "cancel":
            running = self.by_request.get((str(payload.get("session", "")), payload.get("id", "")))
            if running is not None:
                self.cancel_task(running[0])

    async def listen(self, session_id: str) -> None:
        """Receive the answers and cancellations other workers publish for ``session_id`` (counted; ``unlisten``)."""
        n = self._listening.get(session_id, 0)
        self._listening[session_id] = n + 1
        if n == 0:
            try:
                await hub.join(session_group(session_id), self._on_session_message)
            except Unavailable as exc:
                # Answers and cancellations posted to this worker still arrive; others wait for the layer.
                logger.warning("django_mcp: not listening for session messages (%s)", exc)

    async def unlisten(self, session_id: str) -> None:
        n = self._listening.get(session_id, 0) - 1
        if n <= 0:
            self._listening.pop(session_id, None)
            await hub.leave(session_group(session_id), self._on_session_message)
        else:
            self._listening[session_id] = n

    def _spawn(self, loop: asyncio.AbstractEventLoop, coro: Any) -> None:
        """Run a bookkeeping coroutine in the background, keeping a reference until it is done."""
        t = loop.create_task(coro)
        self._background.add(t)
        t.add_done_callback(self._background.discard)


inflight = Inflight()

__all__ = ["Inflight", "inflight"]
