"""Drive the running demo with the official MCP Python SDK client.

    make demo                              # in one terminal
    .venv/bin/python example_project/demo_client.py            # in another (auto: 2026-07-28 if offered)
    .venv/bin/python example_project/demo_client.py --mode legacy   # initialize + Mcp-Session-Id
    .venv/bin/python example_project/demo_client.py --sse           # the 2024-11-05 HTTP+SSE transport

It searches, reads a book, lends it (answering the server's elicitation for the borrower's name),
returns it, reads both resources, completes a book id and renders the prompt.
"""

import argparse
import json
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.sse import sse_client

warnings.simplefilter("ignore")  # the SDK's deprecation notices


async def on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    print(f"  server asks: {params.message!r} -> answering 'Grace Hopper'")
    return types.ElicitResult(action="accept", content={"name": "Grace Hopper"})


async def on_log(params: types.LoggingMessageNotificationParams) -> None:
    print(f"  log [{params.level}] {params.data}")


def show(title: str, value: Any) -> None:
    print(f"\n== {title}")
    if isinstance(value, types.CallToolResult):
        if value.is_error:
            print("  ERROR:", " ".join(getattr(c, "text", "") for c in value.content))
            return
        value = value.structured_content if value.structured_content is not None else value.content
    text = json.dumps(value, indent=2, default=str) if isinstance(value, (dict, list)) else str(value)
    print("  " + text.strip().replace("\n", "\n  "))


async def main(url: str, mode: str, sse: bool) -> None:
    target: Any = sse_client(url.rstrip("/") + "/sse/") if sse else url
    async with Client(
        target,
        mode="legacy" if sse else mode,
        read_timeout_seconds=30,
        elicitation_callback=on_elicit,
        logging_callback=on_log,
        log_level="info",
        cache=None,
    ) as client:
        show("negotiated protocol revision", client.protocol_version)
        show("tools", [t.name for t in (await client.list_tools()).tools])
        show("search_books(query='wells')", await client.call_tool("search_books", {"query": "wells"}))
        show(
            "search_books(genre='mystery', available_only=True)",
            await client.call_tool("search_books", {"genre": "mystery", "available_only": True, "limit": 5}),
        )
        show("book_details(book_id=5)", await client.call_tool("book_details", {"book_id": 5}))
        lent = await client.call_tool("lend_book", {"book_id": 5, "days": 7})  # no borrower: the server elicits
        show("lend_book(book_id=5, days=7)", lent)
        if not lent.is_error and lent.structured_content:
            loan_id = lent.structured_content["id"]
            show(f"return_book(loan_id={loan_id})", await client.call_tool("return_book", {"loan_id": loan_id}))
            show("return_book again", await client.call_tool("return_book", {"loan_id": loan_id}))
        show("book_details(book_id=999)", await client.call_tool("book_details", {"book_id": 999}))
        show("library_stats()", await client.call_tool("library_stats", {}))

        show("resources", [r.uri for r in (await client.list_resources()).resources])
        show(
            "resource templates", [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        )
        stats = await client.read_resource("library://stats")
        show("read library://stats", stats.contents[0].text)  # type: ignore[union-attr]
        book = await client.read_resource("library://books/8")
        show("read library://books/8", book.contents[0].text)  # type: ignore[union-attr]
        completion = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="library://books/{book_id}"),
            {"name": "book_id", "value": "1"},
        )
        show("complete {book_id} starting with '1'", completion.completion.values)

        show("prompts", [p.name for p in (await client.list_prompts()).prompts])
        prompt = await client.get_prompt("recommend_books", {"interests": "sea voyages and monsters"})
        show("get recommend_books", prompt.messages[0].content.text)  # type: ignore[union-attr]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8000/mcp/")
    parser.add_argument("--mode", choices=["auto", "legacy", "2026-07-28"], default="auto")
    parser.add_argument("--sse", action="store_true", help="use the legacy HTTP+SSE transport at <url>sse/")
    args = parser.parse_args()
    anyio.run(main, args.url, args.mode, args.sse)
