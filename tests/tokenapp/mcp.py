"""The notes API over MCP: the DRF viewset as tools, and plain tools, a resource and a prompt reading the token."""

from __future__ import annotations

import json
from typing import Any

from django_mcp import Context, site

from . import views
from .models import Note

site.register_drf(views.NoteViewSet)


def _token(ctx: Context) -> dict[str, Any]:
    token = ctx.token
    return {
        "user": ctx.user.get_username(),
        "kind": type(token).__name__,
        "write_enabled": getattr(token, "write_enabled", None),
        "scopes": sorted(ctx.auth.scopes) if ctx.auth is not None else None,
        "authenticator": ctx.auth.authenticator if ctx.auth is not None else None,
    }


@site.tool(scopes=["notes:write"])
def add_note(text: str, ctx: Context) -> int:
    """Write a note as the caller (needs the notes:write scope)."""
    return int(Note.objects.create(owner=ctx.user, text=text).pk)


@site.tool(scopes=["notes:read"])
def token_info(ctx: Context) -> dict[str, Any]:
    """What the caller's token is and may do."""
    return _token(ctx)


@site.resource("notes://token", mime_type="application/json", scopes=["notes:read"])
def token_resource(ctx: Context) -> str:
    """The caller's token, as a resource."""
    return json.dumps(_token(ctx))


@site.prompt(scopes=["notes:read"])
def token_prompt(ctx: Context) -> str:
    """Names the caller's token kind."""
    return f"Your token is a {type(ctx.token).__name__}."
