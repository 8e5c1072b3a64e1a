"""Drive the running demo with the official MCP Python SDK client.

    make demo                              # in one terminal
    .venv/bin/python example_project/demo_client.py            # in another (auto: 2026-07-28 if offered)
    .venv/bin/python example_project/demo_client.py --mode legacy   # initialize + Mcp-Session-Id
    .venv/bin/python example_project/demo_client.py --sse           # the 2024-11-05 HTTP+SSE transport

The demo server asks for OAuth. `--oauth` runs the whole flow the way a desktop host does: the SDK
discovers the authorization server from the 401, registers itself (RFC 7591), opens your browser on
the consent page (sign in as reader / library-demo) and receives the code on a loopback callback
(a free port each run, or `--callback-port N` for a fixed redirect URI).
Or pass a token made by `manage.py mcp_token` in DJANGO_MCP_TOKEN (make demo prints one).

It searches, reads a book, lends it (answering the server's elicitation for the borrower's name),
returns it, reads both resources, completes a book id and renders the prompt.
"""

import argparse
import json
import os
import warnings
import webbrowser
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import mcp_types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

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


class MemoryStorage:
    """Where the SDK keeps its registration and tokens (a real host would persist them)."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


def oauth_provider(url: str, port: int = 0) -> Any:
    """The official SDK's OAuthClientProvider, with the browser and a one-shot loopback callback server.

    ``port`` 0 takes a free port: the client registers itself with that redirect URI on each run.
    """
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    received: dict[str, list[str]] = {}

    class Callback(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            received.update(parse_qs(urlsplit(self.path).query))
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<p>Done: you may close this window and go back to the terminal.</p>")

        def log_message(self, *args: Any) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", port), Callback)  # listening before the browser is sent anywhere
    redirect_uri = f"http://127.0.0.1:{httpd.server_address[1]}/callback"

    async def open_browser(authorization_url: str) -> None:
        print(f"\nOpening the consent page (sign in as reader / library-demo):\n  {authorization_url}\n")
        webbrowser.open(authorization_url)

    async def wait_for_code() -> AuthorizationCodeResult:
        with httpd:
            while not received:
                await anyio.to_thread.run_sync(httpd.handle_request)
        if "code" not in received:
            raise SystemExit(f"authorization refused: {received.get('error', ['?'])[0]}")
        return AuthorizationCodeResult(
            code=received["code"][0], state=received.get("state", [None])[0], iss=received.get("iss", [None])[0]
        )

    metadata = OAuthClientMetadata(
        client_name="Library demo client",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        url, metadata, MemoryStorage(), redirect_handler=open_browser, callback_handler=wait_for_code
    )


async def main(url: str, mode: str, sse: bool, oauth: bool, callback_port: int = 0) -> None:
    import httpx2

    token = os.environ.get("DJANGO_MCP_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token and not oauth else {}
    if sse:
        target: Any = sse_client(url.rstrip("/") + "/sse/", headers=headers)
    else:
        http = httpx2.AsyncClient(
            headers=headers, auth=oauth_provider(url, callback_port) if oauth else None, timeout=60
        )
        target = streamable_http_client(url, http_client=http)
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
        # A member borrows in their own name; signed in as the librarian, the server elicits a borrower instead.
        lent = await client.call_tool("lend_book", {"book_id": 5, "days": 7})
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
    parser.add_argument("--oauth", action="store_true", help="sign in through the browser (OAuth 2.1 + PKCE)")
    parser.add_argument(
        "--callback-port",
        type=int,
        default=0,
        help="with --oauth: the loopback port of the redirect URI (default: a free one)",
    )
    args = parser.parse_args()
    anyio.run(main, args.url, args.mode, args.sse, args.oauth, args.callback_port)
