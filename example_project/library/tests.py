"""The library over MCP, tested in process with django_mcp's test client (``mcp_client``).

Run them with ``cd example_project && pytest``. Two accounts as ``demo_setup`` makes them:
``reader``, a member (borrows and returns their own books), and ``librarian``, desk staff
(sees every loan, lends to anyone, takes any book back). The demo data has a desk loan of
book 6 to "Maria Lopez" (loan 1) and one of book 3 to "Jun Park" (loan 3).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from django_mcp.test import MCPClientError, MCPTestClient

from .management.commands.demo_setup import MEMBER_PERMISSIONS, STAFF_PERMISSIONS, account
from .models import Book, Loan

#: The handshake era (a session, as most clients today) and the stateless 2026-07-28 revision.
ERAS = ["2025-11-25", "2026-07-28"]


@pytest.fixture
def demo(db: None) -> None:
    call_command("loaddata", "demo", verbosity=0)


@pytest.fixture
def member(demo: None) -> User:
    return account("reader", "pw-reader", MEMBER_PERMISSIONS)  # type: ignore[no-any-return]


@pytest.fixture
def librarian(demo: None) -> User:
    return account("librarian", "pw-librarian", STAFF_PERMISSIONS)  # type: ignore[no-any-return]


def tool_names(client: MCPTestClient) -> set[str]:
    return {tool.name for tool in client.list_tools().tools}


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def test_who_sees_the_loan_tools(mcp_client: MCPTestClient, member: User, demo: None) -> None:
    mcp_client.force_authenticate(User.objects.create_user("visitor"))
    assert {"search_books", "book_details", "library_stats"} <= tool_names(mcp_client)
    assert not {"lend_book", "return_book"} & tool_names(mcp_client)
    mcp_client.force_authenticate(member)
    assert {"lend_book", "return_book"} <= tool_names(mcp_client)


def test_search(mcp_client: MCPTestClient, demo: None) -> None:
    result = mcp_client.call_tool("search_books", {"query": "wells"})
    found = result.structured_content
    assert found is not None and found["total"] == 2
    assert {book["title"] for book in found["books"]} == {"The Time Machine", "The War of the Worlds"}


@pytest.mark.parametrize("version", ERAS)
def test_a_member_borrows_in_their_own_name(mcp_client: MCPTestClient, member: User, version: str) -> None:
    client = MCPTestClient(protocol_version=version, user=member)
    result = client.call_tool("lend_book", {"book_id": 2})
    assert not result.is_error, text(result)
    assert result.structured_content is not None and result.structured_content["borrower"] == "reader"
    loan = Loan.objects.get(pk=result.structured_content["id"])
    assert loan.member == member and Book.objects.get(pk=2).available_copies == 0
    logs = [n["params"]["data"] for n in client.notifications if n["method"] == "notifications/message"]
    assert logs == [f"Lent 'Emma' to reader, due {loan.due.isoformat()}"]

    refused = client.call_tool("lend_book", {"book_id": 1, "borrower": "Someone Else"})
    assert refused.is_error and "Only library staff" in text(refused)
    client.close()


@pytest.mark.parametrize("version", ERAS)
def test_the_desk_asks_who_borrows(librarian: User, version: str) -> None:
    client = MCPTestClient(protocol_version=version, user=librarian)
    client.on_elicitation({"name": "Ada Lovelace"})
    result = client.call_tool("lend_book", {"book_id": 5})
    assert not result.is_error, text(result)
    assert result.structured_content is not None and result.structured_content["borrower"] == "Ada Lovelace"
    assert [r.params["message"] for r in client.server_requests] == ["Who is borrowing 'The Time Machine'?"]
    assert Loan.objects.get(pk=result.structured_content["id"]).member is None  # a walk-in: no member account

    client.on_elicitation("decline")
    declined = client.call_tool("lend_book", {"book_id": 5})
    assert declined.is_error and "decline" in text(declined)
    client.close()


@pytest.mark.parametrize("version", ERAS)
def test_nobody_ends_someone_elses_loan(member: User, librarian: User, version: str) -> None:
    client = MCPTestClient(protocol_version=version, user=member)
    attempt = client.call_tool("return_book", {"loan_id": 1})  # Maria Lopez's desk loan
    assert attempt.is_error and text(attempt) == "There is no loan with id 1."
    assert Loan.objects.get(pk=1).returned is None

    client.force_authenticate(librarian)
    returned = client.call_tool("return_book", {"loan_id": 1})
    assert not returned.is_error and returned.structured_content is not None
    assert returned.structured_content["returned"] is not None
    assert Book.objects.get(pk=6).available_copies == 1
    client.close()


@pytest.mark.parametrize("version", ERAS)
def test_loans_are_private(member: User, librarian: User, version: str) -> None:
    client = MCPTestClient(protocol_version=version, user=member)
    with pytest.raises(MCPClientError):
        client.read_resource("django://library/loan/1")  # not the member's: as if it did not exist
    own = client.call_tool("lend_book", {"book_id": 1}).structured_content
    assert own is not None
    assert "reader" in client.read_resource(f"django://library/loan/{own['id']}").contents[0].text  # type: ignore[union-attr]
    details = client.call_tool("book_details", {"book_id": 6}).structured_content
    assert details is not None and details["active_loans"] == []  # Maria's loan is not the member's to see

    client.force_authenticate(librarian)
    assert "Maria Lopez" in client.read_resource("django://library/loan/1").contents[0].text  # type: ignore[union-attr]
    details = client.call_tool("book_details", {"book_id": 6}).structured_content
    assert details is not None and [loan["borrower"] for loan in details["active_loans"]] == ["Maria Lopez"]
    client.close()


def test_resources_prompts_and_completion(mcp_client: MCPTestClient, demo: None) -> None:
    page = mcp_client.read_resource("library://books/2").contents[0]
    assert page.text.startswith("# Emma")  # type: ignore[union-attr]
    completed = mcp_client.complete(resource_template="library://books/{book_id}", argument="book_id", value="1")
    assert completed.completion.values == ["1", "10", "11"]
    prompt = mcp_client.get_prompt("recommend_books", {"interests": "sea voyages", "reader": "teenagers"})
    assert "Twenty Thousand Leagues Under the Seas" in prompt.messages[0].content.text  # type: ignore[union-attr]
    isbns = mcp_client.complete(prompt="review_book", argument="book", value="97800000000")
    assert "9780000000019" in isbns.completion.values


def test_export_catalogue(mcp_client: MCPTestClient, demo: None) -> None:
    # A client without the tasks extension gets the export in the response; see tests/test_example_project.py
    # in the repository for the same call run as a task by `manage.py db_worker`.
    result = mcp_client.call_tool("export_catalogue", {"format": "json"})
    summary, export = result.content
    assert (
        summary.text == f"Exported {Book.objects.count()} books as JSON ({len(export.resource.text.encode())} bytes)."
    )  # type: ignore[union-attr]
    books = json.loads(export.resource.text)  # type: ignore[union-attr]
    assert export.resource.mime_type == "application/json"  # type: ignore[union-attr]
    assert [book["id"] for book in books] == list(Book.objects.order_by("pk").values_list("pk", flat=True))
    assert books[0]["author"] == Book.objects.select_related("author").get(pk=books[0]["id"]).author.name


def test_skills(mcp_client: MCPTestClient, member: User, librarian: User) -> None:
    """The lending skill is everyone's; the desk's, rendered with the registered tools, is for staff."""
    mcp_client.force_authenticate(member)
    listed = mcp_client.request("skills/list")["skills"]
    assert [skill["uri"] for skill in listed] == ["skill://lending/SKILL.md"]
    assert listed[0]["frontmatter"]["name"] == "lending"
    lending = mcp_client.read_resource("skill://lending/SKILL.md").contents[0]
    assert "search_books" in lending.text and "references/RULES.md" in lending.text  # type: ignore[union-attr]
    with pytest.raises(MCPClientError):
        mcp_client.request("skills/get", {"uri": "skill://library/desk/SKILL.md"})
    mcp_client.force_authenticate(librarian)
    desk = mcp_client.request("skills/get", {"uri": "skill://library/desk/SKILL.md"})["skill"]
    assert desk["frontmatter"]["name"] == "desk"
    page = mcp_client.read_resource("skill://library/desk/SKILL.md").contents[0]
    assert "- `return_book`: Return a book" in page.text  # type: ignore[union-attr]
