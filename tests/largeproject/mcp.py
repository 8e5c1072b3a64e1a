"""The large API (``tests.drfbig``'s viewsets) on ``django_mcp.site``, as a project's own ``mcp.py`` would
register it; the other apps (objpermapp, tokenapp, projectapp) bring their own ``mcp.py``."""

from __future__ import annotations

from django_mcp import site
from tests.drfbig.tools import register

register(site, prefix="catalog_")
