"""ModelResource through the real endpoint: the official SDK client in both eras, two users, real signals.

The live server runs ``tests.settings.asgi_users`` (``x-test-user`` names the caller) on
SQLite, or PostgreSQL with ``MCP_TEST_DB=postgres``. Users: alice (staff, view
permissions), bob (view permissions through a group, sees only his documents),
carol (no permissions).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.support.callers import all_resources, client, read_error
from tests.support.servers import LiveServer, server_env, start_server

pytestmark = pytest.mark.filterwarnings("ignore:resources/subscribe is removed")

MODES = ["legacy", "2026-07-28"]
DOC = "django://modelapp/document/{pk}"
SHELVES = 120
BIG = 1024 * 1024 + 10  # above the default RESOURCE_MAX_BLOB_SIZE

SETUP = f"""
from django.contrib.auth.models import Group, Permission, User
from django.core.files.base import ContentFile
from tests.modelapp.models import Document, Note, Shelf, Tag

view = Permission.objects.filter(content_type__app_label="modelapp", codename__startswith="view_")
alice = User.objects.create_user("alice", is_staff=True)
alice.user_permissions.set(view)
readers = Group.objects.create(name="readers")
readers.permissions.set(view)
bob = User.objects.create_user("bob")
bob.groups.add(readers)
User.objects.create_user("carol")
shelves = [Shelf.objects.create(name=f"Shelf {{i:03d}}") for i in range({SHELVES})]
red, blue = Tag.objects.create(slug="red"), Tag.objects.create(slug="blue")
a1 = Document.objects.create(title="Alpha report", shelf=shelves[0], owner=alice, secret="s3cret")
a1.tags.set([red, blue])
a1.attachment.save("alpha.txt", ContentFile(b"alpha bytes"))
a2 = Document.objects.create(title="Alpine notes", shelf=shelves[1], owner=alice)
a2.attachment.save("huge.bin", ContentFile(b"x" * {BIG}))
b1 = Document.objects.create(title="Bob's alpha draft", shelf=shelves[0], owner=bob)
b1.tags.set([red])
Note.objects.create(text="three little words", document=a1)
print(a1.pk, a2.pk, b1.pk)
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, int]]]:
    tmp = tmp_path_factory.mktemp("models")
    env = server_env(tmp, MCP_MEDIA_ROOT=str(tmp / "media"))  # on PostgreSQL, a fresh database of its own
    server = start_server(env, tmp / "daphne.log", app="tests.settings.asgi_users:application")
    a1, a2, b1 = (int(x) for x in server.manage("shell", "-c", SETUP).splitlines()[-1].split())
    yield server, {"a1": a1, "a2": a2, "b1": b1}
    server.stop()
    log = (tmp / "daphne.log").read_text(errors="replace")
    assert "Traceback" not in log and " 500 " not in log, log


class Notes:
    """Collects the notifications a client receives."""

    def __init__(self) -> None:
        self.got: list[tuple[str, str | None]] = []
        self.event = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if isinstance(method, str) and method.startswith("notifications/"):
            self.got.append((method, getattr(getattr(root, "params", None), "uri", None)))
            self.event.set()

    async def wait_for(self, item: tuple[str, str | None], timeout: float = 10) -> None:
        async def poll() -> None:
            while item not in self.got:
                self.event.clear()
                await self.event.wait()

        await asyncio.wait_for(poll(), timeout)

    async def wait_count(self, item: tuple[str, str | None], count: int, timeout: float = 10) -> None:
        async def poll() -> None:
            while self.got.count(item) < count:
                self.event.clear()
                await self.event.wait()

        await asyncio.wait_for(poll(), timeout)


@asynccontextmanager
async def connect(live: tuple[LiveServer, Any], mode: str, user: str | None, **extra: Any) -> AsyncIterator[Client]:
    async with client(live[0].url, mode, user, **extra) as c:
        yield c


def doc(pk: int) -> str:
    return DOC.format(pk=pk)


# -- templates and reads -----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_templates_describe_each_model_resource(live: Any, mode: str) -> None:
    async with connect(live, mode, "alice") as c:
        templates = {t.uri_template: t for t in (await c.list_resource_templates()).resource_templates}
        assert {DOC, "django://modelapp/shelf/{pk}", "django://modelapp/tag/{slug}", "notes://{pk}"} <= set(templates)
        shelf = templates["django://modelapp/shelf/{pk}"]
        assert (shelf.name, shelf.title, shelf.description) == ("shelf", "Shelf", "A shelf of the archive.")
        assert shelf.mime_type == "application/json"
        tag = templates["django://modelapp/tag/{slug}"]
        assert tag.description is None  # Django's invented "Tag(id, slug)" docstring is not a description
        assert templates["notes://{pk}"].title == "Memo"


@pytest.mark.parametrize("mode", MODES)
async def test_read_serializes_fields_relations_and_files(live: Any, mode: str) -> None:
    pks = live[1]
    async with connect(live, mode, "alice") as c:
        r = await c.read_resource(doc(pks["a1"]))
        main, blob = r.contents
        assert isinstance(main, types.TextResourceContents) and main.mime_type == "application/json"
        data = json.loads(main.text)
        assert "secret" not in data  # exclude
        assert data["title"] == "Alpha report"
        assert data["shelf"].startswith("django://modelapp/shelf/")  # a registered related resource: its URI
        assert isinstance(data["owner"], int)  # User is not registered: the key
        assert sorted(data["tags"]) == ["django://modelapp/tag/blue", "django://modelapp/tag/red"]
        link = data["attachment"]
        assert link["type"] == "resource_link" and link["uri"] == doc(pks["a1"]) + "/attachment"
        assert link["size"] == len(b"alpha bytes") and link["mimeType"] == "text/plain"
        assert isinstance(blob, types.BlobResourceContents) and str(blob.uri) == link["uri"]
        assert base64.b64decode(blob.blob) == b"alpha bytes"
        # The related resource is readable at the URI the foreign key gave.
        shelf = json.loads((await c.read_resource(data["shelf"])).contents[0].text)  # type: ignore[union-attr]
        assert shelf["name"] == "Shelf 000"
        # The file's own URI reads the bytes alone.
        only = (await c.read_resource(link["uri"])).contents
        assert len(only) == 1 and base64.b64decode(only[0].blob) == b"alpha bytes"  # type: ignore[union-attr]
        # A slug lookup.
        tag = json.loads((await c.read_resource("django://modelapp/tag/red")).contents[0].text)  # type: ignore[union-attr]
        assert tag["slug"] == "red"


@pytest.mark.parametrize("mode", MODES)
async def test_large_files_are_links_only(live: Any, mode: str) -> None:
    uri = doc(live[1]["a2"])
    async with connect(live, mode, "alice") as c:
        contents = (await c.read_resource(uri)).contents
        assert len(contents) == 1  # no blob above RESOURCE_MAX_BLOB_SIZE
        link = json.loads(contents[0].text)["attachment"]  # type: ignore[union-attr]
        assert link["size"] == BIG and link["mimeType"] == "application/octet-stream"
        with pytest.raises(MCPError) as info:
            await c.read_resource(link["uri"])
        assert info.value.error.code == -32602
        assert info.value.error.data == {"uri": link["uri"], "size": BIG, "limit": 1024 * 1024}


@pytest.mark.parametrize("mode", MODES)
async def test_drf_serializer_class(live: Any, mode: str) -> None:
    async with connect(live, mode, "alice") as c:
        notes = [r for r in await all_resources(c) if r.uri.startswith("notes://")]
        assert [n.name for n in notes] == ["three little words"]
        assert notes[0].mime_type == "application/vnd.test.note+json"
        content = (await c.read_resource(notes[0].uri)).contents[0]
        assert content.mime_type == "application/vnd.test.note+json"
        assert json.loads(content.text)["words"] == 3  # type: ignore[union-attr]


# -- who sees what -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_two_users_see_their_own_objects(live: Any, mode: str) -> None:
    pks = live[1]
    async with connect(live, mode, "alice") as alice, connect(live, mode, "bob") as bob:
        alice_docs = {r.uri for r in await all_resources(alice) if r.uri.startswith("django://modelapp/document/")}
        bob_docs = {r.uri for r in await all_resources(bob) if r.uri.startswith("django://modelapp/document/")}
        assert {doc(pks["a1"]), doc(pks["a2"]), doc(pks["b1"])} <= alice_docs
        assert bob_docs == {doc(pks["b1"])}
        assert json.loads((await bob.read_resource(doc(pks["b1"]))).contents[0].text)["title"] == "Bob's alpha draft"  # type: ignore[union-attr]
        # Alice's document is, for Bob, exactly like one that does not exist.
        forbidden = await read_error(bob, doc(pks["a1"]))
        missing = await read_error(bob, doc(999999))
        garbage = await read_error(bob, DOC.format(pk="not-a-number"))
        code = -32002 if mode == "legacy" else -32602
        for err, uri in ((forbidden, doc(pks["a1"])), (missing, doc(999999)), (garbage, DOC.format(pk="not-a-number"))):
            assert err.error.code == code
            assert err.error.data == {"uri": uri}
            assert err.error.message == f"Resource not found: {uri}"
        with pytest.raises(MCPError):
            await bob.read_resource(doc(pks["a1"]) + "/attachment")  # nor its file


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("user", ["carol", None])
async def test_without_view_permission_nothing_shows(live: Any, mode: str, user: str | None) -> None:
    async with connect(live, mode, user) as c:
        templates = [t.uri_template for t in (await c.list_resource_templates()).resource_templates]
        assert not [t for t in templates if t.startswith(("django://", "notes://"))]
        assert not [r for r in await all_resources(c) if r.uri.startswith(("django://", "notes://"))]
        err = await read_error(c, "django://modelapp/shelf/1")
        assert err.error.data == {"uri": "django://modelapp/shelf/1"}


# -- listing -------------------------------------------------------------------------------


async def test_list_pages_in_a_stable_order_with_signed_cursors(live: Any) -> None:
    async with connect(live, "legacy", "alice") as c:
        first = await c.list_resources()
        assert len(first.resources) == 100 and first.next_cursor
        assert first.resources[0].uri == "test://static/hello"  # static resources first
        everything = await all_resources(c)
        uris = [r.uri for r in everything]
        assert len(uris) == len(set(uris))
        shelves = [r for r in everything if r.uri.startswith("django://modelapp/shelf/")]
        assert len(shelves) == SHELVES
        pks = [int(r.uri.rsplit("/", 1)[1]) for r in shelves]
        assert pks == sorted(pks)
        assert shelves[0].name == "Shelf 000" and shelves[0].mime_type == "application/json"
        assert [r.uri for r in await all_resources(c)] == uris  # stable
        # A cursor is opaque and tamper-proof.
        cursor = first.next_cursor
        for bad in (cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB"), "garbage", cursor + "x"):
            with pytest.raises(MCPError) as info:
                await c.list_resources(cursor=bad)
            assert info.value.error.code == -32602


# -- completion ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_completion_searches_visible_objects(live: Any, mode: str) -> None:
    pks = live[1]
    ref = types.ResourceTemplateReference(type="ref/resource", uri=DOC)
    async with connect(live, mode, "alice") as alice, connect(live, mode, "bob") as bob:
        got = (await alice.complete(ref, {"name": "pk", "value": "alp"})).completion
        assert set(got.values) == {str(pks["a1"]), str(pks["a2"]), str(pks["b1"])}  # search_fields: title
        got = (await bob.complete(ref, {"name": "pk", "value": "alp"})).completion
        assert got.values == [str(pks["b1"])]
        tag = types.ResourceTemplateReference(type="ref/resource", uri="django://modelapp/tag/{slug}")
        assert (await bob.complete(tag, {"name": "slug", "value": "r"})).completion.values == ["red"]
        shelf = types.ResourceTemplateReference(type="ref/resource", uri="django://modelapp/shelf/{pk}")
        many = (await alice.complete(shelf, {"name": "pk", "value": ""})).completion
        assert len(many.values) == 100 and many.has_more is True and many.total == SHELVES


# -- subscriptions -----------------------------------------------------------------------------


async def _write(c: Client, **arguments: Any) -> int:
    result = await c.call_tool("modelapp_write", arguments)
    assert not result.is_error, result
    return int(result.content[0].text)  # type: ignore[union-attr]


async def test_signals_notify_subscribers_after_commit_only(live: Any) -> None:
    pks = live[1]
    notes = Notes()
    async with connect(live, "legacy", "alice", message_handler=notes) as c:
        watched, other = doc(pks["a2"]), doc(pks["b1"])
        await c.subscribe_resource(watched)
        await c.subscribe_resource(other)
        with pytest.raises(MCPError):
            await c.subscribe_resource(doc(999999))
        await asyncio.sleep(0.3)  # the GET stream is open
        await _write(c, action="rename", doc=pks["a2"], title="never", rollback=True)
        await _write(c, action="tag", doc=pks["b1"], tag="green")  # m2m_changed, committed
        await notes.wait_for(("notifications/resources/updated", other))
        assert ("notifications/resources/updated", watched) not in notes.got  # the rolled-back write sent nothing
        await _write(c, action="rename", doc=pks["a2"], title="Alpine notes")
        await notes.wait_for(("notifications/resources/updated", watched))
        new = await _write(c, action="create", title="fresh")  # post_save(created): the list changed
        await notes.wait_count(("notifications/resources/list_changed", None), 1)
        await c.subscribe_resource(doc(new))
        await _write(c, action="delete", doc=new)  # post_delete: the object and the list changed
        await notes.wait_for(("notifications/resources/updated", doc(new)))
        await notes.wait_count(("notifications/resources/list_changed", None), 2)


async def test_listen_stream_receives_model_changes(live: Any) -> None:
    pks = live[1]
    uri = doc(pks["b1"])
    async with connect(live, "2026-07-28", "bob") as c, connect(live, "2026-07-28", "bob") as writer:
        hidden = doc(pks["a1"])  # Alice's: listening must not reveal more than reading would
        async with c.listen(resources_list_changed=True, resource_subscriptions=[uri, hidden]) as sub:
            assert sub.honored is not None and sub.honored.resource_subscriptions == [uri]
            events: list[Any] = []

            async def collect() -> None:
                async for event in sub:
                    events.append(event)
                    if len(events) == 2:
                        return

            task = asyncio.create_task(collect())
            await _write(writer, action="rename", doc=pks["b1"], title="ignored", rollback=True)
            await _write(writer, action="rename", doc=pks["b1"], title="Bob's alpha draft")
            await _write(writer, action="delete", doc=await _write(writer, action="create", title="tmp"))
            await asyncio.wait_for(task, 10)
        kinds = [type(e).__name__ for e in events]
        assert len(kinds) == 2 and kinds[0] != kinds[1]
        assert any(getattr(e, "uri", None) == uri for e in events)


# -- query bounds (in process: pytest-django counts this process's queries) ----------------------


def _exchange(user: Any, method: str, params: dict[str, Any]) -> Any:
    from django_mcp import site
    from django_mcp.protocol.jsonrpc import Request
    from django_mcp.runtime.engine import Exchange

    return site, Exchange(site, Request(1, method, params), "2026-07-28", None, user, None)


def _call(user: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    from asgiref.sync import async_to_sync

    server, ex = _exchange(user, method, params)
    return async_to_sync(server.handle)(method, params, ex)  # type: ignore[no-any-return]


@pytest.mark.django_db
def test_listing_and_reading_make_a_bounded_number_of_queries(django_assert_max_num_queries: Any) -> None:
    from django.contrib.auth.models import Permission, User

    from tests.modelapp.models import Document, Shelf, Tag

    reader = User.objects.create_user("reader", is_staff=True)
    reader.user_permissions.set(
        Permission.objects.filter(codename__startswith="view_", content_type__app_label="modelapp")
    )
    shelves = Shelf.objects.bulk_create([Shelf(name=f"s{i}") for i in range(3)])
    tags = Tag.objects.bulk_create([Tag(slug=f"t{i}") for i in range(5)])
    docs = Document.objects.bulk_create([Document(title=f"d{i}", shelf=shelves[i % 3]) for i in range(150)])
    Document.tags.through.objects.bulk_create(
        [Document.tags.through(document_id=d.pk, tag_id=t.pk) for d in docs for t in tags]
    )
    reader = User.objects.get(pk=reader.pk)  # a fresh permission cache
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        # One page of 100 spans shelves, tags and documents: str(document) needs its shelf (select_related).
        with django_assert_max_num_queries(8):
            page = _call(reader, "resources/list", {"cursor": cursor} if cursor else {})
        pages.append(page)
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    listed = [r for p in pages for r in p["resources"] if r["uri"].startswith("django://modelapp/document/")]
    assert len(listed) == 150 and listed[0]["name"] == "d0 (s0)"
    assert len(pages[0]["resources"]) == 100
    with django_assert_max_num_queries(3):  # the document with its shelf, then its tags (prefetch_related)
        got = _call(reader, "resources/read", {"uri": listed[0]["uri"]})
    assert len(json.loads(got["contents"][0]["text"])["tags"]) == 5


# -- across workers: two daphne processes, PostgreSQL, Redis ------------------------------------


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.servers import need_service

    need_service("Redis", 6379)
    tmp = tmp_path_factory.mktemp("model-workers")
    env = server_env(tmp, db="postgres", layer="redis", MCP_MEDIA_ROOT=str(tmp / "media"))
    a = start_server(env, tmp / "a.log", app="tests.settings.asgi_users:application")
    b = start_server(env, tmp / "b.log", migrate=False, app="tests.settings.asgi_users:application")
    a1, a2, b1 = (int(x) for x in a.manage("shell", "-c", SETUP).splitlines()[-1].split())
    yield a, b, {"a1": a1, "a2": a2, "b1": b1}
    for server in (a, b):
        server.stop()
    for log in (tmp / "a.log", tmp / "b.log"):
        assert "Traceback" not in log.read_text(errors="replace")


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.own_config
async def test_model_changes_reach_subscribers_on_another_worker(workers: Any) -> None:
    a, b, pks = workers
    uri = doc(pks["a1"])
    notes = Notes()
    async with (
        connect((a, pks), "legacy", "alice", message_handler=notes) as on_a,
        connect((b, pks), "legacy", "alice") as on_b,
        connect((a, pks), "2026-07-28", "alice") as listener,
    ):
        await on_a.subscribe_resource(uri)
        async with listener.listen(resources_list_changed=True, resource_subscriptions=[uri]) as sub:
            events: list[Any] = []

            async def collect() -> None:
                async for event in sub:
                    events.append(event)
                    if any(getattr(e, "uri", None) == uri for e in events):
                        return

            task = asyncio.create_task(collect())
            await asyncio.sleep(0.3)
            await _write(on_b, action="rename", doc=pks["a1"], title="rolled back", rollback=True)
            await _write(on_b, action="rename", doc=pks["a1"], title="Alpha report v2")  # a tool on worker B
            await notes.wait_for(("notifications/resources/updated", uri))
            await asyncio.wait_for(task, 10)
        assert notes.got.count(("notifications/resources/updated", uri)) == 1  # not for the rolled-back write
        # A write from another process altogether (a management command, the admin...) reaches A too.
        a.manage(
            "shell", "-c", "from tests.modelapp.models import Document; Document.objects.create(title='x', shelf_id=1)"
        )
        await notes.wait_for(("notifications/resources/list_changed", None))


# -- declaration errors ------------------------------------------------------------------------


def test_declaration_errors_are_improperly_configured() -> None:
    from django.core.exceptions import ImproperlyConfigured

    from django_mcp import MCPServer, ModelResource
    from tests.modelapp.models import Shelf

    server = MCPServer("declarations")

    @server.register
    class Shelves(ModelResource):
        model = Shelf

    assert server.model_resource_for(Shelf) is not None
    assert [t.uri for t in server.templates.values()] == ["django://modelapp/shelf/{pk}"]
    with pytest.raises(ImproperlyConfigured, match="already registered"):
        server.register(Shelves)
    bad: list[dict[str, Any]] = [
        {"fields": ["name", "nope"]},
        {"uri_template": "shelves://{colour}"},
        {"model": None},
    ]
    for attrs in bad:
        cls = type("Bad", (ModelResource,), {"model": Shelf, **attrs})
        with pytest.raises(ImproperlyConfigured):
            MCPServer("other").register(cls)


# -- related URIs are references -----------------------------------------------------------------

DAVE = """
from django.contrib.auth.models import Permission, User
from tests.modelapp.models import Document, Shelf
dave = User.objects.create_user("dave")
dave.user_permissions.set(Permission.objects.filter(content_type__app_label="modelapp", codename="view_document"))
print(Document.objects.create(title="Dave's page", shelf=Shelf.objects.order_by("pk")[0], owner=dave).pk)
"""
DAVE_DOC: dict[str, int] = {}


@pytest.mark.parametrize("mode", MODES)
async def test_a_related_uri_is_a_reference_checked_on_its_own_read(live: Any, mode: str) -> None:
    """docs/models.md: a foreign key is linked whatever the caller may read; reading the link is checked
    on its own. Dave reads his document but no shelf; Bob (view_shelf) reads the same shelf URI."""
    if "doc" not in DAVE_DOC:  # once per module (the test runs in both eras)
        DAVE_DOC["doc"] = int(live[0].manage("shell", "-c", DAVE).splitlines()[-1])
    async with connect(live, mode, "dave") as dave, connect(live, mode, "bob") as bob:
        data = json.loads((await dave.read_resource(doc(DAVE_DOC["doc"]))).contents[0].text)  # type: ignore[union-attr]
        shelf = data["shelf"]
        assert shelf.startswith("django://modelapp/shelf/")  # linked, though Dave may not read shelves
        err = await read_error(dave, shelf)
        assert err.error.message == f"Resource not found: {shelf}"
        assert json.loads((await bob.read_resource(shelf)).contents[0].text)["name"] == "Shelf 000"  # type: ignore[union-attr]
