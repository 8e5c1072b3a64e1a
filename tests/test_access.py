"""Per-user visibility: what a caller may not use is absent from the lists and refused on use.

Two users through the real endpoint (TEST ONLY ``X-Test-User`` header): alice holds every drfapp
permission and is staff, bob holds none. A tool, a static resource and a prompt with ``permissions=``,
and a tool with ``check=``; both eras.
"""

from __future__ import annotations

import pytest
from mcp import MCPError

from tests.support.callers import MODES, client, text
from tests.support.servers import LiveServer

pytestmark = pytest.mark.usefixtures("server_log_users")

GUARDED_TOOLS = {"purge_items", "staff_hello"}


@pytest.mark.parametrize("mode", MODES)
async def test_alice_sees_and_uses_guarded_objects(users_server: LiveServer, mode: str) -> None:
    async with client(users_server.url, mode, "alice") as c:
        assert GUARDED_TOOLS <= {t.name for t in (await c.list_tools()).tools}
        assert "drfapp://inventory" in {str(r.uri) for r in (await c.list_resources()).resources}
        assert "audit_items" in {p.name for p in (await c.list_prompts()).prompts}
        assert text(await c.call_tool("staff_hello", {})) == "hello staff member alice"
        inventory = await c.read_resource("drfapp://inventory")
        assert inventory.contents[0].text  # type: ignore[union-attr]
        prompt = await c.get_prompt("audit_items", {"focus": "names"})
        assert prompt.messages[0].content.text == "Audit the inventory, focusing on names."  # type: ignore[union-attr]


@pytest.mark.parametrize("user", ["bob", None])
@pytest.mark.parametrize("mode", MODES)
async def test_others_neither_see_nor_use_them(users_server: LiveServer, mode: str, user: str | None) -> None:
    async with client(users_server.url, mode, user) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert "add" in names and not names & GUARDED_TOOLS
        assert "drfapp://inventory" not in {str(r.uri) for r in (await c.list_resources()).resources}
        assert "audit_items" not in {p.name for p in (await c.list_prompts()).prompts}
        with pytest.raises(MCPError, match="Unknown tool: purge_items"):
            await c.call_tool("purge_items", {})
        with pytest.raises(MCPError, match="Unknown tool: staff_hello"):
            await c.call_tool("staff_hello", {})
        with pytest.raises(MCPError, match="drfapp://inventory"):
            await c.read_resource("drfapp://inventory")
        with pytest.raises(MCPError, match="Unknown prompt: audit_items"):
            await c.get_prompt("audit_items", {})
