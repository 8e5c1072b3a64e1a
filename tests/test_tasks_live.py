"""Tasks that outlive processes, and tasks nobody else can reach: real daphne and db_worker processes.

- Two servers on one database: the one that created a task dies (kill -9); the other serves its result.
- The worker dies mid-task (kill -9): once its heartbeat is silent, the task runs again on a new worker.
- The worker is stopped (SIGTERM) mid-task: it hands the task over at once, a new worker completes it.
- Two users and two OAuth clients: only the task's own user through its own client can reach it.
- Revocation reaches tasks: a revoked token or a disabled client fails a queued task before its tool
  runs and stops a running one; a narrowed scope refuses the run; a refreshed token keeps its tasks.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oauth.kit import OAuthServer, mint_two_users_two_clients, start_oauth_server, stop_oauth_server
from tests.support.servers import (
    LiveServer,
    TaskWorker,
    drop_pg_database,
    migrate_database,
    server_env,
    start_server,
    start_task_worker,
    stop_process,
)
from tests.support.task_client import Modern, Session


def text(result: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in result["content"])


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_for_lines(path: Path, count: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while len(lines(path)) < count:
        assert time.monotonic() < deadline, f"{path}: {lines(path)} after {timeout}s"
        time.sleep(0.05)


def attempts(env: dict[str, str], task_id: str) -> int:
    """The task's run count, read from the servers' database."""
    query = "SELECT attempts FROM django_mcp_mcptask WHERE id = %s"
    if env["MCP_TEST_DB"] == "postgres":
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 user=postgres dbname={env['MCP_PG_NAME']}") as conn:
            row = conn.execute(query, (task_id,)).fetchone()  # type: ignore[arg-type]
    else:
        with sqlite3.connect(env["MCP_SQLITE"]) as conn:
            row = conn.execute(query.replace("%s", "?"), (task_id,)).fetchone()
    assert row is not None
    return int(row[0])


class Processes:
    """What a test started, stopped at its end whatever happened."""

    def __init__(self) -> None:
        self.servers: list[LiveServer] = []
        self.workers: list[TaskWorker] = []

    def server(self, env: dict[str, str], log: Path, migrate: bool = True) -> LiveServer:
        server = start_server(env, log, migrate=migrate)
        self.servers.append(server)
        return server

    def worker(self, env: dict[str, str], log: Path) -> TaskWorker:
        worker = start_task_worker(env, log)
        self.workers.append(worker)
        return worker

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop(grace=5)
        for server in self.servers:
            server.stop()
        if self.servers and self.servers[0].env["MCP_TEST_DB"] == "postgres":
            drop_pg_database(self.servers[0].env["MCP_PG_NAME"])


@pytest.fixture
def procs() -> Iterator[Processes]:
    started = Processes()
    yield started
    started.stop()


def test_other_server_serves_the_task_of_a_dead_one(procs: Processes, tmp_path: Path) -> None:
    env = server_env(tmp_path)
    a = procs.server(env, tmp_path / "a.log")
    b = procs.server(env, tmp_path / "b.log", migrate=False)
    procs.worker(env, tmp_path / "worker.log")
    task_id = Modern(a.url).start("task_sleep", seconds=2)
    a.process.kill()  # kill -9 the server that created the task, mid-task
    a.process.wait(5)
    done = Modern(b.url).wait(task_id, timeout=30)
    assert done["status"] == "completed" and text(done["result"]) == "slept 2.0"


def test_killed_worker_task_runs_again(procs: Processes, tmp_path: Path) -> None:
    env = server_env(tmp_path)
    migrate_database(env)  # a copy of the other tests' migrated file (the override is not part of its key)
    env["MCP_TASK_HEARTBEAT_TIMEOUT"] = "2"
    server = procs.server(env, tmp_path / "daphne.log", migrate=False)
    first = procs.worker(env, tmp_path / "worker1.log")
    marker = tmp_path / "marker"
    client = Modern(server.url)
    task_id = client.start("task_sleep", seconds=2, marker=str(marker))
    wait_for_lines(Path(f"{marker}.runs"), 1)
    first.kill()  # kill -9 mid-task: no requeue, the heartbeat goes silent
    assert client.get(task_id)["status"] == "working"
    procs.worker(env, tmp_path / "worker2.log")
    done = client.wait(task_id, timeout=40)  # polling finds the silent heartbeat and runs the task again
    assert done["status"] == "completed" and text(done["result"]) == "slept 2.0", done
    assert lines(Path(f"{marker}.runs")) == ["run", "run"] and lines(marker) == ["done"]
    assert attempts(env, task_id) == 2


def test_stopped_worker_hands_the_task_over(procs: Processes, tmp_path: Path) -> None:
    env = server_env(tmp_path)  # the default 60 s heartbeat timeout: no waiting for it
    server = procs.server(env, tmp_path / "daphne.log")
    first = procs.worker(env, tmp_path / "worker1.log")
    marker = tmp_path / "marker"
    client = Modern(server.url)
    task_id = client.start("task_sleep", seconds=3, marker=str(marker))
    wait_for_lines(Path(f"{marker}.runs"), 1)
    began = time.monotonic()
    first.process.send_signal(signal.SIGTERM)
    first.process.wait(10)
    # It stopped the tool, not waited for it: the tool writes the marker only when it runs to its end. (A bound
    # on the exit time said the same and failed on a loaded machine, the exit itself taking 2.8 s.)
    assert not marker.exists(), "the worker waited for the tool to end"
    assert attempts(env, task_id) == 1
    procs.worker(env, tmp_path / "worker2.log")
    done = client.wait(task_id, timeout=30)
    assert done["status"] == "completed" and text(done["result"]) == "slept 3.0", done
    assert time.monotonic() - began < 30
    assert lines(Path(f"{marker}.runs")) == ["run", "run"] and lines(marker) == ["done"]
    assert attempts(env, task_id) == 2


@pytest.mark.postgres
@pytest.mark.own_config
@pytest.mark.version_independent
def test_cancel_stops_a_sync_tool_postgres(postgres: None, procs: Processes, tmp_path: Path) -> None:
    """A sync tool in a task stops at its next check once the task is cancelled; its progress shows meanwhile.

    PostgreSQL: the production database, where a sync tool's ATOMIC_TOOL_CALLS transaction never holds
    up the task's bookkeeping (on SQLite, a tool that writes holds the one write lock until it ends).
    """
    env = server_env(tmp_path, db="postgres")
    server = procs.server(env, tmp_path / "daphne.log")
    procs.worker(env, tmp_path / "worker.log")
    client = Modern(server.url)
    marker = tmp_path / "marker"
    task_id = client.start("task_sync_steps", steps=12, delay=0.25, marker=str(marker))
    # A task is "working" from its creation: wait for the worker (slow to start on a loaded machine) to run it.
    deadline = time.monotonic() + 60
    while "tool task_sync_steps starts" not in (tmp_path / "worker.log").read_text(errors="replace"):
        assert time.monotonic() < deadline, "no worker ran the task"
        time.sleep(0.05)
    time.sleep(1.0)  # well into its 3 s run
    client.result("tasks/cancel", {"taskId": task_id})
    time.sleep(3.5)
    assert not marker.exists(), "the sync tool ran to its end after its task was cancelled"
    assert client.get(task_id)["status"] == "cancelled"
    # The Tasks framework's own line about the run says SUCCESSFUL (the job returned): with how the MCP task ended.
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert f"state=SUCCESSFUL (MCP task {task_id}: task_sync_steps was cancelled)" in log, log[-3000:]
    # Its progress messages show while it runs (not only inside its transaction, as before).
    task_id = client.start("task_sync_steps", steps=6, delay=0.5, marker=str(marker))
    seen: set[str] = set()
    deadline = time.monotonic() + 30
    while (task := client.get(task_id))["status"] == "working":
        seen.add(task.get("statusMessage", ""))
        assert time.monotonic() < deadline, task
        time.sleep(0.1)
    assert text(task["result"]) == "6 sync steps done" and marker.exists()
    assert {f"sync step {i} of 6" for i in range(1, 6)} & seen, seen


# -- isolation: two users, two OAuth clients ----------------------------------------------------

SETTINGS = "tests.settings.settings_tasks_oauth"


@pytest.fixture
def oauth(tmp_path: Path) -> Iterator[tuple[OAuthServer, list[str]]]:
    server = start_oauth_server(tmp_path, settings=SETTINGS)
    worker = start_task_worker(server.live.env, tmp_path / "worker.log")
    try:
        yield server, mint_two_users_two_clients(server)
    finally:
        stop_process(worker.process, 5)
        stop_oauth_server(server)


@pytest.mark.version_independent
def test_only_the_owner_through_its_client_reaches_a_task(oauth: tuple[OAuthServer, list[str]]) -> None:
    server, (alice, alice_elsewhere, bob) = oauth
    owner = Modern(server.url, headers={"Authorization": f"Bearer {alice}"})
    task_id = owner.start("task_ask")
    assert owner.wait(task_id, until=("input_required",))["status"] == "input_required"
    answer = {"name": {"action": "accept", "content": {"name": "Mallory"}}}
    for token in (bob, alice_elsewhere):
        other = Modern(server.url, headers={"Authorization": f"Bearer {token}"})
        assert other.error("tasks/get", {"taskId": task_id})["code"] == -32602
        assert other.error("tasks/update", {"taskId": task_id, "inputResponses": answer})["code"] == -32602
        assert other.error("tasks/cancel", {"taskId": task_id})["code"] == -32602
        session = Session(server.url, headers={"Authorization": f"Bearer {token}"})
        assert session.error("tasks/result", {"taskId": task_id})["code"] == -32602
        assert session.error("tasks/get", {"taskId": task_id})["code"] == -32602
        assert session.error("tasks/cancel", {"taskId": task_id})["code"] == -32602
        assert task_id not in [t["taskId"] for t in session.result("tasks/list")["tasks"]]
    # Nothing they tried reached it: still waiting for its owner's answer, who can list and finish it.
    assert owner.get(task_id)["status"] == "input_required"
    mine = Session(server.url, headers={"Authorization": f"Bearer {alice}"})
    assert task_id in [t["taskId"] for t in mine.result("tasks/list")["tasks"]]
    answer = {"name": {"action": "accept", "content": {"name": "Alice"}}}
    owner.result("tasks/update", {"taskId": task_id, "inputResponses": answer})
    result = mine.result("tasks/result", {"taskId": task_id})
    assert text(result) == "Hello, Alice!"


# -- revocation reaches tasks: the creator's rights as they are when the task runs ---------------------

REVOKED = "The access token that created this task was revoked"
CLIENT_DISABLED = "The OAuth client that created this task was disabled"
GRANT_MINT = """
import io, json
from django.core.management import call_command
from oauth2_provider.models import Application
out = []
for user, app, scope, refresh in {specs!r}:
    application, _ = Application.objects.get_or_create(name=app, defaults=dict(client_type="public",
        authorization_grant_type="authorization-code", redirect_uris="http://127.0.0.1:9/callback"))
    buf = io.StringIO()
    call_command("mcp_token", user=user, scope=[scope], application=application.client_id, resource=[{url!r}],
        refresh=refresh, json=True, stdout=buf)
    out.append(dict(json.loads(buf.getvalue()), client_id=application.client_id))
print(json.dumps(out))
"""
NARROW = """
import hashlib
from oauth2_provider.models import get_access_token_model
checksum = hashlib.sha256({token!r}.encode()).hexdigest()
print(get_access_token_model().objects.filter(token_checksum=checksum).update(scope={scope!r}))
"""


@pytest.fixture(scope="module")
def grants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthServer]:
    """The OAuth test project with the Tasks framework (alice, bob); each test starts its worker when it wants."""
    server = start_oauth_server(tmp_path_factory.mktemp("grants"), settings=SETTINGS)
    try:
        yield server
    finally:
        stop_oauth_server(server)


@pytest.fixture
def workers(grants: OAuthServer, tmp_path: Path) -> Iterator[list[TaskWorker]]:
    """Workers a test starts (``start``); stopped at its end, and their logs must show no traceback.

    The log is read before the stop: django-tasks-db's own SIGTERM handler exits with ``sys.exit`` wherever the
    worker is, and when that lands inside its polling transaction Python prints the interrupted frames. The
    stop itself (the task handed over, nothing lost) is what ``test_stopped_worker_hands_the_task_over`` checks.
    """
    started: list[TaskWorker] = []
    yield started
    logs = [worker.log.read_text(errors="replace") for worker in started]
    for worker in started:
        stop_process(worker.process, 5)
    for log in logs:
        assert "Traceback" not in log, log


def start_worker(server: OAuthServer, started: list[TaskWorker], tmp_path: Path) -> None:
    started.append(start_task_worker(server.live.env, tmp_path / f"worker{len(started)}.log"))


def mint(server: OAuthServer, *specs: tuple[str, str, str, bool]) -> list[dict[str, str]]:
    """Access tokens for (user, application name, scopes, with a refresh token); the application is made if new."""
    out = server.shell(GRANT_MINT.format(specs=list(specs), url=server.url))
    return list(json.loads(out))


def bearer(server: OAuthServer, token: dict[str, str]) -> Modern:
    return Modern(server.url, headers={"Authorization": f"Bearer {token['access_token']}"})


def revoke(server: OAuthServer, token: dict[str, str]) -> None:
    """RFC 7009 revocation at the server's own endpoint, as the client would ask for it."""
    r = httpx.post(
        server.base + "/oauth/revoke_token/", data={"token": token["access_token"], "client_id": token["client_id"]}
    )
    assert r.status_code == 200, r.text
    assert bearer(server, token).http.post(server.url, json={}).status_code == 401


def refresh(server: OAuthServer, token: dict[str, str], scope: str) -> dict[str, str]:
    """A refresh at the token endpoint (rotation: the old access token is deleted); the new tokens."""
    data = {"grant_type": "refresh_token", "refresh_token": token["refresh_token"], "client_id": token["client_id"]}
    r = httpx.post(server.base + "/oauth/token/", data={**data, "scope": scope})
    assert r.status_code == 200, r.text
    return {**r.json(), "client_id": token["client_id"]}


def row(server: OAuthServer, task_id: str) -> dict[str, Any]:
    """The task's status, statusMessage and error, read from the database (no token of its client may ask)."""
    code = f"from django_mcp.models import MCPTask; import json; t = MCPTask.objects.get(pk={task_id!r}); "
    code += "print(json.dumps({'status': t.status, 'statusMessage': t.status_message, 'error': t.error}))"
    return dict(json.loads(server.shell(code)))


@pytest.mark.version_independent
def test_revoked_token_fails_its_queued_task_unrun(
    grants: OAuthServer, workers: list[TaskWorker], tmp_path: Path
) -> None:
    """Revoked before a worker takes it: alice's task fails without running; bob's and her other client's run."""
    alice, alice_again, bob, alice_elsewhere = mint(
        grants,
        ("alice", "revoke-first", "mcp", False),
        ("alice", "revoke-first", "mcp", False),
        ("bob", "revoke-first", "mcp", False),
        ("alice", "revoke-second", "mcp", False),
    )
    markers = {name: tmp_path / name for name in ("alice", "bob", "elsewhere")}
    ids = {
        "alice": bearer(grants, alice).start("task_sleep", seconds=0, marker=str(markers["alice"])),
        "bob": bearer(grants, bob).start("task_sleep", seconds=0, marker=str(markers["bob"])),
        "elsewhere": bearer(grants, alice_elsewhere).start("task_sleep", seconds=0, marker=str(markers["elsewhere"])),
    }
    revoke(grants, alice)
    start_worker(grants, workers, tmp_path)
    # Alice, through the same client with another token, sees why it failed.
    failed = bearer(grants, alice_again).wait(ids["alice"])
    assert failed["status"] == "failed" and failed["statusMessage"] == REVOKED, failed
    assert failed["error"] == {"code": -32600, "message": REVOKED}
    assert bearer(grants, bob).wait(ids["bob"])["status"] == "completed"
    assert bearer(grants, alice_elsewhere).wait(ids["elsewhere"])["status"] == "completed"
    assert not Path(f"{markers['alice']}.runs").exists(), "the revoked token's tool ran"
    assert lines(markers["bob"]) == ["done"] and lines(markers["elsewhere"]) == ["done"]


@pytest.mark.version_independent
def test_disabled_client_fails_its_queued_tasks(grants: OAuthServer, workers: list[TaskWorker], tmp_path: Path) -> None:
    """Disabling client "first" (the admin's action) fails every task it queued, alice's and bob's; not "second"'s."""
    alice, bob, alice_elsewhere = mint(
        grants,
        ("alice", "disable-first", "mcp", False),
        ("bob", "disable-first", "mcp", False),
        ("alice", "disable-second", "mcp", False),
    )
    markers = {name: tmp_path / name for name in ("alice", "bob", "elsewhere")}
    ids = {
        "alice": bearer(grants, alice).start("task_sleep", seconds=0, marker=str(markers["alice"])),
        "bob": bearer(grants, bob).start("task_sleep", seconds=0, marker=str(markers["bob"])),
        "elsewhere": bearer(grants, alice_elsewhere).start("task_sleep", seconds=0, marker=str(markers["elsewhere"])),
    }
    disable = f"from django_mcp.auth.clients import disable_clients; print(disable_clients([{alice['client_id']!r}]))"
    assert grants.shell(disable) == "1"
    start_worker(grants, workers, tmp_path)
    assert bearer(grants, alice_elsewhere).wait(ids["elsewhere"])["status"] == "completed"  # ran after the others
    for name in ("alice", "bob"):
        task = row(grants, ids[name])
        assert task["status"] == "failed" and task["statusMessage"] == CLIENT_DISABLED, (name, task)
        assert task["error"] == {"code": -32600, "message": CLIENT_DISABLED}
        assert not Path(f"{markers[name]}.runs").exists(), f"{name}'s tool ran for a disabled client"


@pytest.mark.version_independent
def test_revocation_stops_a_running_task(grants: OAuthServer, workers: list[TaskWorker], tmp_path: Path) -> None:
    """Revoked while its tool runs (on the worker, another process): the tool stops within seconds."""
    alice, alice_again, bob = mint(
        grants,
        ("alice", "running-first", "mcp", False),
        ("alice", "running-first", "mcp", False),
        ("bob", "running-first", "mcp", False),
    )
    start_worker(grants, workers, tmp_path)
    marker = tmp_path / "marker"
    task_id = bearer(grants, alice).start("task_sleep", seconds=6, marker=str(marker))
    wait_for_lines(Path(f"{marker}.runs"), 1)
    started = time.monotonic()
    theirs = bearer(grants, bob).start("task_sleep", seconds=0)  # queued behind it on the one worker
    revoke(grants, alice)
    revoked = time.monotonic()
    observer = bearer(grants, alice_again)
    stopped = observer.wait(task_id, timeout=10)
    # The worker re-reads the token every 2 s; the rest is slack for a loaded machine.
    assert time.monotonic() - revoked < 5, "the run went on long after its token was revoked"
    assert stopped["status"] == "cancelled" and stopped["statusMessage"] == REVOKED, stopped
    assert bearer(grants, bob).wait(theirs)["status"] == "completed"  # the worker went on to bob's task
    time.sleep(max(0.0, started + 6.5 - time.monotonic()))  # past the end of the tool's sleep
    assert not marker.exists(), "the tool ran to its end after its token was revoked"
    assert observer.get(task_id)["status"] == "cancelled"


@pytest.mark.version_independent
def test_narrowed_scope_refuses_the_run(grants: OAuthServer, workers: list[TaskWorker], tmp_path: Path) -> None:
    """The token's scope narrowed after the task was queued: the run is refused at the door, insufficient_scope."""
    alice, alice_reader, bob = mint(
        grants,
        ("alice", "narrow-first", "mcp notes:write", False),
        ("alice", "narrow-first", "mcp", False),
        ("bob", "narrow-first", "mcp notes:write", False),
    )
    mine, theirs = tmp_path / "alice", tmp_path / "bob"
    task_id = bearer(grants, alice).start("write_note", marker=str(mine))
    other = bearer(grants, bob).start("write_note", marker=str(theirs))
    assert grants.shell(NARROW.format(token=alice["access_token"], scope="mcp")) == "1"
    start_worker(grants, workers, tmp_path)
    failed = bearer(grants, alice_reader).wait(task_id)
    assert failed["status"] == "failed", failed
    assert failed["error"] == {
        "code": -32600,
        "message": "Forbidden: The access token lacks the scope this request needs",
        "data": {"error": "insufficient_scope", "scope": "notes:write"},
    }
    assert bearer(grants, bob).wait(other)["status"] == "completed"
    assert not Path(f"{mine}.runs").exists() and lines(theirs) == ["written"]


@pytest.mark.version_independent
def test_refreshed_token_keeps_its_tasks(grants: OAuthServer, workers: list[TaskWorker], tmp_path: Path) -> None:
    """A refresh deletes the access token but continues the grant: its tasks run, with the refreshed scopes."""
    kept, narrowed = mint(
        grants,
        ("alice", "refresh-first", "mcp notes:write", True),
        ("alice", "refresh-first", "mcp notes:write", True),
    )
    markers = {"kept": tmp_path / "kept", "narrowed": tmp_path / "narrowed"}
    ids = {name: bearer(grants, t).start("write_note", marker=str(markers[name])) for name, t in
           (("kept", kept), ("narrowed", narrowed))}  # fmt: skip
    kept2 = refresh(grants, kept, "mcp notes:write")
    narrowed2 = refresh(grants, narrowed, "mcp")
    assert bearer(grants, kept).http.post(grants.url, json={}).status_code == 401  # the old token is gone
    start_worker(grants, workers, tmp_path)
    assert bearer(grants, kept2).wait(ids["kept"])["status"] == "completed"
    assert lines(markers["kept"]) == ["written"]
    failed = bearer(grants, narrowed2).wait(ids["narrowed"])
    assert failed["status"] == "failed", failed
    assert failed["error"]["data"] == {"error": "insufficient_scope", "scope": "notes:write"}, failed
    assert not Path(f"{markers['narrowed']}.runs").exists()
