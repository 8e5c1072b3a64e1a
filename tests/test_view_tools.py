"""Plain Django views as tools: a real request whose ``user`` is the MCP caller; both eras."""

from __future__ import annotations

import json

import pytest

from tests.support.callers import MODES, client, text, unique
from tests.support.servers import LiveServer

pytestmark = pytest.mark.usefixtures("server_log_users")


@pytest.mark.parametrize("mode", MODES)
async def test_url_and_query_arguments(users_server: LiveServer, mode: str) -> None:
    name = unique("mug")
    async with client(users_server.url, mode, "alice") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        label_tool = tools["item_label"]
        assert label_tool.input_schema["properties"]["pk"]["type"] == "integer"  # from the view's annotation
        assert label_tool.input_schema["properties"]["upper"]["default"] is False  # declared arguments
        assert label_tool.input_schema["required"] == ["pk"]
        assert label_tool.description == "A printable shelf label for one item (plain text)."
        assert label_tool.annotations is not None and label_tool.annotations.read_only_hint is True

        pk = (await c.call_tool("item_create", {"name": name, "quantity": 4})).structured_content["id"]  # type: ignore[index]
        assert text(await c.call_tool("item_label", {"pk": pk})) == f"{name} x4"
        assert text(await c.call_tool("item_label", {"pk": pk, "upper": True})) == f"{name} x4".upper()
        missing = await c.call_tool("item_label", {"pk": 10**9})
        assert missing.is_error and text(missing) == "No Item matches the given query."
        bad = await c.call_tool("item_label", {"pk": "abc"})
        assert bad.is_error and "Invalid arguments for tool 'item_label'" in text(bad)


@pytest.mark.parametrize("mode", MODES)
async def test_request_user_is_the_caller(users_server: LiveServer, mode: str) -> None:
    name = unique("kettle")
    async with client(users_server.url, mode, "bob") as c:
        assert not (await c.call_tool("item_create", {"name": name})).is_error
        mine = json.loads(text(await c.call_tool("my_items", {})))
        assert mine["user"] == "bob" and name in mine["names"]
    async with client(users_server.url, mode) as anonymous:
        refused = await anonymous.call_tool("my_items", {})  # @login_required redirects: a refusal
        assert refused.is_error and text(refused) == "Authentication required"


@pytest.mark.parametrize("mode", MODES)
async def test_post_form_arguments_permissions_and_output(users_server: LiveServer, mode: str) -> None:
    name = unique("vase")
    async with client(users_server.url, mode, "alice") as alice:
        tool = next(t for t in (await alice.list_tools()).tools if t.name == "rename_item")
        assert tool.output_schema is not None and tool.output_schema["required"] == ["id", "name"]
        pk = (await alice.call_tool("item_create", {"name": name})).structured_content["id"]  # type: ignore[index]
        renamed = await alice.call_tool("rename_item", {"pk": pk, "name": f"{name}-2"})
        assert renamed.structured_content == {"id": pk, "name": f"{name}-2"}
        blank = await alice.call_tool("rename_item", {"pk": pk, "name": " "})
        assert blank.is_error and "name: This field is required." in text(blank)
    async with client(users_server.url, mode, "bob") as bob:
        denied = await bob.call_tool("rename_item", {"pk": pk, "name": "stolen"})  # @permission_required -> 403
        assert denied.is_error and text(denied) == "Permission denied"
