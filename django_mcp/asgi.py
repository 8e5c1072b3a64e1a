"""ASGI wiring: the MCP endpoint(s) in front of the usual Django application."""

from __future__ import annotations

from typing import Any

from django.urls import path, re_path


def mcp_urlpatterns(server: Any = None, prefix: str | None = None) -> list[Any]:
    """URL patterns for one MCP server: the Streamable HTTP endpoint, the legacy SSE pair, the health probe.

    ``prefix`` defaults to the ``ENDPOINT`` setting (``/mcp/``). Mount several
    servers by concatenating the patterns of each with its own prefix.
    """
    from .conf import mcp_settings
    from .health import HealthEndpoint
    from .transports.http import MCPConsumer
    from .transports.sse_legacy import LegacySSEConsumer

    prefix = (prefix or mcp_settings.ENDPOINT).strip("/")
    base = f"{prefix}/" if prefix else ""
    kwargs = {"server": server} if server is not None else {}
    return [
        path(f"{base}health", HealthEndpoint()),  # type: ignore[arg-type]  # an ASGI app, routed by channels
        path(f"{base}sse/", LegacySSEConsumer.as_asgi(**kwargs)),
        path(f"{base}messages/", LegacySSEConsumer.as_asgi(**kwargs)),
        path(base, MCPConsumer.as_asgi(**kwargs)),
        path(base.rstrip("/"), MCPConsumer.as_asgi(**kwargs)),
    ]


def get_asgi_application(extra_patterns: list[Any] | None = None) -> Any:
    """The project's ASGI application with the MCP endpoint mounted at ``ENDPOINT``.

    Everything else falls through to Django's own ASGI handler.
    """
    from django.core.asgi import get_asgi_application as django_asgi

    django_app = django_asgi()
    from channels.routing import ProtocolTypeRouter, URLRouter

    routes = [*(extra_patterns or []), *mcp_urlpatterns(), re_path(r"", django_app)]  # type: ignore[arg-type]  # an ASGI app, routed by channels
    return ProtocolTypeRouter({"http": URLRouter(routes)})
