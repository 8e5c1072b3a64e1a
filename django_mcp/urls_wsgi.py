"""``path("", include("django_mcp.urls_wsgi"))``: the MCP endpoint as a Django view (WSGI mode).

For projects served without Channels (gunicorn sync workers, or Django's own ASGI
handler). Include it at the site root: it mounts ``django_mcp.views.mcp_view`` at the
``ENDPOINT`` path (``/mcp/``), with and without the trailing slash, so a POST to
``/mcp`` is not redirected by ``APPEND_SLASH``. The OAuth side stays ``django_mcp.urls``.
Another server or path: ``re_path(r"^tools/mcp/?$", mcp_view_for(my_server))``.
"""

from __future__ import annotations

import re
from typing import Any

from django.urls import path, re_path

from .views import mcp_view


def endpoint_patterns(prefix: str | None = None) -> list[Any]:
    """The view at ``prefix`` (default: the ``ENDPOINT`` setting), with and without its trailing slash."""
    from .conf import mcp_settings

    base = (prefix or mcp_settings.ENDPOINT).strip("/")
    return [re_path(rf"^{re.escape(base)}/?$", mcp_view, name="mcp-endpoint")] if base else [path("", mcp_view)]


urlpatterns = endpoint_patterns()
