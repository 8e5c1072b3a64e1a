"""The library's skills: ``library/skills/lending/`` is found on its own; the desk's is rendered from a template.

The desk skill names the server's tools as they are registered (rendered once, when first asked for), and only
library staff see it, as they alone may lend to others.
"""

from __future__ import annotations

from typing import Any

from django_mcp import site


class _Tools:
    """The registered tools, read when the template is rendered (after every ``mcp`` module is imported)."""

    def __iter__(self) -> Any:
        return iter(sorted((t for t in site.tools.values() if not t.app_only), key=lambda t: t.name))


site.skill(
    "library/desk",
    template="library/skills/desk.md",
    context={"library": "the example library", "tools": _Tools(), "admin_url": "/admin/library/loan/"},
    permissions=["library.lend_to_others"],
)
