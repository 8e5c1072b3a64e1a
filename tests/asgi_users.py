"""``tests.asgi`` with a test-only stand-in for authentication: ``x-test-user: <username>`` picks the caller.

The permission tests need two real Django users behind the real endpoint; the
OAuth wiring is tested on its own. Unknown or absent names are anonymous.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from tests.asgi import application as base


@database_sync_to_async
def _user(username: str) -> Any:
    from django.contrib.auth.models import AnonymousUser, User

    return User.objects.filter(username=username).first() or AnonymousUser()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    name = dict(scope.get("headers") or []).get(b"x-test-user")
    if scope["type"] == "http" and name:
        scope = {**scope, "user": await _user(name.decode())}
    await base(scope, receive, send)
