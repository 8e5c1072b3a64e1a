"""TemplatePrompt through the real HTTP endpoint, with the official SDK client in both eras.

Each test runs against a daphne server on SQLite and on PostgreSQL. The server sits
behind Django's session authentication (``tests/promptapp/asgi.py``) so that two
users with different permissions call it: alice has ``auth.view_group`` and is in
the "Readers" group, bob has no permission and is in "Reviewers".
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import pytest
from django import template
from django.core.exceptions import ImproperlyConfigured
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from django_mcp import TemplatePrompt
from tests.promptapp.mcp import NOTES, PNG
from tests.support.seeds import SESSIONS_SETUP
from tests.support.servers import LiveServer, drop_pg_database, server_env, start_server

MODES = ["legacy", "2026-07-28"]
PNG_B64 = base64.b64encode(PNG).decode()


@dataclass
class Live:
    server: LiveServer
    sessions: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.url

    def headers(self, user: str | None = None, language: str | None = None) -> dict[str, str]:
        headers = {}
        if user is not None:
            headers["Cookie"] = f"sessionid={self.sessions[user]}"
        if language is not None:
            headers["Accept-Language"] = language
        return headers


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def live(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    db = request.param
    tmp = tmp_path_factory.mktemp(f"prompts-{db}")
    env = server_env(tmp, db=db, layer="memory")  # on PostgreSQL, a fresh database of its own
    server = start_server(env, tmp / "daphne.log", app="tests.promptapp.asgi:application")
    try:
        sessions = json.loads(server.manage("shell", "-c", SESSIONS_SETUP).strip().splitlines()[-1])
        yield Live(server, sessions)
    finally:
        server.stop()
        if db == "postgres":
            drop_pg_database(env["MCP_PG_NAME"])
    log = (tmp / "daphne.log").read_text(errors="replace")
    # The only tracebacks are the deliberately broken template's (test_form_errors_are_invalid_params).
    assert log.count("Traceback") == log.count("TemplateSyntaxError: {% message %} blocks cannot be nested"), log


@contextlib.asynccontextmanager
async def connect(live: Live, mode: str, user: str | None = None, language: str | None = None) -> AsyncIterator[Client]:
    """The SDK client over an httpx client carrying the session cookie and Accept-Language."""
    async with create_mcp_http_client(headers=live.headers(user, language)) as http:
        kwargs: dict[str, Any] = {"mode": mode, "read_timeout_seconds": 30}
        if mode != "legacy":
            kwargs["cache"] = None
        async with Client(streamable_http_client(live.url, http_client=http), **kwargs) as client:
            yield client


def texts(result: types.GetPromptResult) -> list[tuple[str, str]]:
    return [(m.role, m.content.text) for m in result.messages if isinstance(m.content, types.TextContent)]


async def error_of(coro: Any) -> MCPError:
    with pytest.raises(MCPError) as info:
        await coro
    return info.value


# -- listing -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.own_config
async def test_form_fields_become_arguments(live: Live, mode: str) -> None:
    async with connect(live, mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    review = prompts["review_book"]
    assert review.title == "Review a book"
    assert review.description == "Ask for a book review."
    args = {a.name: a for a in review.arguments or []}
    assert list(args) == ["book", "tone", "words", "club"]
    assert args["book"].required is True
    assert args["book"].title == "Book"
    assert args["book"].description == "The title of the book to review."
    assert args["tone"].required is False and args["tone"].description == "How the review should sound."
    summarize = {a.name: a for a in prompts["summarize"].arguments or []}
    assert summarize["text"].required and summarize["text"].description == "The text to summarise."
    assert summarize["style"].required is False
    assert prompts["embed_note"].description == "Show a note and the library logo."  # the class docstring
    assert "club_newsletter" not in prompts  # needs auth.view_group: hidden from anonymous callers


# -- messages ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.own_config
async def test_message_blocks_give_several_messages(live: Live, mode: str) -> None:
    async with connect(live, mode) as client:
        result = await client.get_prompt("review_book", {"book": "Dune", "tone": "critical", "words": "300"})
        assert result.description == "Ask for a book review."
        assert texts(result) == [
            ("user", 'Please review "Dune" in a critical tone, in about 300 words.'),
            ("assistant", "Of course. Should I mention spoilers?"),
            ("user", "No spoilers, please."),
        ]
        # Omitted optional arguments take the field's initial value; a ModelChoiceField gives the object.
        result = await client.get_prompt("review_book", {"book": "Emma", "club": "Readers"})
        assert texts(result)[0] == (
            "user",
            'Please review "Emma" in a friendly tone, in about 200 words.\nIt is for the Readers reading club.',
        )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.own_config
async def test_plain_template_is_one_unescaped_user_message(live: Live, mode: str) -> None:
    text = '<b>"Tom & Jerry"</b> isn\'t <script>'
    async with connect(live, mode) as client:
        result = await client.get_prompt("summarize", {"text": text, "style": "bullet points"})
        assert texts(result) == [("user", f"Summarise the following text (bullet points):\n\n{text}")]
        # Markers need a NUL and a per-render random nonce; text fields refuse NULs anyway.
        err = await error_of(client.get_prompt("summarize", {"text": "\x00mcp000000000000000000:0\x00"}))
        assert err.error.data["errors"]["text"][0]["code"] == "null_characters_not_allowed"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.own_config
async def test_embedded_resource_and_images(live: Live, mode: str) -> None:
    async with connect(live, mode) as client:
        result = await client.get_prompt("embed_note", {"slug": "welcome"})
        kinds = [(m.role, m.content.type) for m in result.messages]
        assert kinds == [
            ("user", "text"),
            ("user", "resource"),
            ("user", "text"),
            ("user", "image"),
            ("user", "image"),
            ("assistant", "text"),
        ]
        embedded = result.messages[1].content
        assert isinstance(embedded, types.EmbeddedResource)
        assert isinstance(embedded.resource, types.TextResourceContents)
        assert embedded.resource.uri == "prompt://notes/welcome"
        assert embedded.resource.text == NOTES["welcome"]
        assert embedded.resource.mime_type == "text/markdown"
        for message in result.messages[3:5]:
            assert isinstance(message.content, types.ImageContent)
            assert message.content.data == PNG_B64 and message.content.mime_type == "image/png"
        assert texts(result)[-1] == ("assistant", "Thanks, I have read note welcome.")

        # The URI comes from the argument: an unknown note is the resource read's own error.
        err = await error_of(client.get_prompt("embed_note", {"slug": "nope"}))
        assert err.error.code == (-32002 if mode == "legacy" else -32602)
        assert "prompt://notes/nope" in err.error.message


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.own_config
async def test_form_errors_are_invalid_params(live: Live, mode: str) -> None:
    async with connect(live, mode) as client:
        err = await error_of(client.get_prompt("review_book", {"tone": "angry", "words": "many", "club": "Nope"}))
        assert err.error.code == -32602
        assert err.error.message.startswith("Invalid arguments for prompt 'review_book': ")
        errors = err.error.data["errors"]
        assert {name: [e["code"] for e in errs] for name, errs in errors.items()} == {
            "book": ["required"],
            "tone": ["invalid_choice"],
            "words": ["invalid"],
            "club": ["invalid_choice"],
        }
        assert errors["book"][0]["message"] == "This field is required."

        err = await error_of(client.get_prompt("review_book", {"book": "Dune", "tone": "critical", "words": "60"}))
        assert err.error.data["errors"] == {
            "__all__": [{"message": "A critical review needs at least 100 words.", "code": "too_short"}]
        }
        err = await error_of(client.get_prompt("review_book", {"book": "Dune", "words": "10"}))
        assert [e["code"] for e in err.error.data["errors"]["words"]] == ["min_value"]

        err = await error_of(client.get_prompt("no_such_prompt", {}))
        assert err.error.code == -32602

        # A broken template is the server's bug: a generic internal error, no details leak.
        err = await error_of(client.get_prompt("nested", {}))
        assert err.error.code == -32603 and err.error.message == "Internal error"


# -- i18n ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.own_config
async def test_rendered_in_the_callers_language(live: Live, mode: str) -> None:
    async with connect(live, mode, language="fr-FR,fr;q=0.9,en;q=0.5") as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert prompts["review_book"].title == "Critiquer un livre"
        book = (prompts["review_book"].arguments or [])[0]
        assert (book.title, book.description) == ("Livre", "Le titre du livre à critiquer.")
        result = await client.get_prompt("say_yes", {})
        assert texts(result) == [("user", "[fr] Oui / Critiquer un livre")]
        err = await error_of(client.get_prompt("review_book", {}))
        assert err.error.data["errors"]["book"][0]["message"] == "Ce champ est obligatoire."

    async with connect(live, mode, language="de") as client:
        result = await client.get_prompt("say_yes", {})
        assert texts(result) == [("user", "[de] Ja / Review a book")]  # no German catalogue for the app's string

    async with connect(live, mode, language="xx, *") as client:  # nothing supported: LANGUAGE_CODE
        result = await client.get_prompt("say_yes", {})
        assert texts(result) == [("user", "[en-us] Yes / Review a book")]

    async with connect(live, mode) as client:
        result = await client.get_prompt("say_yes", {})
        assert texts(result) == [("user", "[en-us] Yes / Review a book")]


# -- completion ----------------------------------------------------------------------------------


async def complete(client: Client, prompt: str, name: str, value: str, **context: str) -> list[str]:
    result = await client.complete(
        types.PromptReference(type="ref/prompt", name=prompt), {"name": name, "value": value}, context or None
    )
    return result.completion.values


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.own_config
async def test_completion_from_choices_querysets_and_callables(live: Live, mode: str) -> None:
    async with connect(live, mode) as client:
        assert await complete(client, "review_book", "tone", "") == ["friendly", "critical", "academic"]
        assert await complete(client, "review_book", "tone", "CR") == ["critical"]
        assert await complete(client, "review_book", "tone", "schol") == ["academic"]  # matched on the label
        assert sorted(await complete(client, "review_book", "club", "re")) == ["Readers", "Reviewers"]
        assert await complete(client, "review_book", "book", "x") == []  # a free-text field
        assert await complete(client, "summarize", "style", "b") == ["bullet points"]
        assert await complete(client, "summarize", "text", "abc", style="short") == ["abc…for anonymous (short)"]
        assert await complete(client, "embed_note", "slug", "w") == ["welcome"]
        assert await complete(client, "club_greeting", "club", "R") == ["Readers", "Reviewers"]  # sync + ORM
        # A form whose queryset depends on the caller: nothing for anonymous.
        assert await complete(client, "own_club", "club", "") == []


# -- two users -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.own_config
async def test_permissions_with_two_users(live: Live, mode: str) -> None:
    async with connect(live, mode, user="alice") as alice, connect(live, mode, user="bob") as bob:
        assert "club_newsletter" in {p.name for p in (await alice.list_prompts()).prompts}
        assert "club_newsletter" not in {p.name for p in (await bob.list_prompts()).prompts}

        result = await alice.get_prompt("club_newsletter", {"club": "Staff"})
        assert texts(result) == [("user", "Write the newsletter of the Staff club.")]
        assert (await error_of(bob.get_prompt("club_newsletter", {"club": "Staff"}))).error.code == -32602
        assert await complete(alice, "club_newsletter", "club", "st") == ["Staff"]
        assert (await error_of(complete(bob, "club_newsletter", "club", "st"))).error.code == -32602

        # An embedded resource is read with the caller's rights: never embedded for bob.
        result = await alice.get_prompt("read_secret", {})
        assert texts(result) == [("user", "Read this:")]
        secret = result.messages[1].content
        assert isinstance(secret, types.EmbeddedResource)
        assert isinstance(secret.resource, types.TextResourceContents)
        assert secret.resource.text == "the staff door code is 4321"
        err = await error_of(bob.get_prompt("read_secret", {}))
        assert err.error.code == (-32002 if mode == "legacy" else -32602)
        assert "4321" not in json.dumps(err.error.model_dump())

        # Per-user form querysets: completion and validation both follow the caller.
        assert await complete(alice, "own_club", "club", "") == ["Readers"]
        assert await complete(bob, "own_club", "club", "") == ["Reviewers"]
        err = await error_of(alice.get_prompt("own_club", {"club": "Reviewers"}))
        assert [e["code"] for e in err.error.data["errors"]["club"]] == ["invalid_choice"]
        assert texts(await bob.get_prompt("own_club", {"club": "Reviewers"})) == [
            ("user", "Write the newsletter of the Reviewers club.")
        ]
        # A callable completer receives the caller as ctx.
        assert await complete(alice, "summarize", "text", "x") == ["x…for alice (any)"]


# -- without a server: declaration errors and the tags outside a prompt -----------------------------


def test_declaration_errors() -> None:
    with pytest.raises(ImproperlyConfigured, match="needs a name and a template_name"):
        TemplatePrompt("x")
    with pytest.raises(ImproperlyConfigured, match="either form= or arguments="):
        TemplatePrompt("x", "t.txt", form=object, arguments=["a"])  # type: ignore[arg-type]


def _engine() -> template.Engine:
    return template.Engine(libraries={"mcp": "django_mcp.templatetags.mcp"})


def test_tags_render_plainly_outside_a_prompt() -> None:
    source = (
        '{% load mcp %}{% message "assistant" %}Hi {{ name }}{% endmessage %} '
        '{% resource "x://{id}" id=n %}{% image data %}'
    )
    out = _engine().from_string(source).render(template.Context({"name": "Ann", "n": "a b", "data": b"\x89"}))
    assert out == "Hi Ann x://a%20b"


@pytest.mark.parametrize(
    "source",
    [
        '{% message "system" %}x{% endmessage %}',
        "{% message %}x{% endmessage %}",
        '{% message "user" %}x',
        "{% resource %}",
        '{% image data mime="image/png" %}',
        "{% image data png %}",
        "{% audio %}",
    ],
)
def test_tag_syntax_errors(source: str) -> None:
    with pytest.raises(template.TemplateSyntaxError):
        _engine().from_string("{% load mcp %}" + source)
