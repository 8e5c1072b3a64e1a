"""The example library's permissions and object checks, through the shipped project.

A real daphne serves ``example_project`` exactly as ``make demo`` does (OAuth on, its demo
data, ``demo_setup``'s accounts). Each caller holds a real OAuth access token for their own
user, minted by ``mcp_token`` for two OAuth clients; the official SDK client calls the tools.

Accounts: ``reader`` and ``member2`` are members (``library.add_loan``), ``librarian`` is desk
staff (``demo_setup``'s permissions), ``visitor`` holds no permission. The demo data has one
desk loan of book 6 to "Maria Lopez" (loan 1) and one of book 3 to "Jun Park" (loan 3).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.oauth.kit import EXAMPLE, OAuthServer, start_example_server, stop_oauth_server
from tests.support.browser import host_page, need_chromium
from tests.support.callers import bearer_client, ui_session
from tests.support.node import TS_CLIENT, need_ts, run_ts
from tests.support.servers import ROOT, free_port, start_task_worker
from tests.uihost.serve import build as build_host

#: The example project knows only SQLite (its settings): the pg-redis pass would run the same again.
pytestmark = pytest.mark.own_config

USERS = """
from django.contrib.auth.models import Permission, User
from oauth2_provider.models import Application
member2 = User.objects.create_user("member2", password="pw-member2-123")
member2.user_permissions.add(Permission.objects.get(codename="add_loan"))
User.objects.create_user("visitor", password="pw-visitor-123")
for name in ("desk app", "phone app"):
    Application.objects.create(name=name, client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/callback")
"""

#: Caller -> the OAuth client its token was issued to (two clients in play).
CALLERS = {"reader": "phone app", "member2": "desk app", "librarian": "desk app", "visitor": "phone app"}

MINT = """
import io
from django.core.management import call_command
for user, app in {callers!r}.items():
    out = io.StringIO()
    call_command("mcp_token", user=user, application=app, resource=[{url!r}], stdout=out)
    print(user, out.getvalue().strip())
"""


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OAuthServer, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("example")
    host = build_host(tmp / "host")  # the test host page of MCP Apps, served beside the project
    port = free_port()  # PUBLIC_URL names it: the book card's pages load the ext-apps bridge from the server
    server = start_example_server(
        tmp,
        app="tests.uihost.example_asgi:application",
        port=port,
        MCP_UI_HOST_DIR=str(host),
        MCP_PUBLIC_URL=f"http://127.0.0.1:{port}",
    )
    try:
        server.live.manage("loaddata", "demo")
        server.shell(USERS)
        out = server.live.manage("shell", "-c", MINT.format(callers=CALLERS, url=server.url)).strip().splitlines()
        tokens = dict(line.split(" ", 1) for line in out[-len(CALLERS) :])
        assert set(tokens) == set(CALLERS)
        yield server, tokens
    finally:
        stop_oauth_server(server)
    log = (tmp / "daphne.log").read_text(errors="replace")
    assert "Traceback" not in log and " 500 " not in log, log


@asynccontextmanager
async def connect(example: tuple[OAuthServer, dict[str, str]], who: str) -> AsyncIterator[Client]:
    server, tokens = example
    async with bearer_client(server.url, tokens[who]) as c:
        yield c


async def call(c: Client, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, structured content or the error text)."""
    result = await c.call_tool(tool, arguments)
    if result.is_error:
        return True, result.content[0].text  # type: ignore[union-attr]
    return False, result.structured_content


async def active_loan(example: tuple[OAuthServer, dict[str, str]], loan_id: int) -> bool:
    """Whether the loan is still out, as desk staff read it (``library.view_loan``)."""
    async with connect(example, "librarian") as desk:
        text = (await desk.read_resource(f"django://library/loan/{loan_id}")).contents[0].text  # type: ignore[union-attr]
    return json.loads(text)["returned"] is None


async def skills_request(c: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A Skills extension request through the SDK's session (the SDK has no skills helpers)."""
    from mcp import types
    from pydantic import TypeAdapter

    request = types.Request[dict[str, Any], str](method=method, params=params)
    return await c.session.send_request(request, TypeAdapter(dict[str, Any]))


async def skills_error(c: Client, method: str, params: dict[str, Any]) -> int:
    with pytest.raises(MCPError) as caught:
        await skills_request(c, method, params)
    return caught.value.code


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_reads_the_skills_each_role_may_use(
    example: tuple[OAuthServer, dict[str, str]], mode: str
) -> None:
    """Two users on two OAuth clients, both eras: the member sees the lending skill, staff the desk's too; a
    skill not one's own is absent whichever way it is asked for, and no URI reaches past a skill's files."""
    server, tokens = example
    seen: dict[str, list[str]] = {}
    for who in ("reader", "librarian"):  # the phone app's member, the desk app's staff
        async with bearer_client(server.url, tokens[who], mode=mode) as c:
            assert c.server_capabilities.extensions["io.modelcontextprotocol/skills"] == {"directoryRead": True}
            entries = (await skills_request(c, "skills/list", {}))["skills"]
            seen[who] = [e["uri"] for e in entries]
            for entry in entries:  # a host's verification: each file's bytes have the listed digest and size
                for item in entry["resources"]:
                    (content,) = (await c.read_resource(item["uri"])).contents
                    data = content.text.encode()  # type: ignore[union-attr]
                    assert item["digest"] == "sha256:" + hashlib.sha256(data).hexdigest(), item
                    assert item["size"] == len(data)
            lending = next(e for e in entries if e["uri"] == "skill://lending/SKILL.md")
            assert lending["frontmatter"]["name"] == "lending"
            text = (await c.read_resource("skill://lending/SKILL.md")).contents[0].text  # type: ignore[union-attr]
            assert all(tool in text for tool in ("search_books", "lend_book", "return_book"))
            root = await skills_request(c, "resources/directory/read", {"uri": "skill://lending"})
            assert {r["name"]: r["mimeType"] for r in root["resources"]} == {
                "SKILL.md": "text/markdown",
                "references": "inode/directory",
            }
            for uri in (
                "skill://lending/../library/desk/SKILL.md",
                "skill://lending/references/..%2F..%2F..%2Fsettings.py",
                "skill://lending/%2e%2e/%2e%2e/manage.py",
                "skill://lending/references/RULES.md/..",
            ):
                with pytest.raises(MCPError):
                    await c.read_resource(uri)
    assert seen == {
        "reader": ["skill://lending/SKILL.md"],
        "librarian": ["skill://library/desk/SKILL.md", "skill://lending/SKILL.md"],
    }
    async with bearer_client(server.url, tokens["reader"], mode=mode) as c:  # the desk skill is not the member's
        assert await skills_error(c, "skills/get", {"uri": "skill://library/desk/SKILL.md"}) == -32602
        assert await skills_error(c, "resources/directory/read", {"uri": "skill://library/desk"}) == -32602
        with pytest.raises(MCPError):
            await c.read_resource("skill://library/desk/SKILL.md")
        assert "skill://library/desk/SKILL.md" not in [str(r.uri) for r in (await c.list_resources()).resources]
    async with bearer_client(server.url, tokens["librarian"], mode=mode) as c:
        desk = (await skills_request(c, "skills/get", {"uri": "skill://library/desk/SKILL.md"}))["skill"]
        assert desk["frontmatter"]["name"] == "desk"
        text = (await c.read_resource("skill://library/desk/SKILL.md")).contents[0].text  # type: ignore[union-attr]
        assert "- `lend_book`: Lend a book" in text  # rendered from its template with the registered tools


def ts_skills(url: str, token: str, *wanted: str) -> dict[str, list[Any]]:
    """What the TypeScript SDK's ``SkillsClient`` saw (``tests/ts/skills_client.mjs``), step by step."""
    need_ts(TS_CLIENT / "ext" / "skills" / "index.mjs")
    return run_ts("skills_client.mjs", str(TS_CLIENT), url, token, *wanted)


def test_the_typescript_sdk_verifies_the_skills_each_role_may_use(example: tuple[OAuthServer, dict[str, str]]) -> None:
    """The TypeScript SDK's host (SkillsClient) checks every file against its entry: size, digest, frontmatter.

    Two users on two OAuth clients: the member lists and verifies the lending skill only, and asking for the
    desk's is refused as an unknown skill; staff verify both.
    """
    server, tokens = example
    desk = "skill://library/desk/SKILL.md"
    reader = ts_skills(server.url, tokens["reader"], desk)
    librarian = ts_skills(server.url, tokens["librarian"], desk)
    for seen in (reader, librarian):
        assert seen["supported"] == [{"supported": True, "directoryRead": True}]
        assert all(file["verified"] for file in seen["read"]), seen["read"]
    assert reader["listed"] == [["skill://lending/SKILL.md"]]
    assert librarian["listed"] == [[desk, "skill://lending/SKILL.md"]]
    read = {file["uri"]: file for file in librarian["read"]}
    assert set(read) == {desk, "skill://lending/SKILL.md", "skill://lending/references/RULES.md"}
    assert read["skill://lending/SKILL.md"]["frontmatter"]["name"] == "lending"
    assert "- `lend_book`: Lend a book" in read[desk]["body"]  # rendered from its template
    lending = next(d for d in librarian["directory"] if d["uri"] == "skill://lending")
    assert sorted(lending["entries"]) == [["SKILL.md", "text/markdown"], ["references", "inode/directory"]]
    (refused,) = reader["get"]
    assert "refused" in refused and refused["code"] == -32602, refused  # as an unknown skill: nothing says it exists
    assert librarian["get"] == [{"uri": desk, "name": "desk"}]


async def test_tools_each_role_sees(example: tuple[OAuthServer, dict[str, str]]) -> None:
    seen = {}
    for who in ("visitor", "reader", "librarian"):
        async with connect(example, who) as c:
            seen[who] = {t.name for t in (await c.list_tools()).tools}
    catalogue = {"search_books", "book_details", "library_stats"}
    assert catalogue <= seen["visitor"] and not {"lend_book", "return_book"} & seen["visitor"]
    assert {"lend_book", "return_book"} <= seen["reader"] and {"lend_book", "return_book"} <= seen["librarian"]
    # Writing authors is the DRF API's DjangoModelPermissions: no demo account holds library.add_author.
    assert all("api_author_create" not in names and "api_author_list" in names for names in seen.values())
    async with connect(example, "visitor") as c:
        for tool, args in (("lend_book", {"book_id": 1}), ("return_book", {"loan_id": 1})):
            with pytest.raises(MCPError):  # refused like an unknown tool
                await c.call_tool(tool, args)
    assert await active_loan(example, 1)


async def test_lend_book_members_borrow_for_themselves(example: tuple[OAuthServer, dict[str, str]]) -> None:
    async with connect(example, "reader") as reader:
        failed, text = await call(reader, "lend_book", book_id=1, borrower="Maria Lopez")
        assert failed and "library staff" in text
        failed, loan = await call(reader, "lend_book", book_id=1, days=7)
        assert not failed and loan["borrower"] == "reader"
    async with connect(example, "librarian") as desk:
        failed, walk_in = await call(desk, "lend_book", book_id=1, borrower="Ada Walk-In")
        assert not failed and walk_in["borrower"] == "Ada Walk-In"
    members = ", ".join(f"getattr(Loan.objects.get(pk={x['id']}).member, 'username', None)" for x in (loan, walk_in))
    owners = example[0].shell(f"import json; from library.models import Loan; print(json.dumps([{members}]))")
    assert json.loads(owners) == ["reader", None]


async def test_return_book_only_own_loans(example: tuple[OAuthServer, dict[str, str]]) -> None:
    async with connect(example, "reader") as reader:
        failed, loan = await call(reader, "lend_book", book_id=8)
        assert not failed
    async with connect(example, "member2") as other:
        for loan_id in (loan["id"], 3, 999_999):  # another member's loan, a desk loan, no loan: one answer
            failed, text = await call(other, "return_book", loan_id=loan_id)
            assert failed and text == f"There is no loan with id {loan_id}."
    assert await active_loan(example, loan["id"]) and await active_loan(example, 3)
    async with connect(example, "reader") as reader:
        failed, back = await call(reader, "return_book", loan_id=loan["id"])
        assert not failed and back["returned"] is not None
        failed, text = await call(reader, "return_book", loan_id=3)  # Jun Park's desk loan
        assert failed and text == "There is no loan with id 3."
    async with connect(example, "member2") as other:
        failed, mine = await call(other, "lend_book", book_id=10)
        assert not failed
    async with connect(example, "librarian") as desk:  # desk staff take any book back
        failed, back = await call(desk, "return_book", loan_id=mine["id"])
        assert not failed and back["returned"] is not None


async def test_book_details_borrowers(example: tuple[OAuthServer, dict[str, str]]) -> None:
    async with connect(example, "member2") as other:
        failed, _loan = await call(other, "lend_book", book_id=5)
        assert not failed
    async with connect(example, "reader") as reader:
        failed, _own = await call(reader, "lend_book", book_id=5)
        assert not failed
        failed, details = await call(reader, "book_details", book_id=5)
        assert not failed and [x["borrower"] for x in details["active_loans"]] == ["reader"]
        failed, details = await call(reader, "book_details", book_id=6)
        assert not failed and details["active_loans"] == []  # Maria Lopez's loan is not his to see
    async with connect(example, "visitor") as visitor:
        failed, details = await call(visitor, "book_details", book_id=6)
        assert not failed and details["active_loans"] == [] and "Maria" not in json.dumps(details)
    async with connect(example, "librarian") as desk:
        failed, details = await call(desk, "book_details", book_id=5)
        assert not failed and sorted(x["borrower"] for x in details["active_loans"]) == ["member2", "reader"]
        failed, details = await call(desk, "book_details", book_id=6)
        assert [x["borrower"] for x in details["active_loans"]] == ["Maria Lopez"]


async def test_loan_resources(example: tuple[OAuthServer, dict[str, str]]) -> None:
    async with connect(example, "reader") as reader:
        failed, loan = await call(reader, "lend_book", book_id=11)
        assert not failed
        own = f"django://library/loan/{loan['id']}"
        text = (await reader.read_resource(own)).contents[0].text  # type: ignore[union-attr]
        assert json.loads(text)["borrower"] == "reader" and "member" not in json.loads(text)
        with pytest.raises(MCPError):
            await reader.read_resource("django://library/loan/1")  # Maria Lopez's
        listed = {str(r.uri) for r in (await reader.list_resources()).resources}
        assert own in listed and "django://library/loan/1" not in listed
    async with connect(example, "member2") as other:
        with pytest.raises(MCPError):
            await other.read_resource(own)
    async with connect(example, "visitor") as visitor:
        templates = {t.uri_template for t in (await visitor.list_resource_templates()).resource_templates}
        assert "django://library/loan/{pk}" not in templates
        with pytest.raises(MCPError):
            await visitor.read_resource(own)
    async with connect(example, "librarian") as desk:
        text = (await desk.read_resource("django://library/loan/1")).contents[0].text  # type: ignore[union-attr]
        assert json.loads(text)["borrower"] == "Maria Lopez"


# -- export_catalogue as an MCP task: the server enqueues it, a real db_worker runs it --------------------------

#: 250 more books: with the demo's 11, the export takes three chunks of EXPORT_CHUNK (100) books.
MORE_BOOKS = """
from library.models import Author, Book

author = Author.objects.create(name="Anonymous Exporter")
Book.objects.bulk_create(
    Book(title=f"Volume {i:03}", author=author, isbn=f"{9790000000000 + i}", published=1900 + i % 100)
    for i in range(250)
)
print(Book.objects.count())
"""
TASKS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "export-test", "version": "1"},
}


def rpc(http: httpx.Client, url: str, method: str, params: dict[str, Any], name: str = "") -> dict[str, Any]:
    """One stateless 2026-07-28 request declaring the tasks extension; its JSON-RPC result."""
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": TASKS_META}}
    r = http.post(url, json=body, headers=headers)
    assert r.status_code == 200, r.text
    if r.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in r.text.splitlines() if line.startswith("data:") and line[5:].strip()]
        reply = json.loads(data[-1])
    else:
        reply = r.json()
    assert "result" in reply, reply
    return reply["result"]  # type: ignore[no-any-return]


def test_export_catalogue_runs_as_a_task(example: tuple[OAuthServer, dict[str, str]], tmp_path: Path) -> None:
    server, tokens = example
    assert server.shell(MORE_BOOKS) == "261"
    worker = start_task_worker(server.live.env, tmp_path / "worker.log", cwd=EXAMPLE)
    headers = {"authorization": f"Bearer {tokens['visitor']}", "accept": "application/json, text/event-stream"}
    try:
        with httpx.Client(headers=headers, timeout=30) as http:
            listed = rpc(http, server.url, "tools/list", {})
            tool = next(t for t in listed["tools"] if t["name"] == "export_catalogue")
            assert tool["title"] == "Export the catalogue" and tool["annotations"]["readOnlyHint"] is True
            args = {"name": "export_catalogue", "arguments": {"format": "csv"}}
            created = rpc(http, server.url, "tools/call", args, name="export_catalogue")
            assert created["resultType"] == "task", created
            task_id = created["taskId"]
            deadline = time.monotonic() + 60
            task = created
            while task["status"] not in ("completed", "failed", "cancelled") and time.monotonic() < deadline:
                time.sleep(0.2)
                task = rpc(http, server.url, "tasks/get", {"taskId": task_id}, name=task_id)
    finally:
        worker.stop()
    assert task["status"] == "completed", (task, worker.log.read_text(errors="replace")[-3000:])
    result = task["result"]
    assert not result.get("isError"), result
    summary, export = result["content"]
    assert summary == {"type": "text", "text": summary["text"]} and "Exported 261 books as CSV" in summary["text"]
    resource = export["resource"]
    assert export["type"] == "resource" and resource["mimeType"] == "text/csv"
    assert resource["uri"].startswith("library://exports/catalogue-") and resource["uri"].endswith(".csv")
    rows = list(csv.DictReader(io.StringIO(resource["text"])))
    assert len(rows) == 261 and len({row["isbn"] for row in rows}) == 261
    assert [int(row["id"]) for row in rows] == sorted(int(row["id"]) for row in rows)
    assert "Traceback" not in worker.log.read_text(errors="replace")


async def test_the_book_card_app_in_a_host(example: tuple[OAuthServer, dict[str, str]], tmp_path: Path) -> None:
    """The library's MCP App (book_details, lend_book and return_book with ``ui=``), as a host shows it to reader:
    the card drawn by library/ui/book_card.html, Borrow (reader holds library.add_loan), the loan card, Return.

    The screenshot goes under the test's tmp dir, and to docs/img/mcp-app.png with ``MCP_DOCS_SCREENSHOTS=1``.
    """
    need_chromium()
    server, tokens = example
    async with host_page(server.live, token=tokens["reader"]) as page:
        before = (await page.evaluate("host.call('book_details', {book_id: 8})"))["structuredContent"]
        copies = before["available_copies"]
        assert copies >= 1, before
        await page.evaluate("host.show('book_details', {book_id: 8})")
        app = page.frame_locator("#app-book_details").frame_locator("iframe")
        await app.locator(".card .title", has_text="The Hound of the Baskervilles").wait_for()
        assert await app.locator(".copies").inner_text() == f"{copies} cop{'y' if copies == 1 else 'ies'} on the shelf"
        shot = tmp_path / "mcp-app.png"
        await page.locator("#apps").screenshot(path=str(shot))
        if os.environ.get("MCP_DOCS_SCREENSHOTS") == "1":
            shutil.copy(shot, ROOT / "docs" / "img" / "mcp-app.png")
        await app.locator("button.primary", has_text="Borrow").click()  # lend_book, through the host
        await app.locator(".status", has_text="Lent to").wait_for()
        await page.locator("#apps").screenshot(path=str(tmp_path / "mcp-app-lent.png"))
        lent = (await page.evaluate("host.call('book_details', {book_id: 8})"))["structuredContent"]
        assert lent["available_copies"] == copies - 1
        assert len(lent["active_loans"]) == len(before["active_loans"]) + 1
        await app.locator("button", has_text="Return it").click()  # return_book
        await app.locator(".status", has_text="Returned on").wait_for()
        await app.locator("button", has_text="Back to the book").click()  # book_details again
        await app.locator(".title", has_text="The Hound of the Baskervilles").wait_for()
        assert (await page.evaluate("host.call('book_details', {book_id: 8})"))["structuredContent"] == before


#: What a ui:// page may weigh with PUBLIC_URL set (the bridge referenced, not inlined).
UI_PAGE_BUDGET = 100_000


async def test_every_app_page_references_the_served_bridge_and_stays_small(
    example: tuple[OAuthServer, dict[str, str]],
) -> None:
    """Every ``ui://`` resource of the project, read by the official SDK as a host would: at most 100 KB, its CSP
    naming the site (``PUBLIC_URL``), and the bridge it references served there with CORS."""
    server, tokens = example
    base = server.url.removesuffix("/mcp/")
    async with ui_session(server.url, tokens["reader"]) as session:
        pages = [str(r.uri) for r in (await session.list_resources()).resources if str(r.uri).startswith("ui://")]
        assert len(pages) >= 3, pages  # book_details, lend_book, return_book
        sources = set()
        for uri in pages:
            (content,) = (await session.read_resource(uri)).contents
            text = content.text  # type: ignore[union-attr]
            assert len(text.encode()) <= UI_PAGE_BUDGET, (uri, len(text.encode()))
            assert content.meta is not None and base in content.meta["ui"]["csp"]["resourceDomains"], uri
            sources.update(s for s in text.split('"') if s.startswith(base + "/mcp/apps/bridge."))
    (bridge,) = sources  # one file for every page
    async with httpx.AsyncClient(timeout=10) as client:
        served = await client.get(bridge, headers={"Origin": "null"})
    assert served.status_code == 200 and served.headers["access-control-allow-origin"] == "*"
    assert b"McpExtApps" in served.content


async def test_the_official_sdk_accepts_the_render_helpers(example: tuple[OAuthServer, dict[str, str]]) -> None:
    """The Python SDK validates structuredContent against each tool's outputSchema: a render helper returns a
    ``CallToolResult`` as it is, so it publishes none (its own schema would describe the envelope)."""
    server, tokens = example
    async with ui_session(server.url, tokens["reader"]) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        helpers = [name for name in listed if name.endswith("__ui")]
        assert "book_details__ui" in helpers
        for name in helpers:
            assert listed[name].output_schema is None, name
        book = await session.call_tool("book_details", {"book_id": 3})
        assert not book.is_error and book.structured_content is not None
        arguments = {"result": book.structured_content, "content": [], "arguments": {"book_id": 3}}
        rendered = await session.call_tool("book_details__ui", arguments)
        assert not rendered.is_error
        assert rendered.structured_content is not None and "<" in rendered.structured_content["html"]
        pages = [r.uri for r in (await session.list_resources()).resources if str(r.uri).startswith("ui://")]
        assert pages  # a host is told of the apps' pages
    async with connect(example, "reader") as plain:  # a client that renders no apps is told of none
        listed = await plain.list_resources()
        assert not [r for r in listed.resources if str(r.uri).startswith("ui://")]
