"""Protocol extensions a client declares (SEP-2133): ``capabilities.extensions[<id>]``.

A client declares the extensions it supports in ``initialize`` (handshake era; hosts send the key
from 2025-06-18 on although those schemas do not list it) or in each request's
``_meta["io.modelcontextprotocol/clientCapabilities"]`` (2026-07-28). A server answers with the
extensions it serves in its own capabilities, and only a client that declared one gets its
behaviour (the versioning page of 2026-07-28: "revert to core protocol behavior").
"""

from __future__ import annotations

from typing import Any

#: MCP Apps (SEP-1865, ext-apps specification 2026-01-26): interactive UIs that tools point at.
UI = "io.modelcontextprotocol/ui"
#: The MIME type of an MCP App's HTML resource (``ui://`` URIs).
UI_MIME_TYPE = "text/html;profile=mcp-app"
#: ``_meta`` key of the UI (``{"resourceUri", "visibility"}``) on a tool, and of the resource's ``csp``,
#: ``permissions``, ``domain`` and ``prefersBorder``.
UI_META = "ui"
#: The flat key the first hosts read (deprecated by the specification, still written beside ``ui``).
UI_RESOURCE_URI_FLAT = "ui/resourceUri"
#: Who may call a tool (MCP Apps ``visibility``): the model, the app in the host, or both (the default).
VISIBILITIES = frozenset({"model", "app"})


def declared(capabilities: Any, extension: str) -> dict[str, Any] | None:
    """The settings a client declared for ``extension`` (``{}`` when it gave none), None when it did not."""
    if not isinstance(capabilities, dict):
        return None
    extensions = capabilities.get("extensions")
    if not isinstance(extensions, dict) or extension not in extensions:
        return None
    value = extensions[extension]
    return value if isinstance(value, dict) else {}


def supports_ui(capabilities: Any) -> bool:
    """Whether a client renders MCP Apps: it declared the extension with our MIME type among its ``mimeTypes``.

    ``mimeTypes`` is required by the specification; a declaration without it is taken as the one
    MIME type the extension defines (hosts of the first drafts sent an empty object).
    """
    settings = declared(capabilities, UI)
    if settings is None:
        return False
    mime_types = settings.get("mimeTypes")
    if mime_types is None:
        return True
    return isinstance(mime_types, list) and UI_MIME_TYPE in mime_types


__all__ = ["UI", "UI_META", "UI_MIME_TYPE", "UI_RESOURCE_URI_FLAT", "VISIBILITIES", "declared", "supports_ui"]
