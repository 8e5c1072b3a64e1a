"""DRF viewsets, APIViews and @api_view functions as tools, through the real endpoint with the SDK client.

The call runs DRF's own stack: the MCP caller is who DRF authenticates, then permission classes,
throttles, serializer validation and pagination run for real. Both eras; SQLite or PostgreSQL
(``MCP_TEST_DB``).
"""

from __future__ import annotations

import pytest
from mcp import MCPError

from tests.support.callers import MODES, client, text, unique
from tests.support.servers import LiveServer

pytestmark = pytest.mark.usefixtures("server_log_users")


@pytest.mark.parametrize("mode", MODES)
async def test_schemas_come_from_serializers_filters_and_pagination(users_server: LiveServer, mode: str) -> None:
    async with client(users_server.url, mode, "alice") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    create = tools["item_create"]
    assert set(create.input_schema["properties"]) == {"name", "quantity", "note"}  # read-only id/owner dropped
    assert create.input_schema["required"] == ["name"]
    assert create.input_schema["properties"]["name"]["maxLength"] == 50
    assert create.input_schema["properties"]["note"]["type"] == ["string", "null"]  # nullable -> JSON Schema
    assert create.output_schema is not None and set(create.output_schema["properties"]) >= {"id", "owner"}
    assert create.annotations is not None and create.annotations.read_only_hint is False
    assert create.description is not None and create.description.startswith("Create one item.")

    listing = tools["item_list"]
    assert set(listing.input_schema["properties"]) == {"search", "ordering", "page"}  # filter backends + paginator
    assert listing.input_schema["properties"]["page"]["type"] == "integer"
    assert listing.output_schema is not None
    assert listing.output_schema["required"] == ["count", "results"]
    assert listing.output_schema["properties"]["results"]["items"]["properties"]["name"]["type"] == "string"
    assert listing.annotations is not None and listing.annotations.read_only_hint is True

    retrieve = tools["item_retrieve"]
    assert retrieve.input_schema["properties"]["pk"]["type"] == "integer"
    assert retrieve.input_schema["required"] == ["pk"]
    assert tools["item_partial_update"].input_schema["required"] == ["pk"]  # PATCH: nothing else required
    assert tools["item_update"].input_schema["required"] == ["pk", "name"]
    assert tools["item_destroy"].output_schema is None
    assert tools["item_destroy"].annotations.destructive_hint is True  # type: ignore[union-attr]
    restock = tools["item_restock"]  # an extra @action: its own serializer_class is the input
    assert set(restock.input_schema["properties"]) == {"pk", "amount"}
    assert restock.input_schema["properties"]["amount"]["maximum"] == 100
    assert restock.description == "Add copies of an item to the shelf."
    assert tools["item_stats"].output_schema is not None
    assert tools["bulk_create"].output_schema["properties"]["result"]["type"] == "array"  # type: ignore[index]
    assert tools["bulk_create"].description.startswith("Create several items")  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_viewset_crud_runs_as_the_caller(users_server: LiveServer, mode: str) -> None:
    name = unique("lamp")
    async with client(users_server.url, mode, "bob") as c:
        created = await c.call_tool("item_create", {"name": name, "quantity": 2})
        assert not created.is_error, text(created)
        item = created.structured_content
        assert item is not None and item["name"] == name and item["owner"] == "bob"  # DRF authenticated bob
        pk = item["id"]

        got = await c.call_tool("item_retrieve", {"pk": pk})
        assert got.structured_content == item

        patched = await c.call_tool("item_partial_update", {"pk": pk, "note": "by the door"})
        assert patched.structured_content is not None and patched.structured_content["note"] == "by the door"
        put = await c.call_tool("item_update", {"pk": pk, "name": name, "quantity": 5})
        assert put.structured_content is not None and put.structured_content["quantity"] == 5

        restocked = await c.call_tool("item_restock", {"pk": pk, "amount": 3})
        assert restocked.structured_content is not None and restocked.structured_content["quantity"] == 8

        deleted = await c.call_tool("item_destroy", {"pk": pk})
        assert not deleted.is_error and deleted.content == []  # 204 No Content

        missing = await c.call_tool("item_retrieve", {"pk": pk})
        assert missing.is_error and "No Item matches the given query." in text(missing)


@pytest.mark.parametrize("mode", MODES)
async def test_validation_errors_are_field_messages(users_server: LiveServer, mode: str) -> None:
    async with client(users_server.url, mode, "alice") as c:
        bad = await c.call_tool("item_create", {"name": "forbidden", "quantity": -1})
        assert bad.is_error
        expected = "name: This name is not allowed.; quantity: Ensure this value is greater than or equal to 0."
        assert text(bad) == expected
        missing = await c.call_tool("item_create", {"quantity": 1})
        assert missing.is_error and text(missing) == "name: This field is required."
        taken = unique("dup")
        assert not (await c.call_tool("item_create", {"name": taken})).is_error
        dup = await c.call_tool("item_create", {"name": taken})
        assert dup.is_error and text(dup) == "name: item with this name already exists."
        restock = await c.call_tool("item_restock", {"pk": 1, "amount": 0})
        assert restock.is_error
        unknown = await c.call_tool("item_create", {"name": unique("u"), "colour": "red"})
        assert unknown.is_error and "colour" in text(unknown) and "Extra inputs are not permitted" in text(unknown)
        no_pk = await c.call_tool("item_retrieve", {})
        assert no_pk.is_error and "pk: Field required" in text(no_pk)


@pytest.mark.parametrize("mode", MODES)
async def test_search_and_pagination(users_server: LiveServer, mode: str) -> None:
    prefix = unique("shelf")
    async with client(users_server.url, mode, "alice") as c:
        for n in ("c", "a", "b"):
            assert not (await c.call_tool("item_create", {"name": f"{prefix}-{n}"})).is_error
        page1 = await c.call_tool("item_list", {"search": prefix, "ordering": "-name"})
        data = page1.structured_content
        assert data is not None and data["count"] == 3
        assert [r["name"] for r in data["results"]] == [f"{prefix}-c", f"{prefix}-b"]  # page_size 2, ordered
        assert data["next"] is not None and "page=2" in data["next"] and data["previous"] is None
        page2 = await c.call_tool("item_list", {"search": prefix, "ordering": "-name", "page": 2})
        assert [r["name"] for r in page2.structured_content["results"]] == [f"{prefix}-a"]  # type: ignore[index]
        beyond = await c.call_tool("item_list", {"search": prefix, "page": 9})
        assert beyond.is_error and text(beyond) == "Invalid page."


@pytest.mark.parametrize("mode", MODES)
async def test_permission_classes_decide_visibility_and_calls(users_server: LiveServer, mode: str) -> None:
    async with client(users_server.url, mode, "alice") as alice:
        names = {t.name for t in (await alice.list_tools()).tools}
        assert {"item_list", "item_stats", "bulk_create", "api_ping"} <= names
        stats = await alice.call_tool("item_stats", {})
        assert stats.structured_content is not None and stats.structured_content["caller"] == "alice"
    async with client(users_server.url, mode, "bob") as bob:
        names = {t.name for t in (await bob.list_tools()).tools}
        assert "item_list" in names and "item_stats" not in names  # StaffOnly.has_permission is False for bob
        with pytest.raises(MCPError, match="Unknown tool: item_stats"):
            await bob.call_tool("item_stats", {})
    async with client(users_server.url, mode) as anonymous:
        names = {t.name for t in (await anonymous.list_tools()).tools}
        assert "api_ping" in names  # AllowAny
        assert not names & {"item_list", "item_create", "item_stats", "bulk_create"}  # IsAuthenticated
        with pytest.raises(MCPError, match="Unknown tool: item_create"):
            await anonymous.call_tool("item_create", {"name": "x"})
        ping = await anonymous.call_tool("api_ping", {})
        assert text(ping) == '{"user": "anonymous", "auth": false}'


@pytest.mark.parametrize(("mode", "user"), [("legacy", "carol"), ("2026-07-28", "dave")])
async def test_throttles_apply(users_server: LiveServer, mode: str, user: str) -> None:
    async with client(users_server.url, mode, user) as c:
        for _ in range(2):
            ok = await c.call_tool("bulk_create", {"names": [unique(user)]})
            assert not ok.is_error, text(ok)
            assert ok.structured_content is not None and len(ok.structured_content["result"]) == 1
        throttled = await c.call_tool("bulk_create", {"names": [unique(user)]})
        assert throttled.is_error and text(throttled).startswith("Request was throttled.")
