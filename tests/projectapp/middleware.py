"""A large project's own per-request middleware, as such projects write it.

``ChangeLoggingMiddleware`` (sync only) keeps the request in a thread-local that model signals read, like
change-logging and auditing packages do; ``TenancyMiddleware`` (sync and async) sets a context variable from
``request.user``; ``BlockedUserMiddleware`` answers 403 itself for a blocked user, without calling on.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden

local = threading.local()
tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar("tenant", default=None)


class ChangeLoggingMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        outer = getattr(local, "request", None)
        local.request = request
        try:
            return self.get_response(request)
        finally:
            local.request = outer


class TenancyMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        token = tenant.set(self._tenant(request))
        try:
            return self.get_response(request)
        finally:
            tenant.reset(token)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        token = tenant.set(self._tenant(request))
        try:
            return await self.get_response(request)  # type: ignore[no-any-return]
        finally:
            tenant.reset(token)

    @staticmethod
    def _tenant(request: HttpRequest) -> str | None:
        user = getattr(request, "user", None)
        return user.get_username() if user is not None and user.is_authenticated else None


class BlockedUserMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and user.get_username() == "mallory":
            return HttpResponseForbidden("Blocked by the project")
        return self.get_response(request)
