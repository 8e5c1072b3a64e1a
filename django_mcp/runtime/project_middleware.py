"""The project's own Django middleware around each call, on a request whose user is the MCP caller.

A project does things per request in its middleware: change logging, auditing, a
tenancy context, thread-locals read by model signals. An MCP call is not a
Django request (under Channels none of Django's middleware runs; in WSGI mode the
outer ``/mcp/`` request is anonymous, the bearer token being ours, not Django's
session). So each tool call, resource read and prompt render runs as the
innermost handler of the project's middleware chain, on a request of its own:
``request.user`` is the caller, ``request.auth`` what authenticated it,
``request.mcp`` the call's ``Context``. A view or DRF tool's chain runs on the
very request the view receives (its method, path and body).

Which middleware: ``DJANGO_MCP["PROJECT_MIDDLEWARE"]`` (None: the project's
``MIDDLEWARE`` less Django's own and the HTTP-only middleware of well-known
packages, which make no sense for a call: sessions, CSRF, the login cookie
that would replace the caller, security redirects, caching), less
``PROJECT_MIDDLEWARE_EXCLUDE``. The chain is built once, like Django's
``BaseHandler.load_middleware``, in the mode the call runs in: sync for a sync
handler (in its own thread, so thread-locals set by a middleware are the
handler's), async for an async one. ``process_view``, ``process_exception``
and ``process_template_response`` hooks need URL resolution and a view's
response: they do not run. Exceptions pass through the chain as raised (a
``with`` block in a middleware sees them). A middleware that answers instead of
calling on (a refusal) refuses the call: 401/403 as a permission refusal, any
other non-2xx status as a tool error. With no such middleware, a call pays one
attribute read.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed, PermissionDenied
from django.core.handlers.base import BaseHandler
from django.core.handlers.wsgi import WSGIRequest
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils.html import strip_tags
from django.utils.module_loading import import_string

from ..conf import mcp_settings
from ..exceptions import ToolError
from .sync_pool import in_user_pool, user_pool

if TYPE_CHECKING:
    from ..context import Context

R = TypeVar("R")

#: Middleware that acts on HTTP itself (cookies, sessions, CSRF, redirects, caching, static files, CORS...):
#: left out of a call's chain by default. Prefixes of dotted paths.
HTTP_ONLY_PREFIXES: tuple[str, ...] = (
    "django.",
    "django_mcp.",
    "corsheaders.",
    "whitenoise.",
    "debug_toolbar.",
    "csp.",
    "allauth.",
    "mozilla_django_oidc.",
    "oauth2_provider.",
    "django_prometheus.",
    "silk.",
    # Instrumentation of HTTP requests (the call has its own span, its own metrics).
    "opentelemetry.",
    "elasticapm.",
    "ddtrace.",
    "scout_apm.",
    "newrelic.",
)


def request_host() -> str:
    """A host name ``ALLOWED_HOSTS`` accepts, so ``build_absolute_uri`` works in the view."""
    for host in settings.ALLOWED_HOSTS:
        host = host.lstrip(".")
        if host and host != "*":
            return host
    return "localhost"


def build_request(
    method: str,
    path: str,
    ctx: Context,
    *,
    query: Mapping[str, Any] | None = None,
    body: bytes = b"",
    content_type: str = "",
) -> WSGIRequest:
    """A real Django request for the MCP caller, as the WSGI handler would build it.

    ``request.user`` is the caller; ``request.auth`` what authenticated the call
    (``AuthInfo``, or None); ``request.mcp`` is the call's ``Context``. A DRF view's
    ``request.auth`` is the caller's token itself (``ctx.token``), as DRF's authenticators give it.
    ``REMOTE_ADDR`` is loopback: the client's address does not reach tools, so
    anonymous rate limits keyed on it are shared by every anonymous caller.
    """
    host = request_host()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method.upper(),
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": urlencode(query or {}, doseq=True),
        "SERVER_NAME": host,
        "SERVER_PORT": "80",
        "HTTP_HOST": host,
        "HTTP_ACCEPT": "application/json",
        "REMOTE_ADDR": "127.0.0.1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
    }
    if content_type:
        environ["CONTENT_TYPE"] = content_type
    request = WSGIRequest(environ)
    request.user = ctx.user  # type: ignore[assignment]  # any user model
    request.auth = ctx.auth  # type: ignore[attr-defined]
    request.mcp = ctx  # type: ignore[attr-defined]
    request.mcp_caller = ctx.user  # type: ignore[attr-defined]
    # DRF's request.auth (contrib.drf.MCPCallerAuthentication): the caller's token, DOT's or the project's own,
    # so the view's permission classes judge it as they do for the REST API.
    request.mcp_token = ctx.token  # type: ignore[attr-defined]
    return request


def middleware_paths() -> list[str]:
    """The dotted paths of the project's middleware a call runs in, outermost first."""
    chosen = mcp_settings.PROJECT_MIDDLEWARE
    if chosen is None:
        chosen = [
            p
            for p in getattr(settings, "MIDDLEWARE", None) or ()
            if isinstance(p, str) and not p.startswith(HTTP_ONLY_PREFIXES)
        ]
    excluded = set(mcp_settings.PROJECT_MIDDLEWARE_EXCLUDE)
    return [p for p in chosen if p not in excluded]


Handler = Callable[[HttpRequest], Any]


def _load(inner: Handler, *, is_async: bool) -> Handler | None:
    """The chain around ``inner`` (None when no middleware applies), as ``BaseHandler.load_middleware`` builds it."""
    paths = middleware_paths()
    if not paths:
        return None
    adapter = BaseHandler()
    handler: Handler = inner
    handler_is_async = is_async
    for path in reversed(paths):
        factory = import_string(path)
        sync_capable = getattr(factory, "sync_capable", True)
        async_capable = getattr(factory, "async_capable", False)
        if not sync_capable and not async_capable:
            raise RuntimeError(f"Middleware {path} must have at least one of sync_capable/async_capable set to True.")
        middleware_is_async = is_async if (is_async and async_capable) or not sync_capable else False
        try:
            adapted = adapter.adapt_method_mode(middleware_is_async, handler, handler_is_async, name=path)
            instance = factory(adapted)
        except MiddlewareNotUsed:
            continue
        if instance is None:
            raise RuntimeError(f"Middleware factory {path} returned None.")
        handler = instance
        handler_is_async = middleware_is_async
    return adapter.adapt_method_mode(is_async, handler, handler_is_async)


class _Chains:
    """The two chains (sync, async), built on first use and dropped when settings change."""

    def __init__(self) -> None:
        self.sync: Handler | None = None
        self.async_: Handler | None = None
        self.built = False

    def build(self) -> None:
        self.sync = _load(_call_inner, is_async=False)
        self.async_ = _load(_acall_inner, is_async=True) if self.sync is not None else None
        self.built = True


_chains = _Chains()


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting in ("MIDDLEWARE", "DJANGO_MCP"):
        _chains.built = False
        _chains.sync = _chains.async_ = None


setting_changed.connect(_reset)


def active() -> bool:
    """Whether any project middleware applies to calls (the chains are built on first ask)."""
    if not _chains.built:
        _chains.build()
    return _chains.sync is not None


# -- the innermost handler: the call itself ---------------------------------------------------------------
# The request carries what to run (``mcp_inner``) and receives its outcome; the chain sees a plain 200 (or the
# view's own response, for a view tool).


def _call_inner(request: HttpRequest) -> HttpResponseBase:
    run: Callable[[HttpRequest], Any] = request.mcp_inner  # type: ignore[attr-defined]
    value = run(request)
    request.mcp_outcome = value  # type: ignore[attr-defined]
    return value if isinstance(value, HttpResponseBase) else HttpResponse(status=200)


async def _acall_inner(request: HttpRequest) -> HttpResponseBase:
    run: Callable[[HttpRequest], Awaitable[Any]] = request.mcp_inner  # type: ignore[attr-defined]
    value = await run(request)
    request.mcp_outcome = value  # type: ignore[attr-defined]
    return value if isinstance(value, HttpResponseBase) else HttpResponse(status=200)


_NOTHING = object()


def _outcome(request: HttpRequest, response: HttpResponseBase) -> Any:
    """What the call gives: a view's response as the chain returns it, or the plain call's value.

    A middleware that answered instead of calling on, or that turned the call's 200 into a refusal after
    it ran (the tool's savepoint then rolls its writes back), refuses the call.
    """
    value = getattr(request, "mcp_outcome", _NOTHING)
    if isinstance(value, HttpResponseBase):
        return response
    _refuse(response)
    if value is _NOTHING:
        raise ToolError(f"The project's middleware answered HTTP {response.status_code} instead of running the call")
    return value


#: Longest part of a refusing middleware's body quoted to the caller.
MAX_REASON = 200


def _reason(response: HttpResponseBase) -> str:
    body = getattr(response, "content", b"") if not getattr(response, "streaming", False) else b""
    text = " ".join(strip_tags(body[: MAX_REASON * 4].decode(response.charset or "utf-8", "replace")).split())
    return f": {text[:MAX_REASON]}" if text else ""


def _refuse(response: HttpResponseBase) -> None:
    status = response.status_code
    if status in (401, 403):
        raise PermissionDenied(f"The project's middleware refused the call{_reason(response)}")
    if status >= 300:
        raise ToolError(f"The project's middleware answered HTTP {status} instead of running the call")


def call_request(ctx: Context) -> WSGIRequest:
    """The request a plain call runs on: ``POST /`` as the caller."""
    return build_request("POST", "/", ctx)


def run_sync(request: HttpRequest, inner: Callable[[HttpRequest], R]) -> R:
    """``inner(request)`` as the innermost handler of the sync chain (in the calling thread)."""
    chain = _chains.sync if active() else None
    if chain is None:
        return inner(request)
    request.mcp_inner = inner  # type: ignore[attr-defined]
    response = chain(request)
    return _outcome(request, response)  # type: ignore[no-any-return]


async def run_async(request: HttpRequest, inner: Callable[[HttpRequest], Awaitable[R]]) -> R:
    """``await inner(request)`` as the innermost handler of the async chain."""
    chain = _chains.async_ if active() else None
    if chain is None:
        return await inner(request)
    request.mcp_inner = inner  # type: ignore[attr-defined]
    response = await chain(request)
    return _outcome(request, response)  # type: ignore[no-any-return]


def within(ctx: Context, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """``fn(*args, **kwargs)`` inside the sync chain, on the call's request (sync code in its thread)."""
    if not active():
        return fn(*args, **kwargs)
    return run_sync(call_request(ctx), lambda _request: fn(*args, **kwargs))


async def call_handler(ctx: Context, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """A resource's or prompt's handler, sync (in the user pool) or async, inside the project's middleware."""
    if not active():
        return await in_user_pool(fn)(**kwargs)
    if iscoroutinefunction(fn):
        return await run_async(call_request(ctx), lambda _request: fn(**kwargs))
    return await user_pool.run(within, ctx, fn, **kwargs)


__all__ = [
    "active",
    "build_request",
    "call_handler",
    "call_request",
    "middleware_paths",
    "run_async",
    "run_sync",
    "within",
]
