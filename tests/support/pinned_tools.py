"""Extra tools, prompts and view tools whose wire definitions ``test_pinned_schemas`` pins.

They live on their own server (not ``site``): only their definitions are looked at.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

from django.http import HttpRequest, HttpResponse
from pydantic import BaseModel, Field

from django_mcp import Context
from django_mcp.server import MCPServer

server = MCPServer("pinned")


class Filters(BaseModel):
    query: str = Field(default="", description="words to look for")
    limit: Annotated[int, Field(ge=1, le=50)] = 10
    tags: list[str] = Field(default_factory=list)
    since: datetime.date | None = None


class Row(BaseModel):
    id: int
    when: datetime.datetime


@server.tool
def documented(
    ctx: Context,
    name: str,
    size: Annotated[int, Field(ge=0, description="from the annotation")] = 3,
    kind: Literal["a", "b"] = "a",
    extra: Any = None,
    untyped=None,  # type: ignore[no-untyped-def]
) -> list[Row]:
    """Do something documented.

    Longer text that stays in the description.

    Args:
        name: the name
            continued on the next line
        kind (str): which kind
    Returns:
        rows
    """
    return []


@server.tool(name="custom-schema", input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
async def custom(x: int = 0) -> dict[str, int]:
    return {"x": x}


@server.tool
def optional_out(flag: bool) -> Row | None:
    """An optional model: wrapped."""
    return None


@server.prompt
def pinned_prompt(ctx: Context, topic: str, tone: str = "dry") -> str:
    """A function prompt with a Context parameter."""
    return topic


def filtered_view(request: HttpRequest, shelf: int, code) -> HttpResponse:  # type: ignore[no-untyped-def]
    """A view with URL arguments.

    Args:
        shelf: the shelf number
    """
    return HttpResponse("")


async def async_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("")


server.register_view(filtered_view, arguments=Filters, output=list[Row])
server.register_view(async_view, method="PATCH", body="json", arguments={"note": str, "count": (int, 2)})
