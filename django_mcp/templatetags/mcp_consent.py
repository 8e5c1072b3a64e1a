"""Template helpers for the consent page (``oauth2_provider/authorize.html``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django import template

register = template.Library()


@register.simple_tag
def scope_items(scopes: Any, descriptions: Any) -> list[tuple[str, str]]:
    """DOT passes scope names and their descriptions as two parallel lists: pair them up."""
    names = list(scopes or [])
    texts = list(descriptions or [])
    return [(name, texts[i] if i < len(texts) and texts[i] != name else "") for i, name in enumerate(names)]


@register.filter
def origin(uri: Any) -> str:
    """``https://host:port`` of a redirect URI or client ID URL: where the user's approval goes."""
    parts = urlsplit(str(uri or ""))
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else str(uri or "")


@register.filter
def registration_label(application: Any) -> str:
    """How the client came to be known here, in words a user can weigh."""
    source = getattr(application, "registration_source", "") or ""
    return {
        "dcr": "registered itself automatically; its name is not verified",
        "cimd": "identified by a metadata document at its own web address",
        "manual": "registered by this site's administrators",
    }.get(source, "")
