"""``{% load mcp %}``: prompt messages, embedded resources and images in a Django template.

::

    {% load mcp %}
    {% message "user" %}Review this book:{% resource "library://books/{pk}" pk=book.pk %}{% endmessage %}
    {% message "assistant" %}Sure. What should I focus on?{% endmessage %}
    {% message "user" %}{{ focus }}{% image cover %}{% endmessage %}

Under ``TemplatePrompt`` each tag leaves an unforgeable marker in the output
(see ``django_mcp.template_prompts.Collector``) that becomes a message or a
content block after rendering; embedded resources are then read through the
server with the caller's access checks. Rendered anywhere else (a preview view,
a test), ``{% message %}`` renders its content, ``{% resource %}`` the URI and
``{% image %}``/``{% audio %}`` nothing.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from typing import Any

from django import template
from django.template.base import FilterExpression, Node, NodeList, Parser, Token
from django.template.context import Context

from ..content import audio, image
from ..protocol.uri_template import URITemplate
from ..template_prompts import ROLES, Collector, Embed

register = template.Library()


def _kwargs(parser: Parser, bits: list[str], tag: str, allowed: tuple[str, ...] | None) -> dict[str, FilterExpression]:
    kwargs = template.base.token_kwargs(bits, parser, support_legacy=False)
    if bits:
        raise template.TemplateSyntaxError(f"{{% {tag} %}} arguments after the first must be name=value: {bits!r}")
    if allowed is not None:
        unknown = set(kwargs) - set(allowed)
        if unknown:
            raise template.TemplateSyntaxError(f"{{% {tag} %}} got unknown options: {', '.join(sorted(unknown))}")
    return kwargs


class MessageNode(Node):
    def __init__(self, role: FilterExpression, nodelist: NodeList) -> None:
        self.role = role
        self.nodelist = nodelist

    def render(self, context: Context) -> str:
        role = self.role.resolve(context)
        if role not in ROLES:
            raise template.TemplateSyntaxError(f"{{% message %}} role must be 'user' or 'assistant', not {role!r}")
        collector = Collector.of(context)
        if collector is None:
            return self.nodelist.render(context)
        with collector.inside_message():
            text = self.nodelist.render(context)
        return collector.mark(Embed("message", role=role, text=text))


@register.tag("message")
def do_message(parser: Parser, token: Token) -> MessageNode:
    """``{% message "user" %}…{% endmessage %}``: one message with that role ("user" or "assistant")."""
    bits = token.split_contents()
    if len(bits) != 2:
        raise template.TemplateSyntaxError('{% message %} takes one argument, the role: {% message "assistant" %}')
    literal = bits[1]
    if literal[:1] in "\"'" and literal[1:-1] not in ROLES:
        raise template.TemplateSyntaxError(f"{{% message %}} role must be 'user' or 'assistant', not {literal}")
    role = parser.compile_filter(literal)
    nodelist = parser.parse(("endmessage",))
    parser.delete_first_token()
    return MessageNode(role, nodelist)


class ResourceNode(Node):
    def __init__(self, uri: FilterExpression, variables: dict[str, FilterExpression]) -> None:
        self.uri = uri
        self.variables = variables

    def render(self, context: Context) -> str:
        uri = str(self.uri.resolve(context))
        if self.variables:
            uri = URITemplate(uri).expand(**{k: v.resolve(context) for k, v in self.variables.items()})
        collector = Collector.of(context)
        if collector is None:
            return uri
        return collector.mark(Embed("resource", uri=uri))


@register.tag("resource")
def do_resource(parser: Parser, token: Token) -> ResourceNode:
    """``{% resource uri %}`` or ``{% resource "scheme://x/{id}" id=obj.pk %}``: embed what reading it returns."""
    bits = token.split_contents()
    if len(bits) < 2:
        raise template.TemplateSyntaxError("{% resource %} takes a URI (or a URI template and its variables)")
    return ResourceNode(parser.compile_filter(bits[1]), _kwargs(parser, bits[2:], "resource", None))


def _binary(value: Any) -> tuple[bytes | str, str | None]:
    """Raw bytes (or validated base64 text) and a file name to guess the MIME type from."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value), None
    if isinstance(value, str):
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("a string given to {% image %}/{% audio %} must be base64 data") from None
        return value, None
    name = getattr(value, "name", None)
    if hasattr(value, "open"):  # django.core.files.File, FieldFile
        with value.open("rb") as f:
            return f.read(), name
    if hasattr(value, "read"):
        return value.read(), name
    raise ValueError(f"{{% image %}}/{{% audio %}} needs bytes, base64 text or a file, not {type(value).__name__}")


class MediaNode(Node):
    def __init__(self, kind: str, data: FilterExpression, options: dict[str, FilterExpression]) -> None:
        self.kind = kind
        self.data = data
        self.options = options

    def render(self, context: Context) -> str:
        collector = Collector.of(context)
        if collector is None:
            return ""
        data, name = _binary(self.data.resolve(context))
        mime = self.options["mime_type"].resolve(context) if "mime_type" in self.options else None
        if not mime and name:
            mime = mimetypes.guess_type(name)[0]
        block: Any
        if self.kind == "image":
            block = image(data, mime or "image/png")
        else:
            block = audio(data, mime or "audio/wav")
        return collector.mark(Embed("block", block=block))


def _media(kind: str) -> Any:
    def tag(parser: Parser, token: Token) -> MediaNode:
        bits = token.split_contents()
        if len(bits) < 2:
            raise template.TemplateSyntaxError(f'{{% {kind} %}} takes the data: {{% {kind} data mime_type="..." %}}')
        return MediaNode(kind, parser.compile_filter(bits[1]), _kwargs(parser, bits[2:], kind, ("mime_type",)))

    tag.__doc__ = f"``{{% {kind} data [mime_type=...] %}}``: bytes, base64 text or a file as {kind} content."
    return tag


register.tag("image", _media("image"))
register.tag("audio", _media("audio"))
