"""TEST ONLY: ``tests.settings.asgi`` for workers behind the documented nginx, in development mode.

``AUTH = "none"`` refuses proxied requests (those carrying ``X-Forwarded-For``), as it
should: behind a proxy the real client is elsewhere. The fault tests exercise streams and
faults, not authentication, so this wrapper drops the forwarding header nginx adds before
django_mcp sees it. A real deployment behind nginx uses ``AUTH = "oauth"``.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

from typing import Any

from tests.settings.asgi import application as inner

_DROP = frozenset({b"x-forwarded-for", b"forwarded", b"x-real-ip"})


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k.lower() not in _DROP]}
    await inner(scope, receive, send)
