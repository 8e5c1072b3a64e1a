"""A project without ``django.contrib.admin``, served for real, operated with management commands only.

``tests.settings.settings_no_admin`` (OAuth, the Tasks framework, no admin app, no admin URLs) under daphne: it passes
``manage.py check``, the official ``mcp`` SDK client calls its tools, and every operation the admin offers
runs as a real ``manage.py`` process against it: a client disabled is refused at once while another
client works; a user's tokens revoked are refused, and the task that user queued fails unrun, while
another user's calls and tasks go on; a tool switched off is refused; a session ended is gone; the audit
log exports a hostile tool name as spreadsheet-safe CSV.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.oauth.kit import INIT, OAuthServer, mcp_post, start_oauth_server, stop_oauth_server
from tests.support.servers import ROOT, TaskWorker, start_task_worker, stop_process
from tests.support.servers import served_cleanly as conftest_served_cleanly
from tests.support.task_client import Modern

SETTINGS = "tests.settings.settings_no_admin"
FORMULA = "=cmd|' /C calc'!A0"
REVOKED = "The access token that created this task was revoked"
#: Tokens for (user, client): each application is created on first use; the JSON has the token and client id.
MINT = """
import io, json
from django.core.management import call_command
from oauth2_provider.models import Application
out = []
for user, app in {specs!r}:
    application, _ = Application.objects.get_or_create(name=app, defaults=dict(client_type="public",
        authorization_grant_type="authorization-code", redirect_uris="http://127.0.0.1:9/callback"))
    buf = io.StringIO()
    call_command("mcp_token", user=user, scope=["mcp"], application=application.client_id, resource=[{url!r}],
        stdout=buf)
    out.append({{"token": buf.getvalue().strip(), "client_id": application.client_id}})
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    """The admin-less project; switches and sessions revalidate within half a second (another process's change,
    on the in-memory layer, reaches the server only so; a Redis layer tells it at once)."""
    tmp = tmp_path_factory.mktemp("noadmin")
    live = start_oauth_server(tmp, settings=SETTINGS, MCP_SWITCHES_REVALIDATE="0.5", MCP_SESSION_REVALIDATE="0.5")
    try:
        yield live
    finally:
        stop_oauth_server(live)


@pytest.fixture
def clean_log(server: OAuthServer) -> Iterator[None]:
    """The test fails if the server answered 500 or logged a traceback meanwhile."""
    with conftest_served_cleanly(server.live.log):
        yield


def manage(server: OAuthServer, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m django <args>``: a real process of the project, as an operator runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "django", *args],
        env=server.live.env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def mint(server: OAuthServer, *specs: tuple[str, str]) -> list[dict[str, str]]:
    return list(json.loads(server.shell(MINT.format(specs=list(specs), url=server.url))))


async def sdk_call(server: OAuthServer, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call through the official SDK client (a session of the 2025-11-25 handshake): its result or error."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, mode="legacy", read_timeout_seconds=30) as client:
            try:
                return await client.call_tool(tool, arguments)
            except MCPError as error:  # returned: raised, it would leave the client's task group as a group
                return error


def status(server: OAuthServer, token: str) -> int:
    """The HTTP status of an ``initialize`` with ``token``: 200 served, 401 refused."""
    return mcp_post(server, token, INIT).status_code


def until(condition: Any, timeout: float = 10) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("timed out")


def number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def audit_csv(server: OAuthServer, *args: str) -> list[dict[str, str]]:
    out = manage(server, "mcp_audit", "calls", "--format", "csv", *args).stdout
    return list(csv.DictReader(io.StringIO(out)))


async def test_the_project_checks_serves_the_sdk_client_and_has_no_admin(server: OAuthServer, clean_log: None) -> None:
    assert "django.contrib.admin" not in server.shell(
        "from django.conf import settings; print(settings.INSTALLED_APPS)"
    )
    manage(server, "check", "--fail-level", "ERROR")  # exits 1 on an error
    assert httpx.get(server.base + "/admin/", timeout=10).status_code == 404
    (alice,) = mint(server, ("alice", "sdk"))
    result = await sdk_call(server, alice["token"], "add", {"a": 2, "b": 3})
    assert result.structured_content == {"total": 5, "terms": [2, 3]}
    # The same process tree runs the operations: the call is in the audit log, read without the admin.
    rows = until(lambda: [r for r in audit_csv(server, "--user", "alice", "--tool", "add") if r["outcome"] == "ok"])
    assert rows[0]["oauth_client"] == alice["client_id"] and rows[0]["method"] == "tools/call"


async def test_a_hostile_tool_name_is_exported_as_text(server: OAuthServer, clean_log: None) -> None:
    """A client calls a tool named like a spreadsheet formula; the CSV export shows it as text."""
    (bob,) = mint(server, ("bob", "csv-attack"))
    refused = await sdk_call(server, bob["token"], FORMULA, {"x": FORMULA})
    assert isinstance(refused, MCPError) and "Unknown tool" in refused.message
    rows = until(lambda: audit_csv(server, "--client", bob["client_id"], "--payload"))
    assert rows[0]["target"] == "'" + FORMULA, rows
    cells = [value for row in rows for value in row.values() if value]
    assert not [c for c in cells if c[0] in "=+-@" and not number(c)], cells  # -32602: a number, not a formula
    huge = manage(server, "mcp_audit", "calls", "--user", "u" * 100_000, check=False)
    assert huge.returncode == 1 and "Traceback" not in huge.stderr
    assert "CommandError: --user: at most 150 characters" in huge.stderr
    bad = manage(server, "mcp_audit", "calls", "--since", "last tuesday", check=False)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and "--since 'last tuesday'" in bad.stderr


def test_disabling_a_client_refuses_its_tokens_at_once_and_not_the_other_clients(
    server: OAuthServer, clean_log: None
) -> None:
    """Two users, two clients: ``mcp_client disable A`` (another process) refuses every token of A on its next
    request; the same user's token through B, and the other user's, still work."""
    alice_a, bob_a, alice_b, bob_b = mint(
        server, ("alice", "client-A"), ("bob", "client-A"), ("alice", "client-B"), ("bob", "client-B")
    )
    assert {status(server, t["token"]) for t in (alice_a, bob_a, alice_b, bob_b)} == {200}
    out = manage(server, "mcp_client", "disable", alice_a["client_id"]).stdout
    assert out == "Disabled 1 client; their tokens are revoked.\n"
    assert status(server, alice_a["token"]) == 401 and status(server, bob_a["token"]) == 401
    assert status(server, alice_b["token"]) == 200 and status(server, bob_b["token"]) == 200
    listed = json.loads(server.live.manage("mcp_client", "list", "--disabled", "--format", "json"))
    assert [c["client_id"] for c in listed] == [alice_a["client_id"]]
    # Enabled again, it takes new tokens; the revoked ones stay revoked.
    server.live.manage("mcp_client", "enable", alice_a["client_id"])
    (fresh,) = mint(server, ("alice", "client-A"))
    assert status(server, fresh["token"]) == 200 and status(server, alice_a["token"]) == 401


def test_revoking_a_users_tokens_refuses_the_user_and_fails_the_queued_task(
    server: OAuthServer, clean_log: None, tmp_path: Path
) -> None:
    """``mcp_client revoke --user carol``: carol's calls get 401 and the task she queued fails without running
    when a worker takes it; dave, on the same client, goes on, and his task runs."""
    server.shell("from django.contrib.auth.models import User; User.objects.create_user('dave')")
    carol, dave = mint(server, ("carol", "tasks-client"), ("dave", "tasks-client"))
    markers = {"carol": tmp_path / "carol", "dave": tmp_path / "dave"}
    tasks = {}
    for name, token in (("carol", carol), ("dave", dave)):
        caller = Modern(server.url, headers={"Authorization": f"Bearer {token['token']}"})
        tasks[name] = caller.start("task_sleep", seconds=0, marker=str(markers[name]))
    listed = json.loads(server.live.manage("mcp_task", "list", "--user", "carol", "--format", "json"))
    assert [t["task"] for t in listed] == [tasks["carol"][:16]] and listed[0]["status"] == "working"
    assert manage(server, "mcp_client", "revoke", "--user", "carol").stdout == "Revoked 1 access token.\n"
    assert status(server, carol["token"]) == 401 and status(server, dave["token"]) == 200
    worker: TaskWorker = start_task_worker(server.live.env, tmp_path / "worker.log")
    try:
        davids = Modern(server.url, headers={"Authorization": f"Bearer {dave['token']}"})
        assert davids.wait(tasks["dave"], timeout=90)["status"] == "completed"  # a busy machine starts a worker slowly

        def carols() -> Any:
            task = json.loads(server.live.manage("mcp_task", "list", "--user", "carol", "--format", "json"))[0]
            return task if task["status"] != "working" else None

        row = until(carols)
        assert (row["status"], row["message"]) == ("failed", REVOKED)
        assert not Path(f"{markers['carol']}.runs").exists(), "the revoked user's tool ran"
    finally:
        stop_process(worker.process, 5)
    assert "Traceback" not in worker.log.read_text(errors="replace")


def test_switches_sessions_and_tasks_by_command(server: OAuthServer, clean_log: None) -> None:
    """A tool switched off by a real ``manage.py`` is refused (and served again when on); a session ended by its
    id prefix answers 404; an active task is cancelled by its prefix."""
    (erin,) = mint(server, ("alice", "ops-client"))
    caller = Modern(server.url, headers={"Authorization": f"Bearer {erin['token']}"})
    assert caller.result("tools/call", {"name": "echo", "arguments": {"text": "hi"}})["content"][0]["text"] == "hi"
    off = manage(server, "mcp_switch", "off", "tool", "echo", "--reason", "incident 9")
    assert off.stdout == "tool echo: off\n"
    refused = until(lambda: caller.rpc("tools/call", {"name": "echo", "arguments": {"text": "x"}}).get("error"))
    assert refused["message"] == "Tool 'echo' is disabled by the site's operators"
    listed = json.loads(server.live.manage("mcp_switch", "list", "--off", "--format", "json"))
    assert [(s["kind"], s["name"], s["reason"]) for s in listed] == [("tool", "echo", "incident 9")]
    server.live.manage("mcp_switch", "on", "tool", "echo")
    until(lambda: "result" in caller.rpc("tools/call", {"name": "echo", "arguments": {"text": "x"}}))

    opened = mcp_post(server, erin["token"], INIT)
    sid = opened.headers["mcp-session-id"]
    headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert mcp_post(server, erin["token"], ping, **headers).status_code == 200
    sessions = json.loads(server.live.manage("mcp_session", "list", "--client", erin["client_id"], "--format", "json"))
    assert [s["session"] for s in sessions] == [sid[:16]]
    assert manage(server, "mcp_session", "end", "--", sid[:10]).stdout == "Ended 1 session.\n"
    until(lambda: mcp_post(server, erin["token"], ping, **headers).status_code == 404)

    task = caller.start("task_sleep", seconds=0)
    assert server.live.manage("mcp_task", "cancel", "--", task[:12]) == "Cancelled 1 task.\n"
    assert caller.get(task)["status"] == "cancelled"
