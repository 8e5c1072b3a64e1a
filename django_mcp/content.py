"""Helpers that build content blocks with the official wire types.

A tool may return any of these (or a list of them); prompts use them for
message content. They are ``mcp_types`` models, so what reaches the wire is
exactly the official shape.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

import mcp_types as types

ContentBlock = types.ContentBlock


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def text(value: str, **extra: Any) -> types.TextContent:
    return types.TextContent(type="text", text=value, **extra)


def image(data: bytes | str, mime_type: str = "image/png", **extra: Any) -> types.ImageContent:
    """Image content; ``data`` is raw bytes or an already base64-encoded string."""
    return types.ImageContent(type="image", data=_b64(data), mime_type=mime_type, **extra)


def audio(data: bytes | str, mime_type: str = "audio/wav", **extra: Any) -> types.AudioContent:
    return types.AudioContent(type="audio", data=_b64(data), mime_type=mime_type, **extra)


def embedded_resource(
    uri: str, *, text: str | None = None, blob: bytes | None = None, mime_type: str | None = None, **extra: Any
) -> types.EmbeddedResource:
    """A resource embedded in a result: give ``text`` or ``blob``."""
    contents: types.TextResourceContents | types.BlobResourceContents
    if blob is not None:
        contents = types.BlobResourceContents(uri=uri, blob=_b64(blob), mime_type=mime_type)
    else:
        contents = types.TextResourceContents(uri=uri, text=text or "", mime_type=mime_type)
    return types.EmbeddedResource(type="resource", resource=contents, **extra)


def resource_link(uri: str, name: str, **extra: Any) -> types.ResourceLink:
    """A link to a resource the client can read later (2025-06-18+; dropped for older clients)."""
    return types.ResourceLink(type="resource_link", uri=uri, name=name, **extra)


def dump(block: Any) -> dict[str, Any]:
    """Wire form of a content block (model or already a dict)."""
    if isinstance(block, dict):
        return block
    return block.model_dump(by_alias=True, exclude_none=True, mode="json")  # type: ignore[no-any-return]


CONTENT_TYPES = (
    types.TextContent,
    types.ImageContent,
    types.AudioContent,
    types.EmbeddedResource,
    types.ResourceLink,
)

Role = Literal["user", "assistant"]
