"""MCP Apps from Django templates: a tool's result shown in the host by a template.

The MCP Apps extension (``io.modelcontextprotocol/ui``, specification 2026-01-26) lets a tool
point at a ``ui://`` resource of type ``text/html;profile=mcp-app`` (``_meta.ui.resourceUri``);
the host renders it in a sandboxed frame and talks to it over ``postMessage``. Here a tool says
``ui="library/ui/book_card.html"`` and gets, when it is added to a server:

* the **page** (``ui://<server>/<tool>``): an HTML document that is the same for every caller
  (hosts cache it), rendered once per read from ``UI.page`` with no request and no user, in the
  site's ``LANGUAGE_CODE``. It carries the app side of the ext-apps bridge and a small script of
  this package. The bridge is inlined (the frame loads nothing from anywhere unless ``csp`` says so)
  unless ``PUBLIC_URL`` is set: then the page loads it from this site (``django_mcp.app_bridge``) and
  declares the site's origin in ``csp.resourceDomains``.
* the **render helper** (``<tool>__ui``, ``visibility=["app"]``): the page calls it through the
  host with the tool's result, and it answers the HTML of ``UI.template`` rendered with that
  result for the caller, which the page swaps in (HTMX-style). It goes through the one door with
  the tool's own scopes, permissions and check, so per-user data only ever comes from a checked call.

A page may also do everything itself in JavaScript (``globalThis.mcpApp`` is the ext-apps
``App``): ``UI(page="my/page.html")`` without a ``template``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types
from django.conf import settings
from django.contrib.auth.context_processors import PermWrapper
from django.contrib.staticfiles import finders
from django.core.exceptions import ImproperlyConfigured
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.html import escape
from django.utils.text import slugify

from . import app_bridge
from .context import Context
from .protocol import extensions
from .resources import Resource
from .server import MCPServer, hooks
from .tools import Tool

#: The page a UI without a ``page`` of its own is shown in (``{% block content %}`` etc.).
DEFAULT_PAGE = "django_mcp/ui/page.html"
#: What a tool's render helper is called: ``<tool>__ui``.
HELPER_SUFFIX = "__ui"
#: The ext-apps ``App`` bundle (vendored by scripts/vendor_ext_apps.py) and this package's script (read from the
#: package itself: a project needs no staticfiles app for them).
STATIC = Path(__file__).resolve().parent / "static" / "django_mcp" / "mcp-apps"
BRIDGE_FILE = app_bridge.BRIDGE_FILE
SCRIPT_FILE = STATIC / "django-mcp-app.js"
#: The CSP domain lists a resource may declare (MCP Apps ``McpUiResourceCsp``).
CSP_KEYS = frozenset({"connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"})
#: The browser permissions a resource may ask for (``McpUiResourcePermissions``).
PERMISSION_KEYS = frozenset({"camera", "microphone", "geolocation", "clipboardWrite"})


@dataclass
class UI:
    """How a tool's results look in a host that renders MCP Apps.

    ``template``: rendered for each call with the tool's result (``result``: its structured content,
    unwrapped; ``content``: its content blocks; ``is_error``; ``arguments``; ``user`` and ``perms``, the
    caller's), and swapped into the page's
    ``[data-mcp-result]`` element. ``page``: the HTML document itself, the same for every caller (no
    user, no request: hosts cache it); extend ``django_mcp/ui/page.html`` or put ``{% mcp_app %}`` in
    your own. ``css``: static files inlined into the page (the frame loads nothing by default).
    ``csp`` (``connectDomains``, ``resourceDomains``, ``frameDomains``, ``baseUriDomains``),
    ``permissions``, ``domain`` and ``prefers_border`` are the resource's ``_meta.ui``.
    """

    template: str | None = None
    page: str = DEFAULT_PAGE
    title: str | None = None
    css: Sequence[str] = ()
    csp: dict[str, list[str]] | None = None
    permissions: dict[str, dict[str, Any]] | None = None
    domain: str | None = None
    prefers_border: bool | None = True
    #: Set when the tool is added to a server: the ``ui://`` URI, the tool, its helper's name.
    uri: str | None = field(default=None, init=False)
    tool: Tool | None = field(default=None, init=False, repr=False)
    server: MCPServer | None = field(default=None, init=False, repr=False)
    helper: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.template is None and self.page == DEFAULT_PAGE:
            raise TypeError("UI needs a template (rendered with each result) or a page of its own")
        if isinstance(self.css, str):
            self.css = (self.css,)
        if self.csp is not None and not (isinstance(self.csp, dict) and set(self.csp) <= CSP_KEYS):
            raise TypeError(f"UI csp takes {sorted(CSP_KEYS)}, not {self.csp!r}")
        if self.permissions is not None and not (
            isinstance(self.permissions, dict) and set(self.permissions) <= PERMISSION_KEYS
        ):
            raise TypeError(f"UI permissions takes {sorted(PERMISSION_KEYS)}, not {self.permissions!r}")

    def meta(self) -> dict[str, Any]:
        """The resource's ``_meta.ui`` (on its ``resources/list`` entry and on what ``resources/read`` returns)."""
        ui: dict[str, Any] = {}
        csp = {k: list(v) for k, v in (self.csp or {}).items()}
        served = app_bridge.origin()  # PUBLIC_URL set: the page loads the bridge from there
        if served is not None and served not in csp.get("resourceDomains", []):
            csp["resourceDomains"] = [*csp.get("resourceDomains", []), served]
        if csp:
            ui["csp"] = csp
        if self.permissions:
            ui["permissions"] = {k: dict(v) for k, v in self.permissions.items()}
        if self.domain:
            ui["domain"] = self.domain
        if self.prefers_border is not None:
            ui["prefersBorder"] = self.prefers_border
        return ui

    # -- the page ------------------------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """What the page's script needs: the tool and its render helper (names only; nothing per caller)."""
        assert self.tool is not None
        return {"tool": self.tool.name, "render": self.helper, "name": self.tool.title or self.tool.name}

    def render_page(self) -> dict[str, Any]:
        """The ``resources/read`` contents: the page, in the site's language, with its ``_meta.ui``."""
        assert self.tool is not None
        context = {"ui": self, "tool": self.tool, "app_title": self.title or self.tool.title or self.tool.name}
        with translation.override(settings.LANGUAGE_CODE):
            html = render_to_string(self.page, {**context, "mcp_app_config": self.config()})
        return {"text": html, "mimeType": extensions.UI_MIME_TYPE, "_meta": {extensions.UI_META: self.meta()}}

    # -- the result, for one caller ------------------------------------------------------------------------
    def render_result(
        self, ctx: Context, result: Any, content: list[Any], arguments: dict[str, Any], locale: str | None, error: bool
    ) -> mcp_types.CallToolResult:
        """``template`` rendered with one call's result for ``ctx.user`` (the render helper's body)."""
        assert self.template is not None and self.tool is not None
        if self.tool.wrap_output and isinstance(result, dict) and set(result) == {"result"}:
            result = result["result"]  # a tool returning a list or a number: its value, not the wrapper
        context = {
            "result": result,
            "content": content,
            "arguments": arguments,
            "is_error": error,
            "user": ctx.user,
            "perms": PermWrapper(ctx.user),  # {% if perms.library.add_loan %}, as in a Django page
            "tool": self.tool,
        }
        with translation.override(_language(locale)):
            html = render_to_string(self.template, context)
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=html)], structured_content={"html": html}
        )


def _language(locale: str | None) -> str:
    """The site's language nearest to the host's ``locale`` (``de-CH`` -> ``de``), else ``LANGUAGE_CODE``."""
    if locale:
        try:
            return translation.get_supported_language_variant(locale.replace("_", "-"))
        except LookupError:
            pass
    return str(settings.LANGUAGE_CODE)


class AppResource(Resource):
    """A tool's ``ui://`` page: whoever may use the tool may read it, and no one else learns it exists.

    Only for a client that renders MCP Apps (it declared the UI extension): to any other the page is
    as absent as the app-only render helpers, in ``resources/list`` and to ``resources/read``.
    """

    ui: UI

    async def permits(self, ctx: Context) -> bool:
        assert self.ui.tool is not None
        if not extensions.supports_ui(ctx.client_capabilities):
            return False
        return await self.ui.tool.permits(ctx)

    def declares_access(self) -> bool:
        assert self.ui.tool is not None
        return self.ui.tool.declares_access()

    def definition(self) -> dict[str, Any]:
        """The listing entry, its ``_meta.ui`` made now (``PUBLIC_URL`` may differ from when the tool was added)."""
        return {**super().definition(), "_meta": {extensions.UI_META: self.ui.meta()}}


def attach(server: MCPServer, tool: Tool) -> None:
    """``hooks.tool_added``: a tool with ``ui`` gets its page (a resource) and, with a template, its render helper."""
    if tool.ui is None:
        return
    ui = UI(template=tool.ui) if isinstance(tool.ui, str) else tool.ui
    if not isinstance(ui, UI):
        raise ImproperlyConfigured(f"Tool {tool.name!r}: ui must be a template name or a django_mcp.ui.UI")
    ui = dataclasses.replace(ui)  # one per tool: the URI and the helper are the tool's
    tool.ui = ui
    ui.tool, ui.server = tool, server
    ui.uri = f"ui://{slugify(server.name) or 'mcp'}/{tool.name}"
    page = AppResource(
        uri=ui.uri,
        fn=ui.render_page,
        name=f"{tool.name}-app",
        title=ui.title or f"{tool.title or tool.name} (app)",
        description=f"The MCP App that shows the results of the tool {tool.name!r}.",
        mime_type=extensions.UI_MIME_TYPE,
        meta={extensions.UI_META: ui.meta()},
        scopes=list(tool.scopes),
        audit=False,  # the same page for everyone; the calls it makes are audited as calls
    )
    page.ui = ui
    server.add_resource(page)
    if ui.template is not None:
        ui.helper = tool.name + HELPER_SUFFIX
        server.add_tool(_helper(ui, tool))


def _helper(ui: UI, tool: Tool) -> Tool:
    """The app-only tool the page calls to render a result: the tool's own access rules, nothing stored."""

    def render(
        ctx: Context,
        result: Any = None,
        content: list[Any] | None = None,
        arguments: dict[str, Any] | None = None,
        locale: str | None = None,
        is_error: bool = False,
    ) -> mcp_types.CallToolResult:
        """Render a result of the tool for the caller (called by its MCP App, not by the model)."""
        return ui.render_result(ctx, result, content or [], arguments or {}, locale, is_error)

    helper = HelperTool(
        render,
        name=ui.helper or tool.name + HELPER_SUFFIX,
        title=f"{tool.title or tool.name} (app view)",
        description=f"Renders a result of {tool.name!r} as HTML for its MCP App in the host.",
        annotations={"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
        scopes=list(tool.scopes),
        permissions=list(tool.permissions),
        check=tool.check,
        visibility=["app"],
        audit="hidden",  # its arguments are a result the tool's own record describes
    )
    helper.main = tool
    return helper


class HelperTool(Tool):
    """A tool's render helper: whoever may use the tool may use it (the tool's ``permits``, whatever it checks)."""

    main: Tool

    async def permits(self, ctx: Context) -> bool:
        return await self.main.permits(ctx)

    def declares_access(self) -> bool:
        return self.main.declares_access()


# -- what the page inlines ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def static_text(path: str | Path) -> str:
    """A file's text: one of ours by path, a project's static file as ``collectstatic`` finds it.

    Cached per process (a page is rendered on every read); with ``DEBUG`` on, read anew each time.
    """
    if isinstance(path, Path):
        return path.read_text(encoding="utf-8")
    found = finders.find(path)
    if not found or isinstance(found, list):
        raise ImproperlyConfigured(f"MCP App: static file {path!r} not found (STATICFILES_DIRS, an app's static/)")
    with open(found, encoding="utf-8") as f:
        return f.read()


def inline_text(path: str | Path) -> str:
    """``static_text``, cached unless ``DEBUG`` is on (so a developer's edits show on the next read)."""
    return static_text.__wrapped__(path) if settings.DEBUG else static_text(path)


@functools.lru_cache(maxsize=4)
def _scripts(bridge_url: str | None) -> str:
    if bridge_url is None:
        bridge = f'<script type="module">{script_text(static_text(BRIDGE_FILE))}</script>\n'
    else:  # served once by django_mcp.app_bridge, pinned by its digest
        bridge = (
            f'<script type="module" src="{escape(bridge_url)}" integrity="{app_bridge.integrity()}" '
            'crossorigin="anonymous"></script>\n'
        )
    return bridge + f'<script type="module">{script_text(static_text(SCRIPT_FILE))}</script>\n'


def scripts() -> str:
    """A page's two module scripts, the ext-apps bridge (inlined, or from ``PUBLIC_URL``) then ours (made once)."""
    bridge_url = app_bridge.url()
    return _scripts.__wrapped__(bridge_url) if settings.DEBUG else _scripts(bridge_url)


def script_text(text: str) -> str:
    """JavaScript safe inside an inline ``<script>``: no ``</script`` or ``<!--`` in it ends the element early."""
    return _SCRIPT_END.sub(r"<\\/\1", text).replace("<!--", "<\\!--")


_SCRIPT_END = re.compile(r"</(script)", re.IGNORECASE)


def config_json(config: dict[str, Any]) -> str:
    """``config`` as JSON for a ``<script type="application/json">`` (every ``</`` escaped: valid JSON still)."""
    return json.dumps(config, ensure_ascii=True, sort_keys=True).replace("</", "<\\/")


hooks.tool_added.append(attach)

__all__ = ["DEFAULT_PAGE", "HELPER_SUFFIX", "UI", "AppResource", "attach"]
