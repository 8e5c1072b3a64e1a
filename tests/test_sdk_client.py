"""The official Python SDK client against a real daphne server, in every mode and revision."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from tests.support.sdk import Recorder
from tests.support.servers import LiveServer

HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.mark.parametrize("revision", HANDSHAKE)
async def test_handshake_revision_pinned(
    revision: str, mcp_server: LiveServer, rec: Recorder, monkeypatch: pytest.MonkeyPatch, server_log: Any
) -> None:
    monkeypatch.setattr("mcp.client.session.LATEST_HANDSHAKE_VERSION", revision)
    async with rec.client(mcp_server.url, "legacy") as client:
        assert client.protocol_version == revision
        names = [t.name for t in (await client.list_tools()).tools]
        assert names[:3] == ["add", "echo", "square"]
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert not result.is_error
        if revision >= "2025-06-18":
            assert result.structured_content == {"total": 5, "terms": [2, 3]}
        else:
            # Revisions before 2025-06-18 have no structuredContent: only the text form is sent.
            assert result.structured_content is None
        assert isinstance(result.content[0], types.TextContent)
        assert '"total": 5' in result.content[0].text

        r = await client.read_resource("test://static/hello")
        assert r.contents[0].text == "Hello, world!"  # type: ignore[union-attr]
        p = await client.get_prompt("greet", {"name": "Bob"})
        assert p.messages[0].content.text == "Please greet Bob in a casual style."  # type: ignore[union-attr]


async def test_legacy_mode_features(mcp_server: LiveServer, rec: Recorder, server_log: Any) -> None:
    async with rec.client(mcp_server.url, "legacy") as client:
        assert client.protocol_version == "2025-11-25"
        await client.set_logging_level("info")
        result = await client.call_tool("count", {"steps": 3}, progress_callback=rec.on_progress)
        assert result.content[0].text == "counted to 3"  # type: ignore[union-attr]
        assert [p[0] for p in rec.progress] == [1, 2, 3]
        assert rec.progress[0] == (1, 3, "step 1")
        assert rec.logs == [("info", "counted 1"), ("info", "counted 2"), ("info", "counted 3")]

        result = await client.call_tool("ask_name", {})
        assert result.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
        assert rec.elicited == ["What is your name?"]
        result = await client.call_tool("ask_model", {"question": "meaning of life?"})
        assert result.content[0].text == "model said: 42"  # type: ignore[union-attr]
        result = await client.call_tool("roots", {})
        assert result.structured_content == {"result": ["file:///srv/project"]}


async def test_log_level_filters(mcp_server: LiveServer, rec: Recorder) -> None:
    async with rec.client(mcp_server.url, "legacy") as client:
        await client.set_logging_level("warning")
        await client.call_tool("count", {"steps": 2})
        assert rec.logs == []  # info logs are below the requested level


async def test_stateless_mode_features(mcp_server: LiveServer, rec: Recorder, server_log: Any) -> None:
    async with rec.client(mcp_server.url, "2026-07-28", log_level="info") as client:
        assert client.protocol_version == "2026-07-28"
        tools = (await client.list_tools()).tools
        add = next(t for t in tools if t.name == "add")
        assert add.title == "Add numbers"
        assert add.output_schema is not None and add.output_schema["properties"]["total"]["type"] == "integer"
        assert add.annotations is not None and add.annotations.read_only_hint is True
        result = await client.call_tool("add", {"a": 20, "b": 22})
        assert result.structured_content == {"total": 42, "terms": [20, 22]}
        result = await client.call_tool("count", {"steps": 2}, progress_callback=rec.on_progress)
        assert [p[0] for p in rec.progress] == [1, 2]
        assert rec.logs == [("info", "counted 1"), ("info", "counted 2")]
        # Elicitation, sampling and roots run as input_required round trips.
        result = await client.call_tool("ask_name", {})
        assert result.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
        result = await client.call_tool("ask_model", {"question": "q"})
        assert result.content[0].text == "model said: 42"  # type: ignore[union-attr]
        result = await client.call_tool("roots", {})
        assert result.structured_content == {"result": ["file:///srv/project"]}
        r = await client.read_resource("test://items/7")
        assert r.contents[0].text == '{"id": 7}'  # type: ignore[union-attr]


async def test_stateless_without_log_level_sends_no_logs(mcp_server: LiveServer, rec: Recorder) -> None:
    async with rec.client(mcp_server.url, "2026-07-28") as client:
        await client.call_tool("count", {"steps": 2})
    assert rec.logs == []


async def test_auto_mode_picks_stateless(mcp_server: LiveServer, rec: Recorder) -> None:
    async with rec.client(mcp_server.url, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("echo", {"text": "héllo"})
        assert result.content[0].text == "héllo"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_tool_errors_are_results(mcp_server: LiveServer, rec: Recorder, mode: str) -> None:
    async with rec.client(mcp_server.url, mode) as client:
        bad = await client.call_tool("add", {"a": "x", "b": 1})
        assert bad.is_error
        assert "Invalid arguments for tool 'add'" in bad.content[0].text  # type: ignore[union-attr]
        failed = await client.call_tool("fail", {"kind": "tool"})
        assert failed.is_error and failed.content[0].text == "this tool failed on purpose"  # type: ignore[union-attr]
        crashed = await client.call_tool("fail", {"kind": "crash"})
        assert crashed.is_error
        text = crashed.content[0].text  # type: ignore[union-attr]
        assert "secret internal detail" not in text and "Traceback" not in text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_schemas_and_content(mcp_server: LiveServer, rec: Recorder, mode: str) -> None:
    async with rec.client(mcp_server.url, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        describe = tools["describe"].input_schema
        assert describe["properties"]["person"] == {"$ref": "#/$defs/Person"}
        assert describe["$defs"]["Person"]["properties"]["age"]["minimum"] == 0
        assert tools["add"].input_schema["properties"]["a"]["description"] == "the first term"
        assert tools["square"].output_schema == {
            "type": "object",
            "properties": {"result": {"type": "number"}},
            "required": ["result"],
        }
        mixed = await client.call_tool("picture", {})
        kinds = [c.type for c in mixed.content]
        assert kinds == ["text", "image", "resource_link"]


async def test_completion(mcp_server: LiveServer, rec: Recorder) -> None:
    async with rec.client(mcp_server.url, "legacy") as client:
        result = await client.complete(
            types.PromptReference(type="ref/prompt", name="greet"), {"name": "style", "value": "p"}
        )
        assert result.completion.values == ["pirate"]
        result = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="test://items/{item_id}"),
            {"name": "item_id", "value": "1"},
        )
        assert result.completion.values == ["1", "10"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_context_user_is_anonymous_without_auth(mcp_server: LiveServer, rec: Recorder, mode: str) -> None:
    async with rec.client(mcp_server.url, mode) as client:
        result = await client.call_tool("whoami", {})
        assert result.content[0].text == "AnonymousUser authenticated=False"  # type: ignore[union-attr]
