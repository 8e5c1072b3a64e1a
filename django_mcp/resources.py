"""Static resources and resource templates at the protocol level.

A resource is a URI whose contents a function produces (text, bytes, or content
objects). A template (RFC 6570 ``{var}``, and ``{+var}`` for values spanning
segments) matches a family of URIs and passes the decoded variables to its function.
The Django-model mapping builds on these.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from .access import Check, Guard
from .audit.declaration import REDACTED, AuditPolicy, check_policy
from .context import Context
from .protocol.uri_template import URITemplate
from .runtime import project_middleware
from .signature import context_parameter

Completer = Callable[..., Any]


def contents_for(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """Wire ``contents`` for what a resource function returned."""
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, (types.TextResourceContents, types.BlobResourceContents)):
            out.append(item.model_dump(by_alias=True, exclude_none=True, mode="json"))
        elif isinstance(item, dict) and ("text" in item or "blob" in item):
            out.append({"uri": uri, **item})
        elif isinstance(item, (bytes, bytearray)):
            d = {"uri": uri, "blob": base64.b64encode(bytes(item)).decode("ascii")}
            out.append({**d, "mimeType": mime_type or "application/octet-stream"})
        else:
            d = {"uri": uri, "text": item if isinstance(item, str) else str(item)}
            out.append({**d, "mimeType": mime_type} if mime_type else d)
    return out


@dataclass
class Resource(Guard):
    uri: str
    fn: Callable[..., Any]
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[dict[str, Any]] | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    scopes: list[str] = field(default_factory=list)
    permissions: list[str] = field(default_factory=list)
    check: Check | None = None
    #: What the audit log keeps of a ``resources/read`` (``django_mcp.audit.declaration``; a read has no arguments).
    audit: AuditPolicy = REDACTED
    #: The parameter that receives the ``Context`` (``signature.context_parameter``).
    ctx_param: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.audit = check_policy(self.audit, "Resource", self.uri)
        self.ctx_param = context_parameter(self.fn)

    def definition(self) -> dict[str, Any]:
        d: dict[str, Any] = {"uri": self.uri, "name": self.name}
        for key, val in (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("size", self.size),
            ("icons", self.icons),
            ("annotations", self.annotations),
            ("_meta", self.meta),
        ):
            if val is not None:
                d[key] = val
        return d

    async def read(self, uri: str, variables: dict[str, str], ctx: Context) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = dict(variables)
        if self.ctx_param:
            kwargs[self.ctx_param] = ctx
        value = await project_middleware.call_handler(ctx, self.fn, kwargs)
        return contents_for(uri, value, self.mime_type)

    async def ensure_exists(self, uri: str, variables: dict[str, str], ctx: Context) -> None:
        """Before subscribing: raise ``ResourceNotFound`` if the caller may not read ``uri``.

        A static resource or a plain template exists once matched; a mapping whose
        objects the caller may not see (``ModelResource``) overrides this.
        """


@dataclass
class ResourceTemplate(Resource):
    complete: dict[str, Completer | Sequence[str]] = field(default_factory=dict)
    template: URITemplate = field(init=False)
    #: The declaration a mapping made this template from (its ``ModelResource``), or None.
    resource: Any = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.template = URITemplate(self.uri)

    def definition(self) -> dict[str, Any]:
        d = super().definition()
        d["uriTemplate"] = d.pop("uri")
        d.pop("size", None)
        return d

    async def completion_values(
        self, ctx: Context, var: str, value: str, others: dict[str, str]
    ) -> tuple[list[str], int | None] | None:
        """Values and total (None: unknown) for ``var`` without a ``complete=`` entry; None: no own completions."""
        return None
