"""Who may see and use a tool, resource or prompt.

Three layers, all of which must pass: the token's OAuth ``scopes`` (checked by
``Exchange.allowed``), the caller's Django ``permissions`` (``user.has_perms``),
and an optional ``check(ctx)`` callable. Whatever fails is absent from the
lists and refused on use, exactly as if it did not exist. Objects with nothing
declared take a fast path that never leaves the event loop.

Before all three, ``hidden``: what is hidden from every caller whatever their rights
(the kill switches of ``django_mcp.switches`` plug in here). Each hook
answers from memory, so the lists stay free of I/O.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .context import Context
from .runtime.sync_pool import run_sync

if TYPE_CHECKING:
    from .runtime.engine import Exchange

Check = Callable[[Context], bool | Awaitable[bool]]

#: ``hook(obj) -> bool``: True hides ``obj`` from every caller (lists, calls, reads, completions), before
#: any scope or permission is looked at. Layer-3 features install theirs (the kill switches); answered
#: from memory, never with I/O: every list asks each hook about each object.
hidden: list[Callable[[Any], bool]] = []


class Guarded(Protocol):
    scopes: list[str]
    permissions: list[str]
    check: Check | None

    async def permits(self, ctx: Context) -> bool: ...


class Guard:
    """Mixin of ``Tool``, ``Resource`` and ``Prompt``: ``permits`` from their ``permissions`` and ``check``.

    Subclasses that know more (a model's ``view_`` permission, a DRF view's permission
    classes) extend ``permits`` and call ``super()`` first.
    """

    scopes: list[str]
    permissions: list[str]
    check: Check | None

    async def permits(self, ctx: Context) -> bool:
        """Whether ``ctx.user`` may see and use this object (scopes are checked by ``visible``)."""
        if not self.permissions and self.check is None:
            return True
        return await check_access(self.permissions, self.check, ctx)

    def declares_access(self) -> bool:
        """Whether anything limits who may use this object: ``scopes``, ``permissions`` or a ``check``.

        ``REQUIRE_ACCESS_RULES`` refuses to start a site where this is False for anything it serves.
        Subclasses whose rules come from elsewhere (a model's ``view_`` permission, a DRF view's
        permission classes) say so.
        """
        return bool(self.scopes or self.permissions or self.check is not None)


async def public(ctx: Context) -> bool:
    """``check=public``: anyone who may connect may use it, said on purpose (``REQUIRE_ACCESS_RULES``).

    Async and trivial: it never leaves the event loop.
    """
    return True


async def check_access(permissions: Sequence[str], check: Check | None, ctx: Context) -> bool:
    """Django permissions of ``ctx.user`` (in a thread: ``has_perms`` may query), then ``check``."""
    if permissions:
        user: Any = ctx.user
        ok = await run_sync(user.has_perms, list(permissions))
        if not ok:
            return False
    if check is not None:
        if inspect.iscoroutinefunction(check):
            return bool(await check(ctx))
        got: Any = await run_sync(check, ctx)
        if inspect.isawaitable(got):
            got = await got
        return bool(got)
    return True


async def visible(obj: Guarded, ex: Exchange) -> bool:
    """Whether ``ex``'s caller may see and use ``obj`` (hidden first, then scopes: no thread hop)."""
    for hook in hidden:  # a loop, not any(): no generator per call
        if hook(obj):
            return False
    return await permitted(obj, ex)


async def permitted(obj: Guarded, ex: Exchange) -> bool:
    """Whether ``ex``'s caller has the rights ``obj`` asks for (its scopes, then its permissions and check).

    ``visible`` without the ``hidden`` hooks: what a hook may ask before it tells a caller why
    something is hidden, so that it never tells one who could not have seen it anyway.
    """
    if not ex.allowed(obj.scopes):
        return False
    return await obj.permits(Context(ex))


__all__ = ["Check", "Guard", "Guarded", "check_access", "hidden", "permitted", "public", "visible"]
