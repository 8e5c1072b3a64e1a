"""``path("", include("django_mcp.urls_wsgi"))``: the MCP endpoint as a Django view (WSGI mode).

For projects served by a WSGI server without Channels (gunicorn sync workers).
Include it at the site root: it mounts ``django_mcp.transports.wsgi.mcp_wsgi_view`` at the
``ENDPOINT`` path (``/mcp/``), with and without the trailing slash, so a POST to
``/mcp`` is not redirected by ``APPEND_SLASH``. The OAuth side stays ``django_mcp.urls``.
Under a prefix, include it there as ``django_mcp.urls``: ``path("plugins/mcp/", include("django_mcp.urls_wsgi"))``
with ``URL_PREFIX = ENDPOINT = "/plugins/mcp/"`` puts the view at ``/plugins/mcp/`` (``ENDPOINT`` under ``URL_PREFIX``).
Another server or path: ``re_path(r"^tools/mcp/?$", mcp_view_for(my_server, wsgi=True))``.
Under Django's ASGI handler mount the async view instead: ``*endpoint_patterns(view=mcp_view)``.
"""

from __future__ import annotations

import re
from typing import Any

from django.urls import path, re_path

from . import app_bridge
from .conf import endpoint_under_prefix
from .transports.wsgi import mcp_wsgi_view


def endpoint_patterns(prefix: str | None = None, view: Any = mcp_wsgi_view) -> list[Any]:
    """``view`` at ``prefix`` (default: ``ENDPOINT`` under ``URL_PREFIX``), with and without its trailing slash,
    and the MCP Apps bridge file below it.

    ``view=mcp_view`` (the async view) for Django's ASGI handler.
    """
    base = prefix.strip("/") if prefix else endpoint_under_prefix()
    under = f"{re.escape(base)}/" if base else ""
    bridge = re_path(rf"^{under}{app_bridge.ROUTE}(?P<name>[^/]+)$", app_bridge.bridge_view, name="mcp-app-bridge")
    return [  # the endpoint first: every MCP request is tried against it first (both patterns end with $)
        re_path(rf"^{re.escape(base)}/?$", view, name="mcp-endpoint") if base else path("", view, name="mcp-endpoint"),
        bridge,  # the MCP Apps bridge that ui:// pages load when PUBLIC_URL is set (django_mcp.app_bridge)
    ]


urlpatterns = endpoint_patterns()
