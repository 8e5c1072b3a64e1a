"""``manage.py mcp_inspect``: the same definitions clients list, as JSON or a table, optionally per user."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.callers import client
from tests.support.servers import LiveServer


def inspect_json(server: LiveServer, *args: str) -> dict[str, object]:
    return json.loads(server.manage("mcp_inspect", "--format", "json", *args))  # type: ignore[no-any-return]


@pytest.mark.parametrize("user", ["alice", "bob"])
async def test_json_matches_what_the_user_lists(users_server: LiveServer, user: str) -> None:
    data = inspect_json(users_server, "--user", user)
    async with client(users_server.url, "2026-07-28", user) as c:
        tools = (await c.list_tools()).tools
        resources = (await c.list_resources()).resources
        prompts = (await c.list_prompts()).prompts
    listed = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    assert data["tools"] == listed  # names, order and every schema, exactly as tools/list sends them
    assert [r["uri"] for r in data["resources"]] == [str(r.uri) for r in resources]  # type: ignore[index, union-attr]
    assert [p["name"] for p in data["prompts"]] == [p.name for p in prompts]  # type: ignore[index, union-attr]


def test_unfiltered_json_lists_everything(users_server: LiveServer) -> None:
    data = inspect_json(users_server)
    assert data["server"] == {"name": "django-mcp-tests", "version": "0.1.0"}
    names = [t["name"] for t in data["tools"]]  # type: ignore[index, union-attr]
    assert {"purge_items", "staff_hello", "item_stats", "item_create", "add"} <= set(names)
    create = next(t for t in data["tools"] if t["name"] == "item_create")  # type: ignore[index, union-attr]
    assert create["inputSchema"]["required"] == ["name"]
    templates = [t["uriTemplate"] for t in data["resourceTemplates"]]  # type: ignore[index, union-attr]
    assert "test://items/{item_id}" in templates


def test_table(users_server: LiveServer) -> None:
    out = users_server.manage("mcp_inspect")
    assert out.startswith("MCP server 'django-mcp-tests'")
    lines = out.splitlines()
    row = next(line for line in lines if line.startswith("item_update "))
    assert "pk*: integer, name*: string, quantity: integer, note: string|null" in row
    assert "DRF permission classes" in row and "Replace one item" in row
    assert any(line.startswith("purge_items ") and "perm:drfapp.delete_item" in line for line in lines)
    assert any(line.startswith("audit_items ") and "focus" in line for line in lines)
    header = next(line for line in lines if line.startswith("NAME ") and "TASK" in line)
    column = header.index("TASK")
    sleep = next(line for line in lines if line.startswith("task_sleep "))
    assert sleep[column:].startswith("optional") and row[column:].startswith("-")  # the task mode of each tool
    bob = users_server.manage("mcp_inspect", "--user", "bob")
    assert "purge_items" not in bob and "item_stats" not in bob and "item_list" in bob


def test_bad_options(users_server: LiveServer) -> None:
    with pytest.raises(subprocess.CalledProcessError) as err:
        users_server.manage("mcp_inspect", "--user", "nobody")
    assert "No user named 'nobody'" in err.value.stderr
    with pytest.raises(subprocess.CalledProcessError) as err:
        users_server.manage("mcp_inspect", "--server", "tests.drfapp.models.Item")
    assert "not an MCPServer instance" in err.value.stderr


def test_skills_are_listed(users_server: LiveServer) -> None:
    """The fixture server's skill: its skills/list entry in JSON, a row in the table."""
    fixture = "tests.conformance.fixtures.server"
    data = inspect_json(users_server, "--server", fixture)
    (entry,) = data["skills"]  # type: ignore[misc]
    assert entry["uri"] == "skill://conformance-guide/SKILL.md"
    assert [r["uri"] for r in entry["resources"]] == [
        "skill://conformance-guide/SKILL.md",
        "skill://conformance-guide/references/CHECKLIST.md",
    ]
    out = users_server.manage("mcp_inspect", "--server", fixture)
    assert "Skills (1)" in out
    skills = out.split("Skills (1)")[1].splitlines()
    row = next(line for line in skills if line.startswith("skill://conformance-guide/SKILL.md "))
    assert " 2 " in row and "Walk through the fixture server" in row
