"""Tools with MCP Apps on a server of their own (``tests.uiapp.asgi`` serves it at /mcp/).

A small lending shelf kept in memory (one per process: each live server starts with the same three
books), so the tests can see a click in the app change what a later call answers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from django_mcp import Context, MCPServer
from django_mcp.exceptions import ToolError
from django_mcp.ui import UI

server = MCPServer("ui-tests")

TITLES = {1: "Dune", 2: "Emma", 3: "<script>alert(1)</script> & Co"}
#: book id -> the username of who borrowed it ("" while on the shelf)
LENT: dict[int, str] = {}


class Card(BaseModel):
    id: int
    title: str
    borrower: str


def card(book_id: int) -> Card:
    if book_id not in TITLES:
        raise ToolError(f"No book {book_id}")
    return Card(id=book_id, title=TITLES[book_id], borrower=LENT.get(book_id, ""))


@server.tool(
    title="Show a book",
    annotations={"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    ui=UI(template="uiapp/book_card.html", css=["uiapp/app.css"], csp={"resourceDomains": ["https://fonts.example"]}),
)
def get_book(book_id: int) -> Card:
    """A book of the shelf, shown as a card with a Borrow button in hosts that render MCP Apps."""
    return card(book_id)


@server.tool(
    title="Borrow a book",
    annotations={"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
    ui="uiapp/book_card.html",
)
def lend_book(ctx: Context, book_id: int) -> Card:
    """Lend a book to the caller."""
    found = card(book_id)
    if found.borrower:
        raise ToolError(f"{found.title} is already lent")
    LENT[book_id] = ctx.user.get_username() if ctx.user.is_authenticated else "anonymous"
    return card(book_id)


@server.tool(
    title="Shelf statistics",
    annotations={"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    permissions=["auth.view_user"],
    ui="uiapp/stats.html",
)
def shelf_stats() -> dict[str, Any]:
    """Who borrowed what: staff with auth.view_user only."""
    return {"lent": dict(sorted(LENT.items())), "shelf": len(TITLES)}


@server.tool(
    title="Raw card",
    annotations={"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    ui=UI(page="uiapp/raw_page.html", prefers_border=False),
)
def raw_card(book_id: int) -> Card:
    """A card whose page does everything in JavaScript with the ext-apps App (no server-side template)."""
    return card(book_id)


@server.tool(
    title="Shelf size",
    annotations={"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    visibility=["app"],
)
def shelf_size() -> int:
    """A helper only an app calls."""
    return len(TITLES)
