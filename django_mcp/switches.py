"""Kill switches: staff turn a tool, resource, resource template, prompt or OAuth client off, on every worker.

The truth is in the database: ``MCPSwitch`` rows (``enabled=False``) and ``MCPClient.disabled``.
Each process keeps what is off in memory (``board``) so that no request queries for it:

- a change (the admin, ``switch_off``/``switch_on``, ``auth_clients.disable_clients``) is broadcast
  over the channel layer once it commits; every worker's hub hears it and the board reloads on the
  worker's next request (disabled clients apply at once, from the message itself);
- a worker that missed the message (no layer, a full channel, WSGI mode) reloads anyway once its copy
  is ``SWITCHES_REVALIDATE_INTERVAL`` seconds old;
- a task run reloads before it starts: a task worker hears no broadcast, and a queued task for what was
  switched off since must fail without running.

``KillSwitches`` (the middleware, in ``DEFAULT_MIDDLEWARE``) refuses calls to what is off with a clear
error (-32602 "Tool 'x' is disabled by the site's operators", not "unknown tool"), and every call of a
disabled client (403); its ``access.hidden`` hook takes what is off out of every list. A change also
sends ``notifications/*/list_changed`` to connected clients. Switches are keyed by name: one applies on
every ``MCPServer`` that registers that name.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any

from asgiref.sync import async_to_sync
from django.db import transaction
from django.utils import timezone

from . import access
from .access import permitted
from .auth.clients import CLIENTS_CHANGED
from .conf import mcp_settings
from .exceptions import InvalidParams, Refused
from .middleware import Call, CallNext
from .models import MCPClient, MCPSwitch
from .prompts import Prompt
from .protocol import jsonrpc
from .resources import Resource, ResourceTemplate
from .runtime.sync_pool import run_bookkeeping
from .runtime.unavailable import Unavailable
from .server import MCPServer, site
from .state.hub import hub, long_lived
from .state.writelock import write_transaction
from .tools import Tool

logger = logging.getLogger("django_mcp")

TOOL, RESOURCE, TEMPLATE, PROMPT = MCPSwitch.TOOL, MCPSwitch.RESOURCE, MCPSwitch.TEMPLATE, MCPSwitch.PROMPT
#: The broadcast kind of a change of switches: every worker reloads its board.
CHANGED = "switches_changed"
#: The list whose ``list_changed`` notification a switch of each kind sends.
LISTS = {TOOL: "tools", RESOURCE: "resources", TEMPLATE: "resources", PROMPT: "prompts"}
LABELS = {TOOL: "Tool", RESOURCE: "Resource", TEMPLATE: "Resource template", PROMPT: "Prompt"}
#: Seconds before a failed reload is tried again.
RETRY = 1.0

Key = tuple[str, str]


class SwitchedOff(InvalidParams):
    """A call to what staff switched off: the client learns it is disabled, not that it does not exist."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(
            f"{LABELS[kind]} {name!r} is disabled by the site's operators",
            {"kind": kind, "name": name, "disabled": True},
        )


class ClientDisabled(Refused):
    """A call of an OAuth client staff disabled (over stdio or in a task run: HTTP already refuses its token)."""

    status = 403
    code = jsonrpc.INVALID_REQUEST
    default_message = "Forbidden: this OAuth client has been disabled by the site's operators"

    def __init__(self) -> None:
        super().__init__(data={"error": "client_disabled"})


def key_of(obj: Any) -> Key | None:
    """The switch that governs ``obj``: its kind and its name (a resource's or template's URI).

    An MCP App's page and render helper (``django_mcp.ui``) follow their tool's switch, and a tool that is
    another door to a template's objects (``ModelResource.ui``'s ``show_`` tool) follows the template's.
    """
    main = getattr(obj, "main", None)  # a render helper's tool
    page_of = getattr(getattr(obj, "ui", None), "tool", None) if isinstance(obj, Resource) else None
    if isinstance(main, Tool):
        obj = main
    elif isinstance(page_of, Tool):  # an app's page
        obj = page_of
    follows = getattr(obj, "switch_follows", None)
    if isinstance(follows, ResourceTemplate):
        obj = follows
    if isinstance(obj, Tool):
        return TOOL, obj.name
    if isinstance(obj, ResourceTemplate):
        return TEMPLATE, obj.uri
    if isinstance(obj, Resource):
        return RESOURCE, obj.uri
    if isinstance(obj, Prompt):
        return PROMPT, obj.name
    return None


def registered(servers: Iterable[MCPServer]) -> Iterator[tuple[Key, Any]]:
    """Every tool, resource, template and prompt the servers register, with its switch key (each key once)."""
    seen: set[Key] = set()
    for server in servers:
        for registry in (server.tools, server.resources, server.templates, server.prompts):
            for obj in registry.values():
                key = key_of(obj)
                if key is not None and key not in seen:
                    seen.add(key)
                    yield key, obj


def _completed(call: Call) -> Any:
    """The prompt or resource template a ``completion/complete`` reference names, or None."""
    ref = call.params.get("ref")
    if not isinstance(ref, dict):
        return None
    server = call.exchange.server
    if ref.get("type") == "ref/prompt":
        return server.prompts.get(str(ref.get("name")))
    if ref.get("type") == "ref/resource":
        uri = str(ref.get("uri"))
        return server.templates.get(uri) or server.resources.get(uri)
    return None


def _read() -> tuple[frozenset[Key], frozenset[str]]:
    off = MCPSwitch.objects.filter(enabled=False).values_list("kind", "name")
    clients = MCPClient.objects.filter(disabled=True).values_list("client_id", flat=True)
    return frozenset((kind, name) for kind, name in off), frozenset(clients)


class Board:
    """This process's copy of what is switched off, reloaded when told to or when it is old."""

    def __init__(self) -> None:
        self.off: frozenset[Key] = frozenset()
        self.clients: frozenset[str] = frozenset()
        #: ``time.monotonic()`` of the last load (None: never loaded in this process).
        self.loaded: float | None = None
        self.stale = True
        self._pending: asyncio.Task[None] | None = None
        hub.on_broadcast(self._on_broadcast)

    @property
    def quiet(self) -> bool:
        """Nothing is off: the middleware and the list hook step aside at once."""
        return not self.off and not self.clients

    def is_off(self, obj: Any) -> bool:
        """The ``access.hidden`` hook: whether ``obj`` is switched off (in memory, no I/O)."""
        if not self.off:
            return False
        return key_of(obj) in self.off

    def refused(self, call: Call) -> tuple[Key, Any] | None:
        """The switch that refuses ``call`` and the declaration it governs, or None.

        The call's target, or what a ``completion/complete`` reference names.
        """
        if not self.off:
            return None
        target = call.target
        if target is None and call.method == "completion/complete":
            target = _completed(call)
        key = key_of(target) if target is not None else None
        return (key, target) if key is not None and key in self.off else None

    def due(self) -> bool:
        if self.stale or self.loaded is None:
            return True
        return time.monotonic() - self.loaded >= float(mcp_settings.SWITCHES_REVALIDATE_INTERVAL)

    async def fresh(self, *, task: bool = False) -> None:
        """Reload if told to or old; a task run always reloads (its worker hears no broadcast).

        A failed reload keeps the last copy (tried again after ``RETRY`` seconds) and is logged;
        a process that never loaded one, or a task run, raises it instead (fail closed).
        """
        if not (task or self.due()):
            return
        try:
            await self.reload(listen=not task)
        except Exception as exc:
            if task or self.loaded is None:
                raise
            logger.warning("django_mcp: kill switches not reloaded, keeping the last copy (%r)", exc)
            self.loaded = time.monotonic() - float(mcp_settings.SWITCHES_REVALIDATE_INTERVAL) + RETRY

    async def reload(self, *, listen: bool = True) -> None:
        """Read the switches once for every request that asks meanwhile (one query per worker per change).

        ``listen``: start this process's hub first, so that a change made after the read is heard.
        """
        loop = asyncio.get_running_loop()
        pending = self._pending
        if pending is None or pending.done() or pending.get_loop() is not loop:
            self.stale = False  # a broadcast arriving during the read marks it stale again
            pending = self._pending = loop.create_task(self._load(listen))
            pending.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved if unawaited
        await asyncio.shield(pending)

    async def _load(self, listen: bool) -> None:
        if listen and long_lived.get():
            try:
                await hub.start()
            except Unavailable as exc:  # the layer is down: revalidation still catches every change
                logger.warning("django_mcp: not listening for kill switch changes (%s)", exc)
        self.off, self.clients = await run_bookkeeping(_read)
        self.loaded = time.monotonic()

    def _on_broadcast(self, payload: dict[str, Any]) -> None:
        kind = payload.get("kind")
        if kind == CHANGED:
            self.stale = True
        elif kind == CLIENTS_CHANGED:
            ids = {c for c in payload.get("clients") or () if isinstance(c, str)}
            # At once, from the message: no request of a just-disabled client slips in before the reload.
            self.clients = self.clients | ids if payload.get("disabled") else self.clients - ids
            self.stale = True

    def reset(self) -> None:
        """Forget everything (tests): the next request loads again."""
        self.off, self.clients, self.loaded, self.stale, self._pending = frozenset(), frozenset(), None, True, None


board = Board()


def _hide(obj: Any) -> bool:
    return board.is_off(obj)


class KillSwitches:
    """The middleware: refuse calls to what staff switched off, and every call of a disabled OAuth client.

    Installing it also hides what is off from every list (``access.hidden``). The switched-off set
    is this process's ``board``: no query per request.
    """

    keeps_replies = True  # never edits a reply an inner middleware returned (Call.encode)

    def __init__(self, call_next: CallNext) -> None:
        self.call_next = call_next
        if _hide not in access.hidden:
            access.hidden.append(_hide)

    async def __call__(self, call: Call) -> dict[str, Any] | None:
        await board.fresh(task=call.transport == "task")
        if board.quiet:
            return await self.call_next(call)
        if call.client_id and call.client_id in board.clients:
            raise ClientDisabled()
        refused = board.refused(call)
        # Said only to a caller who could use it were it on: others learn nothing of it from the switch,
        # and are refused as ever (a missing scope, "unknown tool": it is hidden from them as well).
        if refused is not None and await permitted(refused[1], call.exchange):
            raise SwitchedOff(*refused[0])
        return await self.call_next(call)


# -- changing switches (sync: the admin, management code, a shell) ------------------------------------------


def switch(kind: str, name: str, *, enabled: bool, reason: str | None = None, user: Any = None) -> bool:
    """Turn one switch on or off (creating its row); whether it changed. Every worker hears it once committed."""
    if kind not in LISTS:
        raise ValueError(f"Unknown kind of switch {kind!r}: one of {', '.join(LISTS)}")
    with write_transaction():
        row, _created = MCPSwitch.objects.select_for_update().get_or_create(kind=kind, name=name)
        changed = bool(row.enabled) != enabled
        row.enabled = enabled
        if reason is not None:
            row.reason = reason
        if changed:
            row.changed_by, row.changed_at = changed_by(user), timezone.now()
        row.save()
    if changed:
        announce([kind])
    return changed


def switch_off(kind: str, name: str, *, reason: str = "", user: Any = None) -> bool:
    """``switch(kind, name, enabled=False)``: hidden and refused on every worker within about a second."""
    return switch(kind, name, enabled=False, reason=reason, user=user)


def switch_on(kind: str, name: str, *, user: Any = None) -> bool:
    """``switch(kind, name, enabled=True)``: listed and served again on every worker within about a second."""
    return switch(kind, name, enabled=True, user=user)


def set_enabled(rows: Iterable[MCPSwitch], enabled: bool, *, user: Any = None) -> int:
    """Turn these switches on or off (the admin's actions); the number changed."""
    ids = [row.pk for row in rows]
    changing = MCPSwitch.objects.filter(pk__in=ids).exclude(enabled=enabled)
    kinds = set(changing.values_list("kind", flat=True))
    n = changing.update(enabled=enabled, changed_by=changed_by(user), changed_at=timezone.now())
    if n:
        announce(kinds)
    return int(n)


def ensure_rows(servers: Iterable[MCPServer]) -> int:
    """A row (on) for every registered object that has none, so staff pick switches rather than type names."""
    known = set(MCPSwitch.objects.values_list("kind", "name"))
    missing = [MCPSwitch(kind=k, name=n) for (k, n), _obj in registered(servers) if (k, n) not in known]
    MCPSwitch.objects.bulk_create(missing, ignore_conflicts=True)
    return len(missing)


def announce(kinds: Iterable[str]) -> None:
    """Once the change commits: every worker reloads its switches, connected clients re-list.

    This process learns it at once; others over the channel layer (a layer outage is logged, and
    they catch up within ``SWITCHES_REVALIDATE_INTERVAL``).
    """
    lists = sorted({LISTS[k] for k in kinds if k in LISTS})

    def send() -> None:
        hub.run_hooks({"kind": CHANGED})  # this process at once, whether or not its hub listens
        async_to_sync(_broadcast)(lists)

    transaction.on_commit(send)


async def _broadcast(lists: list[str]) -> None:
    # The reload first: a client that re-lists on list_changed must find the workers reloading.
    await hub.broadcast_or_log({"kind": CHANGED})
    for name in lists:
        await site.notify_list_changed(name)


def changed_by(user: Any) -> Any:
    """What ``MCPSwitch.changed_by`` records for ``user``: the account, or None for anonymous code."""
    return user if getattr(user, "is_authenticated", False) else None


__all__ = [
    "CHANGED",
    "Board",
    "ClientDisabled",
    "KillSwitches",
    "SwitchedOff",
    "announce",
    "board",
    "ensure_rows",
    "key_of",
    "registered",
    "set_enabled",
    "switch",
    "switch_off",
    "switch_on",
]
