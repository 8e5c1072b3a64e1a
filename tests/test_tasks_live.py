"""Tasks that outlive processes, and tasks nobody else can reach: real daphne and db_worker processes.

- Two servers on one database: the one that created a task dies (kill -9); the other serves its result.
- The worker dies mid-task (kill -9): once its heartbeat is silent, the task runs again on a new worker.
- The worker is stopped (SIGTERM) mid-task: it hands the task over at once, a new worker completes it.
- Two users and two OAuth clients: only the task's own user through its own client can reach it.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    LiveServer,
    TaskWorker,
    drop_pg_database,
    migrate_database,
    server_env,
    start_server,
    start_task_worker,
    stop_process,
)
from tests.oauth.kit import OAuthServer, start_oauth_server, stop_oauth_server
from tests.task_client import Modern, Session


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
    first.process.wait(10)  # it stops now, not after the 3 s tool
    assert time.monotonic() - began < 2.5, "the worker waited for the tool to end"
    assert not marker.exists()
    assert attempts(env, task_id) == 1
    procs.worker(env, tmp_path / "worker2.log")
    done = client.wait(task_id, timeout=30)
    assert done["status"] == "completed" and text(done["result"]) == "slept 3.0", done
    assert time.monotonic() - began < 30
    assert lines(Path(f"{marker}.runs")) == ["run", "run"] and lines(marker) == ["done"]
    assert attempts(env, task_id) == 2


@pytest.mark.postgres
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
    client.wait(task_id, until=("working",))
    time.sleep(1.5)  # well into its 3 s run
    client.result("tasks/cancel", {"taskId": task_id})
    time.sleep(3.5)
    assert not marker.exists(), "the sync tool ran to its end after its task was cancelled"
    assert client.get(task_id)["status"] == "cancelled"
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

SETTINGS = "tests.tasks_oauth_settings"
MINT = """
import io
from django.core.management import call_command
from oauth2_provider.models import Application
for name in ("first", "second"):
    Application.objects.create(name=name, client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/callback")
for user, app in (("alice", "first"), ("alice", "second"), ("bob", "first")):
    out = io.StringIO()
    call_command("mcp_token", user=user, scope=["mcp"], application=app, resource=[{url!r}], stdout=out)
    print(out.getvalue().strip())
"""


@pytest.fixture
def oauth(tmp_path: Path) -> Iterator[tuple[OAuthServer, list[str]]]:
    server = start_oauth_server(tmp_path, settings=SETTINGS)
    worker = start_task_worker(server.live.env, tmp_path / "worker.log")
    try:
        out = server.live.manage("shell", "-c", MINT.format(url=server.url)).strip().splitlines()
        yield server, out[-3:]
    finally:
        stop_process(worker.process, 5)
        stop_oauth_server(server)


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
