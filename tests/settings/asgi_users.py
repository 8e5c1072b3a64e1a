"""TEST ONLY: ``tests.settings.asgi`` behind a middleware that trusts an ``X-Test-User`` header.

The suite needs authenticated MCP callers without OAuth. This middleware sets
``scope["user"]`` (which the transports hand to the engine as the caller) to the
user named by the header, or ``AnonymousUser``. Never mount anything like it in
a real project: any client could claim to be anyone.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from typing import Any  # noqa: E402

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import AnonymousUser  # noqa: E402

from django_mcp.asgi import get_asgi_application  # noqa: E402


class TestUserHeaderMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            name = dict(scope.get("headers") or []).get(b"x-test-user")
            user: Any = AnonymousUser()
            if name:
                user = await get_user_model().objects.filter(username=name.decode()).afirst() or AnonymousUser()
            scope = {**scope, "user": user}
        await self.app(scope, receive, send)


application = TestUserHeaderMiddleware(get_asgi_application())
