"""``{% load mcp_apps %}``: what an MCP App's templates use (``django_mcp.ui``).

::

    {# the page (django_mcp/ui/page.html does this already) #}
    {% mcp_app %}                       the ext-apps bridge and this package's script, inlined
    {% mcp_css "library/app.css" %}     a static file inlined as <style> (the frame loads nothing else)

    {# a result template, rendered for each call with {{ result }} #}
    <h2>{{ result.title }}</h2>
    <button {% mcp_call "lend_book" book_id=result.id %}>Borrow</button>

``{% mcp_call %}`` gives an element the attributes the page's script acts on: a click calls the
tool through the host (the same door and checks as any call) and shows its result, rendered by
that tool's own UI template when it has one, in the element ``target=`` names (a CSS selector;
by default the page's ``[data-mcp-result]``). On a ``<form>``, its fields are the arguments.
"""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.template.base import FilterExpression, Node, Parser, Token
from django.template.context import Context
from django.utils.html import format_html_join
from django.utils.safestring import SafeString, mark_safe

from .. import ui

register = template.Library()


@register.simple_tag(takes_context=True)
def mcp_app(context: Context) -> SafeString:
    """The app side of the bridge (ext-apps ``App``, vendored) and the page's script, with its configuration."""
    config = context.get("mcp_app_config") or {}
    return mark_safe(  # our own static files and JSON, made script-safe
        '<script type="application/json" id="mcp-app-config">' + ui.config_json(config) + "</script>\n" + ui.scripts()
    )


@register.simple_tag
def mcp_css(path: str) -> SafeString:
    """The static file ``path`` inlined as a ``<style>`` element (found as ``collectstatic`` finds it)."""
    css = ui.inline_text(path).replace("</", "<\\/")  # nothing in a stylesheet may close the element
    return mark_safe(f"<style>{css}</style>")  # a project's own static file


class CallNode(Node):
    def __init__(self, tool: FilterExpression, arguments: dict[str, FilterExpression]) -> None:
        self.tool, self.arguments = tool, arguments

    def render(self, context: Context) -> str:
        name = str(self.tool.resolve(context))
        options = {k: v.resolve(context) for k, v in self.arguments.items()}
        target = options.pop("target", None)
        attributes: list[tuple[str, Any]] = [("data-mcp-call", name)]
        if options:
            attributes.append(("data-mcp-arguments", json.dumps(options, default=str, ensure_ascii=False)))
        if target:
            attributes.append(("data-mcp-target", target))
        helper = _helper_of(context, name)
        if helper is not None:
            attributes.append(("data-mcp-render", helper))
        return format_html_join(" ", '{}="{}"', attributes)


def _helper_of(context: Context, name: str) -> str | None:
    """The render helper of tool ``name`` on the server of the tool being rendered, when it has a UI template."""
    tool = context.get("tool")
    server = getattr(getattr(tool, "ui", None), "server", None)
    if server is None:
        return None
    called = server.tools.get(name)
    return getattr(getattr(called, "ui", None), "helper", None)


@register.tag
def mcp_call(parser: Parser, token: Token) -> CallNode:
    """``{% mcp_call "tool" arg=value ... [target="#id"] %}``: attributes that call ``tool`` when clicked."""
    bits = token.split_contents()
    if len(bits) < 2:
        raise template.TemplateSyntaxError("{% mcp_call %} needs the tool's name")
    arguments: dict[str, FilterExpression] = {}
    for bit in bits[2:]:
        key, sep, value = bit.partition("=")
        if not sep or not key.isidentifier():
            raise template.TemplateSyntaxError(f"{{% mcp_call %}}: {bit!r} is not name=value")
        arguments[key] = parser.compile_filter(value)
    return CallNode(parser.compile_filter(bits[1]), arguments)


__all__ = ["mcp_app", "mcp_call", "mcp_css", "register"]
