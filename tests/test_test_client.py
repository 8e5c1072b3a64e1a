"""``django_mcp.test``: the in-process test clients and their pytest fixtures, in both protocol eras.

The handshake era (2025-11-25: ``initialize``, a session in the database, server->client
requests answered on the request's outlet) and the stateless era (2026-07-28: the ``_meta``
envelope, ``input_required`` answered by retrying). Most tests use this module's own
``MCPServer``; a few use ``django_mcp.site`` (``tests/testapp/mcp.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from django.conf import settings
from django.contrib.auth.models import Group, Permission, User
from django.test import TestCase, override_settings

from django_mcp import Context, ToolError
from django_mcp.models import MCPSession
from django_mcp.server import MCPServer
from django_mcp.test import AsyncMCPTestClient, MCPClientError, MCPTestClient, UnansweredRequest
from tests.support.servers import ROOT

ERAS = ["2025-11-25", "2026-07-28"]

server = MCPServer("test-client-tests")


@server.tool(annotations={"readOnlyHint": True})
def hello(name: str = "world") -> str:
    """Says hello."""
    return f"hello {name}"


@server.tool(permissions=["auth.view_group"])
def groups() -> list[str]:
    """Group names (holders of auth.view_group only)."""
    return sorted(Group.objects.values_list("name", flat=True))


@server.tool(scopes=["groups:write"])
def make_group(name: str) -> int:
    """A sync tool writing to the database (needs the groups:write scope when a token is used)."""
    return Group.objects.create(name=name).pk


@server.tool
async def count_groups() -> int:
    """An async tool reading with the async ORM."""
    return await Group.objects.acount()


@server.tool
def whoami(ctx: Context) -> dict[str, Any]:
    """The caller as the tool sees it."""
    auth = ctx.auth
    return {
        "user": ctx.user.get_username(),
        "scopes": sorted(auth.scopes) if auth else None,
        "client_id": ctx.client_id,
        "revision": ctx.protocol_version,
    }


@server.tool
async def interview(ctx: Context) -> dict[str, Any]:
    """Elicits twice, samples once and lists the roots (progress and a log line in between)."""
    await ctx.report_progress(1, 3, "starting")
    await ctx.info("asking")
    first = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="n")
    second = await ctx.elicit("Your city?", {"type": "object", "properties": {"city": {"type": "string"}}}, key="c")
    await ctx.report_progress(2, 3)
    reply = await ctx.sample("Say something", max_tokens=20, key="s")
    roots = await ctx.list_roots(key="r")
    await ctx.debug("done")
    return {
        "name": (first.content or {}).get("name") if first.action == "accept" else first.action,
        "city": (second.content or {}).get("city") if second.action == "accept" else second.action,
        "model": getattr(reply.content, "text", ""),
        "roots": [str(r.uri) for r in roots],
    }


@server.tool
async def ask_model(ctx: Context, question: str) -> str:
    """Samples the client's model."""
    reply = await ctx.sample(question, max_tokens=20)
    return f"model said: {getattr(reply.content, 'text', '')}"


@server.tool
def refuse() -> str:
    """Fails as a tool (an isError result, not a protocol error)."""
    raise ToolError("not today")


@server.resource("notes://welcome", mime_type="text/plain")
def welcome() -> str:
    return "Welcome!"


def _own_group(ctx: Context) -> bool:
    return bool(ctx.user.is_authenticated)


@server.resource("notes://groups/{name}", mime_type="text/plain", complete={"name": ["admins", "authors"]})
def group_note(ctx: Context, name: str) -> str:
    """A group's note: only its members may read it (someone else's group reads as absent)."""
    group = Group.objects.filter(name=name, user=ctx.user.pk).first() if ctx.user.is_authenticated else None
    if group is None:
        from django_mcp.exceptions import ResourceNotFound

        raise ResourceNotFound(f"notes://groups/{name}")
    return f"note of {group.name}"


@server.prompt(complete={"style": ["formal", "casual", "pirate"]})
def greet(name: str, style: str = "casual") -> str:
    """Greet someone."""
    return f"Greet {name} in a {style} style."


@server.prompt(scopes=["secret:read"])
def secret_prompt() -> str:
    """Only with the secret:read scope."""
    return "the secret"


@pytest.fixture
def alice(db: None) -> User:
    """Holds auth.view_group and belongs to the "admins" group."""
    user = User.objects.create_user("alice")
    user.user_permissions.add(Permission.objects.get(codename="view_group"))
    user.groups.add(Group.objects.create(name="admins"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def bob(db: None) -> User:
    """No permission; belongs to the "authors" group."""
    user = User.objects.create_user("bob")
    user.groups.add(Group.objects.create(name="authors"))
    return user


def client(version: str, user: Any = None, **options: Any) -> MCPTestClient:
    return MCPTestClient(server, protocol_version=version, user=user, **options)


# -- every method, both eras ----------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_every_method_returns_mcp_types_models(alice: User, version: str) -> None:
    c = client(version, alice)
    tools = c.list_tools()
    assert isinstance(tools, types.ListToolsResult)
    assert {"hello", "groups", "make_group", "interview"} <= {t.name for t in tools.tools}

    result = c.call_tool("hello", {"name": "Ann"})
    assert isinstance(result, types.CallToolResult) and not result.is_error
    assert result.content[0].text == "hello Ann"  # type: ignore[union-attr]
    assert c.call_tool("groups").structured_content == {"result": ["admins"]}

    resources = c.list_resources()
    assert isinstance(resources, types.ListResourcesResult)
    assert [str(r.uri) for r in resources.resources] == ["notes://welcome"]
    templates = c.list_resource_templates()
    assert [t.uri_template for t in templates.resource_templates] == ["notes://groups/{name}"]
    read = c.read_resource("notes://welcome")
    assert isinstance(read, types.ReadResourceResult)
    assert read.contents[0].text == "Welcome!"  # type: ignore[union-attr]

    prompts = c.list_prompts()
    assert isinstance(prompts, types.ListPromptsResult)
    # Without a token (force_authenticate's scopes=None) scopes are not checked: secret_prompt is listed.
    assert [p.name for p in prompts.prompts] == ["greet", "secret_prompt"]
    got = c.get_prompt("greet", {"name": "Ann", "style": "pirate"})
    assert isinstance(got, types.GetPromptResult)
    assert got.messages[0].content.text == "Greet Ann in a pirate style."  # type: ignore[union-attr]

    done = c.complete(prompt="greet", argument="style", value="p")
    assert isinstance(done, types.CompleteResult) and done.completion.values == ["pirate"]
    done = c.complete(resource_template="notes://groups/{name}", argument="name", value="a")
    assert done.completion.values == ["admins", "authors"]
    if version != "2026-07-28":  # ping is gone from 2026-07-28
        c.ping()
    assert c.request("tools/list")["tools"]
    c.close()


@pytest.mark.parametrize("version", ERAS)
def test_handshake_era_opens_one_session_per_user(alice: User, bob: User, version: str) -> None:
    c = client(version, alice)
    c.call_tool("hello")
    if version == "2026-07-28":
        assert c.session is None and not MCPSession.objects.exists()
        return
    first = c.session
    assert first is not None and first.revision == version and first.user_id == alice.pk
    assert c.async_client.initialize_result is not None
    assert c.async_client.initialize_result.protocol_version == version
    c.call_tool("hello")
    assert c.session is first
    c.force_authenticate(bob)
    assert c.call_tool("whoami").structured_content["user"] == "bob"  # type: ignore[index]
    assert c.session is not first and c.session.user_id == bob.pk
    c.close()
    assert not MCPSession.objects.filter(ended__isnull=True).exists()  # close() ended alice's and bob's


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_older_handshake_revisions(alice: User, version: str) -> None:
    c = client(version, alice, capabilities={"sampling": {}, "roots": {}})
    assert c.initialize().protocol_version == version
    c.on_sampling("hi")
    assert c.call_tool("ask_model", {"question": "q"}).content[0].text == "model said: hi"  # type: ignore[union-attr]
    assert f'"revision":"{version}"' in c.call_tool("whoami").content[0].text.replace(" ", "")  # type: ignore[union-attr]


def test_protocol_version_defaults_to_the_newest() -> None:
    assert MCPTestClient(server).protocol_version == "2026-07-28"
    with pytest.raises(ValueError, match="Unknown protocol version"):
        MCPTestClient(server, protocol_version="2023-01-01")


# -- force_authenticate: permissions, scopes, other people's objects -------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_a_user_without_the_permission_neither_sees_nor_calls_the_tool(alice: User, bob: User, version: str) -> None:
    c = client(version, alice)
    assert "groups" in {t.name for t in c.list_tools().tools}
    assert c.call_tool("groups").structured_content == {"result": ["admins", "authors"]}
    c.force_authenticate(bob)
    assert "groups" not in {t.name for t in c.list_tools().tools}
    with pytest.raises(MCPClientError) as refused:
        c.call_tool("groups")
    assert refused.value.code == -32602 and "Unknown tool" in refused.value.message
    c.logout()
    assert c.call_tool("whoami").structured_content["user"] == ""  # type: ignore[index]


@pytest.mark.parametrize("version", ERAS)
def test_another_users_object_reads_as_absent(alice: User, bob: User, version: str) -> None:
    c = client(version, alice)
    assert c.read_resource("notes://groups/admins").contents[0].text == "note of admins"  # type: ignore[union-attr]
    c.force_authenticate(bob)
    with pytest.raises(MCPClientError) as absent:
        c.read_resource("notes://groups/admins")  # alice's group
    # 2026-07-28 retired -32002: an unknown resource is invalid params there.
    assert absent.value.code == (-32602 if version == "2026-07-28" else -32002)
    assert c.read_resource("notes://groups/authors").contents[0].text == "note of authors"  # type: ignore[union-attr]


@pytest.mark.parametrize("version", ERAS)
def test_scopes_of_a_token(alice: User, version: str) -> None:
    c = client(version)
    c.force_authenticate(alice, scopes=["mcp"])
    who = c.call_tool("whoami").structured_content
    assert who == {"user": "alice", "scopes": ["mcp"], "client_id": "mcp-test-client", "revision": version}
    names = {t.name for t in c.list_tools().tools}
    assert "make_group" not in names and "groups" in names
    # Refused at the door, as over HTTP: 403 insufficient_scope (tests/test_door.py compares the two).
    with pytest.raises(MCPClientError) as refused:
        c.call_tool("make_group", {"name": "editors"})
    assert (refused.value.status, refused.value.data) == (403, {"error": "insufficient_scope", "scope": "groups:write"})
    with pytest.raises(MCPClientError) as refused:
        c.get_prompt("secret_prompt")
    assert refused.value.status == 403
    assert not Group.objects.filter(name="editors").exists()

    c.force_authenticate(alice, scopes=["mcp", "groups:write", "secret:read"], client_id="desk-app")
    assert c.call_tool("whoami").structured_content["client_id"] == "desk-app"  # type: ignore[index]
    assert "secret_prompt" in {p.name for p in c.list_prompts().prompts}
    assert not c.call_tool("make_group", {"name": "editors"}).is_error
    assert Group.objects.filter(name="editors").exists()


# -- the database: a sync tool writes inside the test's transaction --------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_sync_and_async_tools_use_the_tests_transaction(alice: User, version: str) -> None:
    c = client(version, alice)
    before = Group.objects.count()
    pk = c.call_tool("make_group", {"name": "readers"}).structured_content["result"]  # type: ignore[index]
    assert Group.objects.get(pk=pk).name == "readers"  # written on the test's connection, visible here
    assert c.call_tool("count_groups").structured_content == {"result": before + 1}


# -- scripted elicitation, sampling and roots ---------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_scripted_answers_and_collected_notifications(alice: User, version: str) -> None:
    c = client(version, alice)
    c.on_elicitation([{"name": "Ann"}, "decline"])
    c.on_sampling(lambda params: f"you said {params['messages'][0]['content']['text']!r}")
    c.on_roots(["file:///srv/project", types.Root(uri="file:///home/ann")])
    result = c.call_tool("interview")
    assert not result.is_error, result
    assert result.structured_content == {
        "name": "Ann",
        "city": "decline",
        "model": "you said 'Say something'",
        "roots": ["file:///srv/project", "file:///home/ann"],
    }
    asked = [(r.method, r.params.get("message")) for r in c.server_requests]
    # 2026-07-28 asks again on each round of input_required; each question is answered once.
    assert asked == [
        ("elicitation/create", "Your name?"),
        ("elicitation/create", "Your city?"),
        ("sampling/createMessage", None),
        ("roots/list", None),
    ]
    assert c.server_requests[1].answer == {"action": "decline"}
    methods = [n["method"] for n in c.notifications]
    progress = [n["params"]["progress"] for n in c.notifications if n["method"] == "notifications/progress"]
    logs = [n["params"]["data"] for n in c.notifications if n["method"] == "notifications/message"]
    if version == "2026-07-28":  # the handler runs once per round: its progress repeats
        assert set(progress) == {1, 2} and set(logs) == {"asking", "done"}
    else:
        assert progress == [1, 2] and logs == ["asking", "done"]
        assert methods == [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
            "notifications/message",
        ]
    c.call_tool("hello")
    assert c.notifications == [] and c.server_requests == []  # per call


@pytest.mark.parametrize("version", ERAS)
def test_answer_models_and_async_callables(alice: User, version: str) -> None:
    c = client(version, alice)

    async def elicit(params: dict[str, Any]) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": params["message"][:4], "city": "Oslo"})

    c.on_elicitation(elicit)
    c.on_sampling(
        types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="ok"), model="m")
    )
    c.on_roots(lambda params: [])
    assert c.call_tool("interview").structured_content == {"name": "Your", "city": "Oslo", "model": "ok", "roots": []}


@pytest.mark.parametrize("version", ERAS)
def test_unscripted_question_fails_the_test(alice: User, version: str) -> None:
    c = client(version, alice)
    with pytest.raises(UnansweredRequest, match="on_sampling"):
        c.call_tool("ask_model", {"question": "hello?"})
    c.on_sampling(["first", "second"])
    assert c.call_tool("ask_model", {"question": "1"}).content[0].text == "model said: first"  # type: ignore[union-attr]
    assert c.call_tool("ask_model", {"question": "2"}).content[0].text == "model said: second"  # type: ignore[union-attr]
    with pytest.raises(UnansweredRequest):  # the queue is used up
        c.call_tool("ask_model", {"question": "3"})
    c.on_sampling(None)
    with pytest.raises(UnansweredRequest):
        c.call_tool("ask_model", {"question": "4"})


@pytest.mark.parametrize("version", ERAS)
def test_capabilities_the_client_does_not_declare(alice: User, version: str) -> None:
    c = client(version, alice, capabilities={})
    c.on_sampling("never used")
    with pytest.raises(MCPClientError) as missing:
        c.call_tool("ask_model", {"question": "q"})
    assert missing.value.code == (-32021 if version == "2026-07-28" else -32600)
    assert missing.value.data == {"requiredCapabilities": {"sampling": {}}}
    assert c.server_requests == []


# -- errors --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_errors(alice: User, version: str) -> None:
    c = client(version, alice)
    with pytest.raises(MCPClientError) as unknown:
        c.call_tool("nope")
    assert unknown.value.code == -32602 and unknown.value.data == {"name": "nope"}
    assert "JSON-RPC error -32602" in str(unknown.value)
    failed = c.call_tool("refuse")
    assert failed.is_error and failed.content[0].text == "not today"  # type: ignore[union-attr]
    invalid = c.call_tool("hello", {"name": 3})
    assert invalid.is_error
    with pytest.raises(MCPClientError) as no_method:
        c.request("tools/frobnicate")
    assert no_method.value.code == -32601
    with pytest.raises(MCPClientError):
        c.get_prompt("greet")  # missing the required argument
    with pytest.raises(TypeError):
        c.complete(argument="style")


def test_an_ended_session_is_not_found(alice: User) -> None:
    c = client("2025-11-25", alice)
    c.call_tool("hello")
    from asgiref.sync import async_to_sync

    from django_mcp.state.sessions import store

    async_to_sync(store.end)(c.session.id)  # as the admin's "end session" action does
    with pytest.raises(MCPClientError) as gone:
        c.call_tool("hello")
    assert gone.value.status == 404 and gone.value.message == "Session not found"


@pytest.mark.parametrize("version", ERAS)
def test_pagination(alice: User, version: str) -> None:
    c = client(version, alice)
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "PAGE_SIZE": 3}):
        everything = c.list_tools()
        first = c.list_tools(all_pages=False)
        assert len(first.tools) == 3 and first.next_cursor is not None
        rest = c.list_tools(first.next_cursor)
    assert everything.next_cursor is None
    assert [t.name for t in everything.tools] == [t.name for t in first.tools + rest.tools]
    assert len(everything.tools) > 3


# -- the default server and its fixtures ---------------------------------------------------------------------


def test_mcp_client_fixture(mcp_client: MCPTestClient, django_user_model: Any) -> None:
    assert mcp_client.protocol_version == "2026-07-28"
    assert mcp_client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"total": 5, "terms": [2, 3]}
    mcp_client.on_elicitation({"name": "Ann"})
    assert mcp_client.call_tool("ask_name").content[0].text == "Hello, Ann!"  # type: ignore[union-attr]
    mcp_client.call_tool("count", {"steps": 2})
    assert [n["params"]["progress"] for n in mcp_client.notifications if "progress" in n["params"]] == [1, 2]
    mcp_client.force_authenticate(django_user_model.objects.create_user("carol"))
    assert mcp_client.call_tool("sync_db").structured_content == {"result": 1}


@pytest.mark.django_db(transaction=True)
def test_mcp_client_fixture_with_a_transactional_marker(mcp_client: MCPTestClient) -> None:
    mcp_client.force_authenticate(User.objects.create_user("dora"))
    assert "dora" in mcp_client.call_tool("whoami").content[0].text  # type: ignore[union-attr]


async def test_async_mcp_client_fixture(async_mcp_client: AsyncMCPTestClient) -> None:
    user = await User.objects.acreate(username="erin")
    async_mcp_client.force_authenticate(user)
    assert "erin authenticated=True" in (await async_mcp_client.call_tool("whoami")).content[0].text  # type: ignore[union-attr]
    assert (await async_mcp_client.call_tool("async_db")).structured_content == {"result": 1}
    assert (await async_mcp_client.call_tool("sync_db")).structured_content == {"result": 1}


@pytest.mark.parametrize("version", ERAS)
async def test_async_client_both_eras(transactional_db: None, version: str) -> None:
    user = await User.objects.acreate(username="fred")
    c = AsyncMCPTestClient(server, protocol_version=version, user=user)
    c.on_elicitation({"name": "Fay", "city": "Rome"})
    c.on_sampling("yes")
    c.on_roots([])
    result = await c.call_tool("interview")
    assert result.structured_content == {"name": "Fay", "city": "Rome", "model": "yes", "roots": []}
    pk = (await c.call_tool("make_group", {"name": "async"})).structured_content["result"]  # type: ignore[index]
    assert (await Group.objects.aget(pk=pk)).name == "async"
    assert (await c.read_resource("notes://welcome")).contents[0].text == "Welcome!"  # type: ignore[union-attr]
    await c.close()


# -- the pytest11 entry point ---------------------------------------------------------------------------------

PLUGIN_TEST = """
def test_fixture(mcp_client):
    assert mcp_client.call_tool("add", {"a": 1, "b": 1}).structured_content["total"] == 2

def test_plain():
    assert True
"""


def _run_pytest(
    tmp_path: Path, *args: str, conftest: str = "", entry_point: bool = True
) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    dist = site / "django_mcp_plugin_probe-0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: django-mcp-plugin-probe\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\ndjango_mcp.pytest_plugin = django_mcp.pytest_plugin\n" if entry_point else ""
    )
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "test_probe.py").write_text(PLUGIN_TEST)
    (project / "conftest.py").write_text(conftest)
    # SQLite in memory and the in-memory layer: never the PostgreSQL test database this run is using.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "MCP_TEST_DB": "sqlite",
        "MCP_SQLITE_TEST": "",
        "MCP_TEST_LAYER": "memory",
    }
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(project), *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_entry_point_and_explicit_registration_coexist(tmp_path: Path) -> None:
    """The entry point (installed), ``-p`` and a conftest's ``pytest_plugins`` may all be active at once."""
    run = _run_pytest(
        tmp_path,
        "-p",
        "django_mcp.pytest_plugin",
        "--ds",
        "tests.settings",
        conftest='pytest_plugins = ["django_mcp.pytest_plugin"]\n',
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout


def test_plugin_leaves_projects_without_django_settings_alone(tmp_path: Path) -> None:
    run = _run_pytest(tmp_path, "-k", "plain", "-p", "no:django")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


@pytest.mark.parametrize("version", ERAS)
def test_subscriptions_and_raw_requests(alice: User, version: str) -> None:
    c = client(version, alice)
    if version == "2026-07-28":
        assert c.request("server/discover")["supportedVersions"][-1] == "2026-07-28"
        with pytest.raises(MCPClientError):
            c.subscribe("notes://welcome")  # 2026-07-28 has subscriptions/listen instead
        return
    c.subscribe("notes://groups/admins")
    assert c.session.subscriptions == {"notes://groups/admins"}
    c.unsubscribe("notes://groups/admins")
    assert c.session.subscriptions == set()
    with pytest.raises(MCPClientError) as refused:
        c.subscribe("notes://nothing-here")
    assert refused.value.code == -32002
    c.notify("notifications/roots/list_changed")


class DjangoTestCaseTests(TestCase):
    """The sync client in a plain Django ``TestCase`` (no pytest fixtures)."""

    def test_tool_writes_inside_the_test_case_transaction(self) -> None:
        c = MCPTestClient(server, protocol_version="2025-11-25", user=User.objects.create_user("gina"))
        pk = c.call_tool("make_group", {"name": "testcase"}).structured_content["result"]  # type: ignore[index]
        self.assertEqual(Group.objects.get(pk=pk).name, "testcase")
        c.close()
