"""Kill switches, strict mode and task-worker health, in process (SQLite, in-memory layer, one process).

Through the door (``MCPTestClient``), the real admin (Django's test client, a staff login) and a task's
run (``run_tool_call`` as ``db_worker`` calls it): a switched-off tool, resource, template or prompt is
hidden from every list and refused with a clear error in both eras; a disabled OAuth client is refused
while another client of the same user is not; a queued task for a switched-off tool fails without
running; ``REQUIRE_ACCESS_RULES`` names each declaration without an access rule; a task no worker picks
up says so in ``tasks/get`` and the health endpoint turns ``degraded``. Real processes:
tests/test_switches_live.py.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings
from django.utils import timezone

from django_mcp import MCPServer, public, strict
from django_mcp.auth.clients import disable_clients, enable_clients
from django_mcp.checks import check_access_rules
from django_mcp.cleanup import cleanup
from django_mcp.health import report
from django_mcp.models import MCPClient, MCPSwitch, MCPTask
from django_mcp.switches import board, switch_off, switch_on
from django_mcp.tasks import EXTENSION, jobs
from django_mcp.test import MCPClientError, MCPTestClient
from tests.support.raw import Raw
from tests.support.servers import ROOT, free_port, server_env, start_server

pytestmark = pytest.mark.django_db(transaction=True)

ERAS = ["2025-11-25", "2026-07-28"]
DISABLED = "is disabled by the site's operators"


@pytest.fixture(autouse=True)
def fresh_board() -> Iterator[None]:
    """Each test starts from an empty in-memory board; the rows go with the test's database."""
    board.reset()
    yield
    board.reset()


def tools(client: MCPTestClient) -> set[str]:
    return {t.name for t in client.list_tools().tools}


def refused(call: Any, *args: Any, **kwargs: Any) -> MCPClientError:
    with pytest.raises(MCPClientError) as caught:
        call(*args, **kwargs)
    return caught.value


# -- tools, resources, templates, prompts --------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_a_switched_off_tool_is_hidden_and_refused_until_switched_on(era: str) -> None:
    client = MCPTestClient(protocol_version=era)
    assert {"echo", "square"} <= tools(client)
    assert switch_off("tool", "echo", reason="incident 42: leaks data")
    assert "echo" not in tools(client) and "square" in tools(client)
    error = refused(client.call_tool, "echo", {"text": "x"})
    assert (error.code, error.message) == (-32602, f"Tool 'echo' {DISABLED}")
    assert error.data == {"kind": "tool", "name": "echo", "disabled": True}
    assert "incident" not in repr(error.data)  # the reason is for staff only
    assert client.call_tool("square", {"x": 3}).structured_content == {"result": 9.0}
    # An unknown tool still reads as unknown: the operator's switch is what makes the difference.
    assert "Unknown tool" in refused(client.call_tool, "no_such_tool", {}).message
    assert switch_on("tool", "echo")
    assert "echo" in tools(client)
    assert client.call_tool("echo", {"text": "back"}).content[0].text == "back"  # type: ignore[union-attr]
    row = MCPSwitch.objects.get(kind="tool", name="echo")
    assert row.enabled and row.reason == "incident 42: leaks data" and row.changed_at is not None


@pytest.mark.parametrize("era", ERAS)
def test_resources_templates_and_prompts_are_switched_off_alike(era: str) -> None:
    client = MCPTestClient(protocol_version=era)
    switch_off("resource", "test://static/hello")
    switch_off("template", "test://items/{item_id}")
    switch_off("prompt", "greet")
    assert "test://static/hello" not in {r.uri for r in client.list_resources().resources}
    assert "test://items/{item_id}" not in {t.uri_template for t in client.list_resource_templates().resource_templates}
    assert "greet" not in {p.name for p in client.list_prompts().prompts}
    error = refused(client.read_resource, "test://static/hello")
    assert (error.code, error.message) == (-32602, f"Resource 'test://static/hello' {DISABLED}")
    error = refused(client.read_resource, "test://items/1")  # any URI the template matches
    assert error.message == f"Resource template 'test://items/{{item_id}}' {DISABLED}"
    assert refused(client.get_prompt, "greet", {"name": "Ann"}).message == f"Prompt 'greet' {DISABLED}"
    assert refused(client.complete, argument="style", prompt="greet").message == f"Prompt 'greet' {DISABLED}"
    assert DISABLED in refused(client.complete, argument="item_id", resource_template="test://items/{item_id}").message
    switch_on("template", "test://items/{item_id}")
    assert client.read_resource("test://items/1").contents[0].text == '{"id": 1}'  # type: ignore[union-attr]


def test_a_switched_off_model_template_also_closes_its_show_tool() -> None:
    """``ModelResource.ui``'s ``show_`` tool reads the template's objects: one switch covers both doors."""
    from django_mcp import ModelResource
    from tests.modelapp.models import Shelf

    server = MCPServer("switch-models")

    @server.register
    class ShelfResource(ModelResource):
        model = Shelf
        fields = ["name"]
        ui = "uiapp/shelf.html"

    shelf = Shelf.objects.create(name="Novels")
    alice = User.objects.create_user("alice")
    alice.user_permissions.add(Permission.objects.get(codename="view_shelf"))
    ui = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}
    client = MCPTestClient(server, capabilities=ui, user=alice)
    assert client.call_tool("show_shelf", {"pk": shelf.pk}).structured_content == {"name": "Novels"}
    template = next(iter(server.templates.values())).uri
    switch_off("template", template)
    assert "show_shelf" not in tools(client) and "show_shelf__ui" not in tools(client)
    assert DISABLED in refused(client.call_tool, "show_shelf", {"pk": shelf.pk}).message
    assert DISABLED in refused(client.read_resource, f"django://modelapp/shelf/{shelf.pk}").message
    switch_on("template", template)
    assert client.call_tool("show_shelf", {"pk": shelf.pk}).structured_content == {"name": "Novels"}


def test_a_change_reaches_this_process_at_once_and_others_on_their_timer() -> None:
    """The changing process learns it at once; a copy that missed the broadcast reloads once it is old."""
    client = MCPTestClient()
    assert "echo" in tools(client)
    MCPSwitch.objects.create(kind="tool", name="echo", enabled=False)  # behind the board's back: no broadcast
    assert "echo" in tools(client)  # trusted for SWITCHES_REVALIDATE_INTERVAL (a day in the test settings)
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "SWITCHES_REVALIDATE_INTERVAL": 0.2}):
        board.loaded = (board.loaded or 0) - 0.3  # as if 0.3 s had passed
        assert "echo" not in tools(client)


# -- the admin ------------------------------------------------------------------------------------------------


def test_staff_switch_a_tool_off_and_on_in_the_admin() -> None:
    staff = User.objects.create_superuser("ops", password="pw")
    browser = Client()
    browser.force_login(staff)
    page = browser.get("/admin/django_mcp/mcpswitch/?q=echo")
    assert page.status_code == 200
    row = MCPSwitch.objects.get(kind="tool", name="echo")  # listed without anyone typing its name
    assert MCPSwitch.objects.filter(kind="template", name="test://items/{item_id}").exists()
    assert b"echo" in page.content and b"Disable the selected" in page.content
    client = MCPTestClient()
    assert "echo" in tools(client)
    action = {"action": "disable_selected", "_selected_action": [str(row.pk)], "index": "0"}
    assert browser.post("/admin/django_mcp/mcpswitch/", action).status_code == 302
    row.refresh_from_db()
    assert not row.enabled and row.changed_by == staff
    assert "echo" not in tools(client) and DISABLED in refused(client.call_tool, "echo", {"text": "x"}).message
    form = {"enabled": "on", "reason": "fixed in 1.2.3"}
    assert browser.post(f"/admin/django_mcp/mcpswitch/{row.pk}/change/", form).status_code == 302
    row.refresh_from_db()
    assert row.enabled and row.reason == "fixed in 1.2.3"
    assert "echo" in tools(client)
    assert browser.get("/admin/django_mcp/mcpswitch/add/").status_code == 403  # nobody types names


def test_the_admin_needs_the_change_permission() -> None:
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(*Permission.objects.filter(codename="view_mcpswitch"))
    browser = Client()
    browser.force_login(viewer)
    assert browser.get("/admin/django_mcp/mcpswitch/").status_code == 200
    row = MCPSwitch.objects.get(kind="tool", name="echo")
    browser.post("/admin/django_mcp/mcpswitch/", {"action": "disable_selected", "_selected_action": [str(row.pk)]})
    row.refresh_from_db()
    assert row.enabled  # no such action for a viewer
    assert "echo" in tools(MCPTestClient())


# -- OAuth clients: two users, two clients ----------------------------------------------------------------


def test_a_disabled_client_is_refused_while_the_same_users_other_client_is_not() -> None:
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    MCPClient.objects.create(client_id="first")
    MCPClient.objects.create(client_id="second")

    def caller(user: User, client_id: str, era: str) -> MCPTestClient:
        client = MCPTestClient(protocol_version=era)
        client.force_authenticate(user, scopes=["mcp"], client_id=client_id)
        return client

    callers = {
        (u.username, c, era): caller(u, c, era) for u in (alice, bob) for c in ("first", "second") for era in ERAS
    }
    for client in callers.values():
        assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"  # type: ignore[union-attr]
    disable_clients(["first"])  # what the MCPClient admin's action runs
    for (user, client_id, era), client in callers.items():
        if client_id == "first":
            error = refused(client.call_tool, "echo", {"text": "hi"})
            assert (error.status, error.code, error.data) == (403, -32600, {"error": "client_disabled"}), (user, era)
        else:
            assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"  # type: ignore[union-attr]
    enable_clients(["first"])
    assert callers[("alice", "first", "2026-07-28")].call_tool("echo", {"text": "ok"}).content[0].text == "ok"  # type: ignore[union-attr]


guarded = MCPServer("switches-guarded")


@guarded.tool(scopes=["vault:read"])
def vault_secret() -> str:
    return "42"


@guarded.tool(permissions=["auth.view_user"])
def staff_count() -> int:
    return 1


@pytest.mark.parametrize("era", ERAS)
def test_a_switch_tells_nothing_to_a_caller_who_could_not_use_it_anyway(era: str) -> None:
    """A switched-off tool's name is no news to someone without its scope or permission: refused as ever."""
    alice = User.objects.create_user("alice")
    alice.user_permissions.add(Permission.objects.get(codename="view_user"))
    bob = User.objects.create_user("bob")
    switch_off("tool", "vault_secret")
    switch_off("tool", "staff_count")

    def client(user: User, scopes: list[str]) -> MCPTestClient:
        c = MCPTestClient(guarded, protocol_version=era)
        c.force_authenticate(user, scopes=scopes, client_id="first")
        return c

    entitled = client(alice, ["mcp", "vault:read"])
    for name in ("vault_secret", "staff_count"):
        assert refused(entitled.call_tool, name).message == f"Tool {name!r} {DISABLED}"
    # Bob through the same client: no vault:read scope, no auth.view_user permission.
    stranger = client(bob, ["mcp"])
    error = refused(stranger.call_tool, "vault_secret")
    assert (error.status, error.data) == (403, {"error": "insufficient_scope", "scope": "vault:read"}), error
    assert refused(stranger.call_tool, "staff_count").message == "Unknown tool: staff_count"
    assert tools(stranger) == set()
    # Alice through a token without the scope: the same answer as with the switch on.
    narrow = client(alice, ["mcp"])
    assert refused(narrow.call_tool, "vault_secret").status == 403
    switch_on("tool", "vault_secret")
    assert refused(narrow.call_tool, "vault_secret").status == 403


# -- tasks ----------------------------------------------------------------------------------------------------


def _dummy() -> str:
    try:
        import django.tasks  # noqa: F401
    except ImportError:
        return "django_tasks.backends.dummy.DummyBackend"
    return "django.tasks.backends.dummy.DummyBackend"


def test_a_queued_task_of_a_switched_off_tool_fails_without_running(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with override_settings(TASKS={"default": {"BACKEND": _dummy()}}):  # queued, and nothing runs it yet
        client = MCPTestClient(capabilities={"extensions": {EXTENSION: {}}})
        created = client.request(
            "tools/call", {"name": "task_sleep", "arguments": {"seconds": 0, "marker": str(marker)}}
        )
    task_id = created["taskId"]
    switch_off("tool", "task_sleep")
    board.reset()  # the worker's process knows nothing yet: its run reloads before it starts
    jobs.run_tool_call.call(task_id)  # as db_worker runs it
    row = MCPTask.objects.get(pk=task_id)
    assert row.status == MCPTask.FAILED and row.error["message"] == f"Tool 'task_sleep' {DISABLED}"
    assert not Path(f"{marker}.runs").exists()  # the tool never ran
    assert client.request("tasks/get", {"taskId": task_id})["statusMessage"] == f"Tool 'task_sleep' {DISABLED}"
    # And a new call is refused before any task is made.
    assert DISABLED in refused(client.request, "tools/call", {"name": "task_sleep", "arguments": {}}).message


@pytest.mark.parametrize("era", ERAS)
def test_a_task_no_worker_picked_up_says_so(era: str) -> None:
    capabilities: dict[str, Any] = {"extensions": {EXTENSION: {}}} if era == "2026-07-28" else {"tasks": {}}
    with override_settings(TASKS={"default": {"BACKEND": _dummy()}}):
        client = MCPTestClient(protocol_version=era, capabilities=capabilities)
        params: dict[str, Any] = {"name": "task_sleep", "arguments": {"seconds": 0}}
        if era != "2026-07-28":
            params["task"] = {}
        created = client.request("tools/call", params)
    task_id = (created.get("task") or created)["taskId"]
    assert "statusMessage" not in client.request("tasks/get", {"taskId": task_id})
    MCPTask.objects.filter(pk=task_id).update(updated=timezone.now() - timedelta(minutes=2, seconds=5))
    got = client.request("tasks/get", {"taskId": task_id})
    assert got["status"] == "working"
    assert got["statusMessage"] == "Waiting for a task worker: none has picked this task up for 2 minutes"
    MCPTask.objects.filter(pk=task_id).update(started=timezone.now(), heartbeat=timezone.now())  # a worker claims it
    assert "statusMessage" not in client.request("tasks/get", {"taskId": task_id})


def test_an_idle_task_worker_beats_and_is_counted_until_it_stops() -> None:
    """tasks.beat: a worker process's row, renewed while it runs idle; stale after three missed beats."""
    from django_mcp.models import MCPTaskWorker
    from django_mcp.tasks import beat

    beat.beat()
    _, body = async_to_sync(report)()
    assert (body["tasks"]["workers"], body["tasks"]["queued"]) == (1, 0)
    assert body["tasks"]["newest_worker_beat_seconds"] < 5 and body["tasks"]["newest_heartbeat_seconds"] is None
    row = MCPTaskWorker.objects.get(pk=beat.worker_id)
    assert (row.pid, row.host) == (os.getpid(), socket.gethostname()[:255])
    MCPTaskWorker.objects.filter(pk=beat.worker_id).update(
        beat=timezone.now() - timedelta(seconds=beat.stale_after() + 1)
    )
    _, body = async_to_sync(report)()
    assert body["tasks"]["workers"] == 0 and body["tasks"]["newest_worker_beat_seconds"] > beat.stale_after()
    assert beat.prune(dry_run=True) == 0  # gone, but kept until ten missed beats
    MCPTaskWorker.objects.filter(pk=beat.worker_id).update(
        beat=timezone.now() - timedelta(seconds=beat.interval() * 11)
    )
    assert cleanup().workers == 1 and not MCPTaskWorker.objects.exists()


def test_health_reports_task_workers_and_degrades_on_waiting_work() -> None:
    status, body = async_to_sync(report)()
    assert (status, body["status"]) == (200, "ok")
    assert body["tasks"] == {
        "workers": 0,
        "newest_worker_beat_seconds": None,
        "queued": 0,
        "oldest_queued_seconds": None,
        "running": 0,
        "silent": 0,
        "newest_heartbeat_seconds": None,
        "status": "ok",
        "busy_workers": 0,
    }
    with override_settings(TASKS={"default": {"BACKEND": _dummy()}}):
        client = MCPTestClient(capabilities={"extensions": {EXTENSION: {}}})
        queued = client.request("tools/call", {"name": "task_sleep", "arguments": {"seconds": 0}})["taskId"]
        running = client.request("tools/call", {"name": "task_sleep", "arguments": {"seconds": 0}})["taskId"]
    now = timezone.now()
    MCPTask.objects.filter(pk=running).update(started=now, heartbeat=now - timedelta(seconds=5))
    status, body = async_to_sync(report)()
    assert (status, body["status"], body["tasks"]["status"]) == (200, "ok", "ok")
    assert body["tasks"]["queued"] == 1 and body["tasks"]["running"] == 1
    assert 4 <= body["tasks"]["newest_heartbeat_seconds"] < 60
    MCPTask.objects.filter(pk=queued).update(updated=now - timedelta(seconds=150))
    status, body = async_to_sync(report)()
    assert (status, body["status"], body["tasks"]["status"]) == (200, "degraded", "degraded")  # 200: this worker serves
    assert body["tasks"]["oldest_queued_seconds"] >= 150
    MCPTask.objects.filter(pk=queued).update(updated=now)
    MCPTask.objects.filter(pk=running).update(heartbeat=now - timedelta(seconds=90))  # its worker went silent
    status, body = async_to_sync(report)()
    assert (body["status"], body["tasks"]["silent"]) == ("degraded", 1)


# -- strict mode: REQUIRE_ACCESS_RULES --------------------------------------------------------------------------

strict_server = MCPServer("strict-tests")


@strict_server.tool(annotations={"readOnlyHint": True})
def open_tool() -> str:
    return "anyone"


@strict_server.tool(permissions=["auth.view_user"])
def guarded_tool() -> str:
    return "staff"


@strict_server.tool(check=public)
def public_tool() -> str:
    return "anyone, on purpose"


@strict_server.resource("strict://open")
def open_resource() -> str:
    return "open"


@strict_server.resource("strict://scoped/{id}", scopes=["strict:read"])
def scoped_template(id: str) -> str:
    return id


@strict_server.prompt
def open_prompt() -> str:
    return "hello"


def test_strict_mode_names_each_declaration_without_an_access_rule() -> None:
    found = {(kind, name) for _server, kind, name in strict.offenders([strict_server])}
    assert found == {("tool", "open_tool"), ("resource", "strict://open"), ("prompt", "open_prompt")}
    assert strict.errors([strict_server]) == []  # off by default
    with override_settings(DJANGO_MCP={**settings.DJANGO_MCP, "REQUIRE_ACCESS_RULES": True}):
        errors = strict.errors([strict_server])
        site_errors = check_access_rules()
    assert {e.id for e in errors} == {"django_mcp.E182"} and all(e.level == 40 for e in errors)
    messages = sorted(e.msg for e in errors)
    assert messages[0] == (
        "Prompt 'open_prompt' declares no access rule (scopes=, permissions= or check=), "
        "and REQUIRE_ACCESS_RULES is on."
    )
    assert all("check=public" in e.hint and e.obj == "MCP server 'strict-tests'" for e in errors)
    # django_mcp.site (tests/testapp/mcp.py) has bare tools; its ModelResources count as ruled (view_ permission).
    named = {e.msg.split("'")[1] for e in site_errors}
    assert {"echo", "test://static/hello", "greet"} <= named
    assert not any(name.startswith("django://") for name in named)
    # DRF views (tests/drfapp): AllowAny is no rule, a permission class is one.
    assert "api_ping" in named and "item_stats" not in named


def test_check_public_opens_a_declaration_on_purpose() -> None:
    client = MCPTestClient(strict_server)
    assert client.call_tool("public_tool").content[0].text == "anyone, on purpose"  # type: ignore[union-attr]
    assert "guarded_tool" not in tools(client)  # anonymous: no auth.view_user


def _run(tmp: Path, settings_module: str, *command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = server_env(tmp, settings=settings_module)
    return subprocess.run(
        [sys.executable, "-m", *command], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_strict_mode_stops_check_and_daphne_and_lets_a_ruled_site_start(tmp_path: Path) -> None:
    out = _run(tmp_path, "tests.settings.settings_strict", "django", "check")
    assert out.returncode != 0
    assert "(django_mcp.E182) Tool 'echo' declares no access rule" in out.stderr
    assert "HINT: Give @site.tool(...) permissions=" in out.stderr
    assert "(django_mcp.E182) Resource 'test://static/hello'" in out.stderr
    assert "(django_mcp.E182) Prompt 'greet'" in out.stderr
    # daphne runs no system checks: building the ASGI application refuses instead, naming the offenders.
    port = str(free_port())
    out = _run(
        tmp_path,
        "tests.settings.settings_strict",
        "daphne",
        "-b",
        "127.0.0.1",
        "-p",
        port,
        "tests.settings.asgi:application",
    )
    assert out.returncode != 0
    assert "ImproperlyConfigured: REQUIRE_ACCESS_RULES is on" in out.stderr and "Tool 'echo'" in out.stderr
    ruled = _run(tmp_path, "tests.settings.settings_strict_ruled", "django", "check")
    assert ruled.returncode == 0, ruled.stderr
    assert "django_mcp.E" not in ruled.stderr
    live = start_server(server_env(tmp_path, settings="tests.settings.settings_strict_ruled"), tmp_path / "ruled.log")
    try:
        assert Raw(live).modern("tools/list").json()["result"]["tools"][0]["name"] == "ping"
    finally:
        live.stop()
