"""The docs' one project: the README's `books` project with every later page's marked blocks, from a fresh install.

A block that belongs to the project carries an HTML comment just before it (invisible in the rendered docs):
``<!-- project: books/mcp.py append -->`` (or ``write``, or ``replace NAME``: the top-level function ``NAME``,
decorators included, is replaced by the block). ``<!-- project: run -->`` before a ``console`` block marks
commands the test runs as the page shows them (its ``$ python manage.py ...`` lines). The pages are applied in
reading order onto a new ``django-admin startproject config .`` + ``startapp books``, in a fresh virtualenv holding
the package built from this checkout with the ``asgi`` and ``drf`` extras; the project must pass ``check`` and
``check --tag mcp_hosts`` without a warning, its own tests (testing.md) must pass, and runserver (daphne) serves
each page's example to the official SDK client with the tokens auth.md says how to get.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest

from tests.support.callers import bearer_client, ui_session
from tests.support.fresh_venv import fresh_venv, run
from tests.support.servers import ROOT, LiveServer, free_port, fresh_pg_database, need_service, spawn_server
from tests.support.task_client import Modern

pytestmark = [pytest.mark.own_config, pytest.mark.version_independent]

#: The pages in reading order; each one's blocks apply on top of the previous pages'.
PAGES = [
    "README.md",
    "docs/tools.md",
    "docs/models.md",
    "docs/prompts.md",
    "docs/views.md",
    "docs/apps.md",
    "docs/auth.md",
    "docs/tasks.md",
    "docs/testing.md",
    "docs/operations.md",
]

MARKER = re.compile(
    r"<!-- project: (?P<path>\S+) (?P<how>write|append|replace \w+) -->\n```\w*\n(?P<body>.*?)```\n", re.S
)
RUN = re.compile(r"<!-- project: run -->\n(?P<indent> *)```console\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
#: The deployment guide, whose every ```python block is a deployment's settings (merged into the project's).
DEPLOYMENT = ROOT / "docs" / "deployment.md"
#: What testing.md's tests need beside the package, as the page says to install.
TEST_REQUIREMENTS = ("pytest", "pytest-django", "pytest-asyncio")


def project_blocks(page: Path) -> list[tuple[str, str, str]]:
    """The page's marked blocks, in order: (path, write|append|replace NAME, text)."""
    return [(m["path"], m["how"], m["body"]) for m in MARKER.finditer(page.read_text())]


def documented_commands(page: Path) -> list[list[str]]:
    """The ``$ python manage.py ...`` commands of the page's run blocks (``\\`` continuations joined), as argv."""
    commands: list[str] = []
    for block in RUN.finditer(page.read_text()):
        continued = False
        for line in block["body"].splitlines():
            line = line.strip()
            if continued:
                commands[-1] += " " + line
            elif line.startswith("$ "):
                commands.append(line[2:])
            continued = commands[-1].endswith("\\") if commands and (continued or line.startswith("$ ")) else False
            if continued:
                commands[-1] = commands[-1][:-1]
    argvs = [shlex.split(c.split(" #", 1)[0]) for c in commands]
    return [argv[2:] for argv in argvs if argv[:2] == ["python", "manage.py"]]


def replace_function(source: str, name: str, block: str) -> str:
    """``source`` with its top-level function ``name`` (decorators, signature and body) replaced by ``block``."""
    lines = source.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if re.match(rf"(async )?def {name}\(", line))
    while start and (lines[start - 1].startswith(("@", " ", ")")) and lines[start - 1].strip()):
        start -= 1
    end = next(
        i
        for i in range(start, len(lines))
        if lines[i].rstrip().endswith(":") and lines[i].startswith(("def", "async", ")"))
    )
    end += 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t"):
        end += 1
    return "".join(lines[:start]) + block + "\n\n" + "".join(lines[end:])


def test_every_page_marks_its_blocks() -> None:
    """Each page of the chain contributes a block or a command, so a lost marker is noticed."""
    for page in PAGES:
        assert project_blocks(ROOT / page) or documented_commands(ROOT / page), page
    assert documented_commands(ROOT / "docs/auth.md"), "auth.md's machine-client commands"


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """A fresh virtualenv with the package and its extras, and the project the pages build: (python, dir, env)."""
    tmp = tmp_path_factory.mktemp("docs-project")
    python, env = fresh_venv(tmp, f"{ROOT}[asgi,drf,redis,postgres]", *TEST_REQUIREMENTS)
    venv = python.parent.parent
    project = tmp / "project"
    project.mkdir()
    run(venv / "bin" / "django-admin", "startproject", "config", ".", cwd=project, env=env)
    run(python, "manage.py", "startapp", "books", cwd=project, env=env)
    for page in PAGES:
        for path, how, body in project_blocks(ROOT / page):
            target = project / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if how.startswith("replace "):
                target.write_text(replace_function(target.read_text(), how.split()[1], body))
                continue
            before = target.read_text() + "\n" if how == "append" and target.exists() else ""
            target.write_text(before + body)
    run(python, "manage.py", "makemigrations", "books", "-v0", cwd=project, env=env)
    run(python, "manage.py", "migrate", "-v0", cwd=project, env=env)
    seed = (
        "from django.contrib.auth.models import Permission, User\n"
        "from books.models import Author, Book\n"
        "a = Author.objects.create(name='Ursula K. Le Guin')\n"
        "Book.objects.create(title='A Wizard of Earthsea', author=a, available_copies=2,\n"
        "                    isbn='9780547773742', published='1968-11-01')\n"
        "alice = User.objects.create_user('alice', password='alice-pw')\n"
        "alice.user_permissions.add(Permission.objects.get(codename='add_loan'))\n"
        "User.objects.create_user('bob', password='bob-pw')\n"
        "User.objects.create_user('report-bot')\n"
    )
    run(python, "manage.py", "shell", "-c", seed, cwd=project, env=env)
    return python, project, env


def test_checks_are_clean(books: tuple[Path, Path, dict[str, str]]) -> None:
    """Neither `check` nor the hosts' review (`check --tag mcp_hosts`) warns about any page's block."""
    python, project, env = books
    for tag in ([], ["--tag", "mcp_hosts"]):
        done = run(python, "manage.py", "check", *tag, "--fail-level", "WARNING", cwd=project, env=env)
        assert "no issues" in done.stdout, done.stdout + done.stderr


def test_the_projects_own_tests(books: tuple[Path, Path, dict[str, str]]) -> None:
    """testing.md: the project's tests, with the package's pytest fixtures, pass as a reader runs them."""
    python, project, env = books
    done = run(python.parent / "pytest", "-q", "-p", "no:cacheprovider", cwd=project, env=env, ok=False)
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout + done.stderr


@pytest.fixture(scope="module")
def served(books: tuple[Path, Path, dict[str, str]]) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    """runserver (daphne, as the README says) and a task worker (tasks.md); alice's and bob's tokens (auth.md)."""
    python, project, env = books
    port = free_port()
    command = [str(python), "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    server = spawn_server(command, env, project / "runserver.log", port, "runserver", cwd=project)
    worker = subprocess.Popen(
        [str(python), "manage.py", "db_worker", "--interval", "0.2", "--no-startup-delay", "--no-reload"],
        cwd=project, env=env, stdout=(project / "worker.log").open("ab"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    tokens = {}
    for user, scope in (("alice", "mcp books:read"), ("bob", "mcp")):
        minted = run(python, "manage.py", "mcp_token", "--user", user, "--scope", scope, "--resource", server.url,
                     cwd=project, env=env)  # fmt: skip
        tokens[user] = minted.stdout.strip()
    try:
        yield server, tokens
    finally:
        worker.terminate()
        worker.wait(10)
        server.stop()
    for log in ("runserver.log", "worker.log"):
        text = (project / log).read_text(errors="replace")
        assert "Traceback" not in text, text


def test_pages_examples_through_the_sdk(served: tuple[LiveServer, dict[str, str]]) -> None:
    """The README's tools, tools.md's book_details and loans, models.md's book resource, prompts.md's prompt,
    views.md's DRF and plain views, as alice (a member) and bob (no permission) through the official SDK."""
    server, tokens = served

    async def drive() -> None:
        async with bearer_client(server.url, tokens["alice"], mode="2026-07-28") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            want = {"search_books", "count_to", "book_details", "lend_book", "return_book", "catalogue_report"}
            assert want | {"api_book_list", "api_book_retrieve", "book_card"} <= names, names
            assert "api_book_partial_update" not in names  # DjangoModelPermissions: alice may not change books
            found = await client.call_tool("search_books", {"query": "earthsea"})
            assert not found.is_error, found
            assert found.structured_content == {
                "result": [{"id": 1, "title": "A Wizard of Earthsea", "author": "Ursula K. Le Guin"}]
            }
            details = await client.call_tool("book_details", {"book_id": 1})
            assert not details.is_error, details
            assert details.structured_content == {
                "id": 1, "title": "A Wizard of Earthsea", "author": "Ursula K. Le Guin", "available_copies": 2,
            }  # fmt: skip
            missing = await client.call_tool("book_details", {"book_id": 99})
            assert missing.is_error
            # tools.md: a member borrows in their own name, not for someone else, and returns the loan.
            lent = await client.call_tool("lend_book", {"book_id": 1})
            assert not lent.is_error and lent.structured_content["borrower"] == "alice", lent
            other = await client.call_tool("lend_book", {"book_id": 1, "borrower": "carol"})
            assert other.is_error and "loan desk staff" in other.content[0].text
            after = await client.call_tool("book_details", {"book_id": 1})
            assert after.structured_content["available_copies"] == 1
            back = await client.call_tool("return_book", {"loan_id": lent.structured_content["id"]})
            assert not back.is_error, back
            again = await client.call_tool("return_book", {"loan_id": lent.structured_content["id"]})
            assert again.is_error and "no open loan" in again.content[0].text
            # models.md: the book as a resource, named by the README's __str__, its fields as JSON.
            listed = [r for r in (await client.list_resources()).resources if "/book/" in r.uri]
            assert [r.name for r in listed] == ["A Wizard of Earthsea (Ursula K. Le Guin)"], listed
            book = json.loads((await client.read_resource(listed[0].uri)).contents[0].text)
            assert book["title"] == "A Wizard of Earthsea" and book["available_copies"] == 2, book
            # prompts.md: the review prompt, its book completed by ISBN, the catalogue entry embedded.
            ref = types.PromptReference(type="ref/prompt", name="review_book")
            isbns = (await client.complete(ref, {"name": "book", "value": "978"})).completion.values
            assert isbns == ["9780547773742"], isbns
            prompt = await client.get_prompt("review_book", {"book": isbns[0], "tone": "critical"})
            kinds = [(m.role, m.content.type) for m in prompt.messages]
            assert kinds == [("user", "text"), ("user", "resource"), ("assistant", "text"), ("user", "text")], kinds
            # views.md: the DRF viewset's list (its search filter) and the plain view.
            api = await client.call_tool("api_book_list", {"search": "earthsea"})
            assert not api.is_error and [b["isbn"] for b in api.structured_content["result"]] == ["9780547773742"]
            card = await client.call_tool("book_card", {"pk": 1})
            assert card.content[0].text == "A Wizard of Earthsea\nUrsula K. Le Guin", card
        async with bearer_client(server.url, tokens["bob"], mode="2026-07-28") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "search_books" in names and not {"lend_book", "return_book"} & names, names

    anyio.run(drive)


def test_apps_card_through_the_sdk(served: tuple[LiveServer, dict[str, str]]) -> None:
    """apps.md: book_details' ui:// page and its render helper, which shows alice the Borrow button."""
    server, tokens = served

    async def drive() -> None:
        async with ui_session(server.url, tokens["alice"]) as session:
            tool = {t.name: t for t in (await session.list_tools()).tools}["book_details"]
            page_uri = tool.meta["ui"]["resourceUri"]
            page = (await session.read_resource(page_uri)).contents[0]
            assert page.mime_type == "text/html;profile=mcp-app" and "<html" in page.text
            book = await session.call_tool("book_details", {"book_id": 1})
            arguments = {"result": book.structured_content, "content": [], "arguments": {"book_id": 1}}
            rendered = await session.call_tool("book_details__ui", arguments)
            html = rendered.structured_content["html"]
            assert "<h2>A Wizard of Earthsea</h2>" in html and 'data-mcp-call="lend_book"' in html, html

    anyio.run(drive)


def test_a_task_runs_on_the_worker(served: tuple[LiveServer, dict[str, str]]) -> None:
    """tasks.md: catalogue_report, called by a client that declares the tasks extension, runs on db_worker."""
    server, tokens = served
    client = Modern(server.url, headers={"Authorization": f"Bearer {tokens['alice']}"})
    task = client.wait(client.start("catalogue_report"))
    assert task["status"] == "completed", task
    text = task["result"]["content"][0]["text"]
    assert text == "Ursula K. Le Guin: 1 books, 2 copies on the shelf", text


def test_machine_client_as_auth_md_says(
    books: tuple[Path, Path, dict[str, str]], served: tuple[LiveServer, dict[str, str]]
) -> None:
    """auth.md: staff create a machine client with the page's commands; its token, asked for this endpoint
    (``resource``), calls tools as its service user; asked without it, the refusal says what to send."""
    python, project, env = books
    server, _ = served
    create, narrow = documented_commands(ROOT / "docs/auth.md")[:2]
    out = run(python, "manage.py", *create, cwd=project, env=env).stdout
    client_id, secret = (re.search(rf"^{key} (\S+)$", out, re.M)[1] for key in ("client_id", "client_secret"))
    endpoint = server.url.split("/mcp/")[0] + "/oauth/token/"
    form = {"grant_type": "client_credentials", "scope": "mcp books:read", "resource": server.url}
    got = httpx.post(endpoint, data=form, auth=(client_id, secret), timeout=30)
    assert got.status_code == 200, got.text
    token = got.json()["access_token"]

    async def drive(token: str) -> Any:
        async with bearer_client(server.url, token, mode="2026-07-28") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "search_books" in names and "lend_book" not in names, names  # report-bot holds no permission
            return (await client.call_tool("search_books", {"query": "wizard"})).structured_content

    assert anyio.run(drive, token)["result"][0]["title"] == "A Wizard of Earthsea"
    bare = httpx.post(
        endpoint, data={k: v for k, v in form.items() if k != "resource"}, auth=(client_id, secret), timeout=30
    ).json()
    refused = httpx.post(server.url, json={}, headers={"Authorization": f"Bearer {bare['access_token']}"}, timeout=30)
    assert refused.status_code == 401 and f"resource={server.url}" in refused.headers["www-authenticate"].replace(
        '"', ""
    ), refused.headers
    # The page's second command narrows the client: it gets no books:read any more.
    run(python, "manage.py", *[client_id if a.startswith("7Qx") else a for a in narrow], cwd=project, env=env)
    narrowed = httpx.post(endpoint, data=form, auth=(client_id, secret), timeout=30)
    assert narrowed.status_code == 400 and narrowed.json()["error"] == "invalid_scope", narrowed.text


def test_audit_log_as_operations_md_shows(
    books: tuple[Path, Path, dict[str, str]], served: tuple[LiveServer, dict[str, str]]
) -> None:
    """operations.md: the page's ``mcp_audit calls`` command lists alice's search_books calls."""
    python, project, env = books
    server, tokens = served

    async def search() -> None:
        async with bearer_client(server.url, tokens["alice"], mode="2026-07-28") as client:
            assert not (await client.call_tool("search_books", {"query": "wizard"})).is_error

    anyio.run(search)
    command = documented_commands(ROOT / "docs/operations.md")[0]
    assert command[:4] == ["mcp_audit", "calls", "--tool", "search_books"], command
    deadline = time.monotonic() + 15  # the audit writer flushes in the background
    while True:
        out = run(python, "manage.py", *command, cwd=project, env=env).stdout
        rows = [line.split() for line in out.splitlines()[1:]]
        if any(row[1:4] == ["tools/call", "search_books", "ok"] and "alice" in row for row in rows):
            break
        assert time.monotonic() < deadline, out
        time.sleep(0.5)


def test_deployment_settings_on_the_project(books: tuple[Path, Path, dict[str, str]]) -> None:
    """deployment.md: the guide's settings (every python block, ``DJANGO_MCP`` dicts merged into the project's)
    on the books project, PostgreSQL and Redis: it migrates, and ``check --deploy --database default`` raises
    none of the package's warnings."""
    need_service("PostgreSQL", 5432)
    need_service("Redis", 6379)
    python, project, env = books
    name = fresh_pg_database("_docs_books")
    parts = ["from .settings import *  # noqa: F403\n_mcp = dict(DJANGO_MCP)  # noqa: F405\n"]
    for block in re.findall(r"^```python\n(.*?)^```", DEPLOYMENT.read_text(), re.S | re.M):
        parts.append(block + "_mcp.update(DJANGO_MCP)\nDJANGO_MCP = _mcp\n")
    parts.append(
        "DEBUG = False\nALLOWED_HOSTS = ['books.example.com']\n"
        f"DATABASES['default'].update(NAME={name!r}, HOST='127.0.0.1', USER='postgres')\n"
    )
    (project / "config" / "production.py").write_text("\n".join(parts))
    production = {**env, "DJANGO_SETTINGS_MODULE": "config.production"}
    run(python, "manage.py", "migrate", "-v0", cwd=project, env=production)
    done = run(python, "manage.py", "check", "--deploy", "--database", "default", cwd=project, env=production, ok=False)
    assert done.returncode == 0 and "django_mcp." not in done.stdout + done.stderr, done.stdout + done.stderr
    # The same command on the development settings: the package's deployment checks do run in this project.
    checked = run(python, "manage.py", "check", "--deploy", cwd=project, env=env, ok=False)
    dev = checked.stdout + checked.stderr
    assert "django_mcp.W020" in dev and "django_mcp.W021" in dev, dev
