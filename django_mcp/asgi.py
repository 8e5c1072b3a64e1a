"""ASGI wiring: the MCP endpoint(s) in front of the usual Django application.

Channels mode needs Channels (the ``asgi`` extra); without it, building the wiring raises
``ImproperlyConfigured`` saying what to install, and importing this module still works.
"""

from __future__ import annotations

import re
from importlib.util import find_spec
from typing import Any

from django.core.asgi import get_asgi_application as django_asgi
from django.core.exceptions import ImproperlyConfigured
from django.urls import path, re_path

from . import app_bridge
from .conf import mcp_settings
from .runtime.gc_freeze import freeze_startup_heap


def _channels() -> None:
    """``ImproperlyConfigured`` naming the extra to install when Channels is missing (once per wiring built)."""
    if find_spec("channels") is None:
        raise ImproperlyConfigured(
            "django_mcp.asgi serves MCP through Channels, which is not installed: "
            "pip install 'django-mcp-toolkit[asgi]' (Channels and daphne). A project served by a WSGI server "
            "mounts the endpoint as a Django view instead (django_mcp.urls_wsgi), which needs neither."
        )


def mcp_urlpatterns(server: Any = None, prefix: str | None = None) -> list[Any]:
    """URL patterns for one MCP server: the Streamable HTTP endpoint, the legacy SSE pair, the health probe, the
    MCP Apps bridge file.

    ``prefix`` defaults to the ``ENDPOINT`` setting (``/mcp/``). Mount several
    servers by concatenating the patterns of each with its own prefix. With
    ``REQUIRE_ACCESS_RULES`` on, a declaration of the server naming no access rule raises
    ``ImproperlyConfigured`` here: daphne and uvicorn run no system checks, so this stops them.
    """
    _channels()
    from . import strict  # reason: needs the models; imported before django.setup()
    from .health import HealthEndpoint  # reason: needs the models; imported before django.setup()
    from .server import site  # reason: as above
    from .transports.http import MCPConsumer  # reason: needs the models; imported before django.setup()
    from .transports.sse_legacy import LegacySSEConsumer  # reason: needs the models; imported before django.setup()

    strict.ensure([server if server is not None else site])
    freeze_startup_heap()  # startup is over: what is loaded now lives as long as the process
    prefix = (prefix or mcp_settings.ENDPOINT).strip("/")
    base = f"{prefix}/" if prefix else ""
    kwargs = {"server": server} if server is not None else {}
    return [
        path(f"{base}health", HealthEndpoint()),  # type: ignore[arg-type]  # an ASGI app, routed by channels
        # The MCP Apps bridge that ui:// pages load when PUBLIC_URL is set (django_mcp.app_bridge).
        re_path(rf"^{re.escape(base)}{app_bridge.ROUTE}[^/]+$", app_bridge.BridgeFile()),  # type: ignore[arg-type]
        path(f"{base}sse/", LegacySSEConsumer.as_asgi(**kwargs)),
        path(f"{base}messages/", LegacySSEConsumer.as_asgi(**kwargs)),
        path(base, MCPConsumer.as_asgi(**kwargs)),
        path(base.rstrip("/"), MCPConsumer.as_asgi(**kwargs)),
    ]


def get_asgi_application(extra_patterns: list[Any] | None = None) -> Any:
    """The project's ASGI application with the MCP endpoint mounted at ``ENDPOINT``.

    Everything else falls through to Django's own ASGI handler. The whole is wrapped in
    ``DrainMiddleware``, so a SIGTERM drain serves and waits for every HTTP request. With
    ``REQUIRE_ACCESS_RULES`` on, a declaration naming no access rule raises ``ImproperlyConfigured``
    here (daphne and uvicorn run no system checks, so this is what stops them from serving it).
    """
    _channels()
    django_app = django_asgi()  # django.setup(): the imports below need the app registry
    # reason: optional dependency (the asgi extra): importing this module needs no Channels
    from channels.routing import ProtocolTypeRouter, URLRouter

    from .runtime.drain import (
        DrainMiddleware,  # reason: needs the models; this module is imported before django.setup()
    )

    routes = [*(extra_patterns or []), *mcp_urlpatterns(), re_path(r"", django_app)]  # type: ignore[arg-type]  # an ASGI app, routed by channels
    router = URLRouter(routes)
    prefix = mcp_settings.ENDPOINT.strip("/")
    endpoint = ShortcutRouter(router, {f"{prefix}/", prefix} if prefix else {""})
    # Outermost: a SIGTERM drain waits for every request, the project's own views included (django_mcp.runtime.drain).
    return DrainMiddleware(ProtocolTypeRouter({"http": endpoint}))


class ShortcutRouter:
    """Channels' ``URLRouter``, with the endpoint's own paths looked up in a dict first.

    The router tries its patterns in order, a regular expression each, and the endpoint comes
    after the health probe, the Apps bridge and legacy SSE: a few µs of every MCP request. The
    dict holds, for each of ``paths``, the application the router itself would pick (its first
    matching pattern, the project's ``extra_patterns`` included), so what answers never changes.
    """

    def __init__(self, router: Any, paths: set[str]) -> None:
        #: ``inner``, as middleware name what they wrap: the system checks look through it for the endpoint.
        self.inner = router
        self.shortcuts: dict[str, Any] = {}
        for path_ in paths:
            for route in router.routes:
                match = route.pattern.match(path_)
                if match:
                    rest, args, kwargs = match
                    if not rest and not args and not kwargs and not route.default_args:
                        self.shortcuts[path_] = route.callback
                    break

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path_ = scope.get("path")
        root = scope.get("root_path", "")
        if path_ is not None and "path_remaining" not in scope and (not root or path_.startswith(root)):
            app = self.shortcuts.get(path_[len(root) :].lstrip("/"))
            if app is not None:  # the scope the router would pass: nothing left of the path, no arguments
                scope = dict(scope, path_remaining="", url_route={"args": (), "kwargs": {}})
                return await app(scope, receive, send)  # type: ignore[no-any-return]
        return await self.inner(scope, receive, send)  # type: ignore[no-any-return]


def __getattr__(name: str) -> Any:
    """``daphne django_mcp.asgi:application`` (or uvicorn's) for a project that ships no ``asgi.py``.

    Built on first access (PEP 562), so importing this module never sets Django up; the project is the
    one ``DJANGO_SETTINGS_MODULE`` names, as for ``manage.py``.
    """
    if name == "application":
        app = get_asgi_application()
        globals()["application"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
