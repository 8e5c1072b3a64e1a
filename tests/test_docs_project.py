"""The docs' one project: the README's `books` project with every later page's marked blocks, from a fresh install.

A block that belongs to the project carries an HTML comment just before it (invisible in the rendered docs):
``<!-- project: books/mcp.py append -->`` (or ``write``). The pages are applied in reading order onto a new
``django-admin startproject config .`` + ``startapp books``, in a fresh virtualenv holding the package built from
this checkout with the README's ``asgi`` extra; the project must pass ``check`` and ``check --tag mcp_hosts``
without a warning, and runserver (daphne) serves each page's example to the official SDK client.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.conftest import ROOT, free_port, spawn_server
from tests.fresh_venv import fresh_venv, run

pytestmark = [pytest.mark.own_config, pytest.mark.version_independent]

#: The pages in reading order; each one's blocks apply on top of the previous pages'.
PAGES = ["README.md", "docs/tools.md", "docs/models.md", "docs/prompts.md"]

MARKER = re.compile(r"<!-- project: (?P<path>\S+) (?P<how>write|append) -->\n```\w*\n(?P<body>.*?)```\n", re.S)


def project_blocks(page: Path) -> list[tuple[str, str, str]]:
    """The page's marked blocks, in order: (path, write|append, text)."""
    return [(m["path"], m["how"], m["body"]) for m in MARKER.finditer(page.read_text())]


def test_every_page_marks_its_blocks() -> None:
    """Each page of the chain contributes at least one block, so a lost marker is noticed."""
    for page in PAGES:
        assert project_blocks(ROOT / page), page


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """A fresh virtualenv with the package and its `asgi` extra, and the project the pages build: (python, dir, env)."""
    tmp = tmp_path_factory.mktemp("docs-project")
    python, env = fresh_venv(tmp, f"{ROOT}[asgi]")
    venv = python.parent.parent
    project = tmp / "project"
    project.mkdir()
    run(venv / "bin" / "django-admin", "startproject", "config", ".", cwd=project, env=env)
    run(python, "manage.py", "startapp", "books", cwd=project, env=env)
    for page in PAGES:
        for path, how, body in project_blocks(ROOT / page):
            target = project / path
            target.parent.mkdir(parents=True, exist_ok=True)
            before = target.read_text() + "\n" if how == "append" and target.exists() else ""
            target.write_text(before + body)
    run(python, "manage.py", "makemigrations", "books", "-v0", cwd=project, env=env)
    run(python, "manage.py", "migrate", "-v0", cwd=project, env=env)
    seed = (
        "from books.models import Author, Book\n"
        "a = Author.objects.create(name='Ursula K. Le Guin')\n"
        "Book.objects.create(title='A Wizard of Earthsea', author=a, available_copies=2,\n"
        "                    isbn='9780547773742', published='1968-11-01')\n"
    )
    run(python, "manage.py", "shell", "-c", seed, cwd=project, env=env)
    return python, project, env


def test_checks_are_clean(books: tuple[Path, Path, dict[str, str]]) -> None:
    """Neither `check` nor the hosts' review (`check --tag mcp_hosts`) warns about any page's block."""
    python, project, env = books
    for tag in ([], ["--tag", "mcp_hosts"]):
        done = run(python, "manage.py", "check", *tag, "--fail-level", "WARNING", cwd=project, env=env)
        assert "no issues" in done.stdout, done.stdout + done.stderr


def test_pages_examples_through_the_sdk(books: tuple[Path, Path, dict[str, str]]) -> None:
    """runserver (daphne, as the README says) serves the README's tools, tools.md's book_details and
    models.md's book resource."""
    python, project, env = books
    port = free_port()
    command = [str(python), "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    server = spawn_server(command, env, project / "runserver.log", port, "runserver", cwd=project)
    try:

        async def drive() -> None:
            async with Client(server.url, read_timeout_seconds=30) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"search_books", "count_to", "book_details"} <= names, names
                found = await client.call_tool("search_books", {"query": "earthsea"})
                assert not found.is_error, found
                assert found.structured_content == {
                    "result": [{"id": 1, "title": "A Wizard of Earthsea", "author": "Ursula K. Le Guin"}]
                }
                details = await client.call_tool("book_details", {"book_id": 1})
                assert not details.is_error, details
                assert details.structured_content == {
                    "id": 1,
                    "title": "A Wizard of Earthsea",
                    "author": "Ursula K. Le Guin",
                    "available_copies": 2,
                }
                missing = await client.call_tool("book_details", {"book_id": 99})
                assert missing.is_error
                # models.md: the book as a resource, named by the README's __str__, its fields as JSON.
                listed = [r for r in (await client.list_resources()).resources if "/book/" in r.uri]
                assert [r.name for r in listed] == ["A Wizard of Earthsea (Ursula K. Le Guin)"], listed
                read = await client.read_resource(listed[0].uri)
                book = json.loads(read.contents[0].text)
                assert book["title"] == "A Wizard of Earthsea" and book["available_copies"] == 2, book
                # prompts.md: the review prompt, its book completed by ISBN, the catalogue entry embedded.
                ref = types.PromptReference(type="ref/prompt", name="review_book")
                isbns = (await client.complete(ref, {"name": "book", "value": "978"})).completion.values
                assert isbns == ["9780547773742"], isbns
                prompt = await client.get_prompt("review_book", {"book": isbns[0], "tone": "critical"})
                kinds = [(m.role, m.content.type) for m in prompt.messages]
                assert kinds == [("user", "text"), ("user", "resource"), ("assistant", "text"), ("user", "text")], kinds
                assert "critical review" in prompt.messages[0].content.text

        anyio.run(drive)
    finally:
        server.stop()
    log = (project / "runserver.log").read_text(errors="replace")
    assert "Traceback" not in log, log
