"""MCP tasks through real processes: a daphne server and a real ``db_worker`` on one SQLite file.

Both eras over raw HTTP (the official SDK client has no tasks support): the stateless
2026-07-28 tasks extension (``tasks/get``, ``tasks/update``, ``tasks/cancel``) and the
2025-11-25 experimental tasks of a session (``tasks/get``, ``tasks/result``, ``tasks/list``,
``tasks/cancel``). Durability and OAuth isolation are in ``test_tasks_live.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from tests.support.seeds import USERS_SETUP
from tests.support.servers import (
    LiveServer,
    TaskWorker,
    drop_pg_database,
    server_env,
    start_server,
    start_task_worker,
)
from tests.support.task_client import RELATED_TASK, Modern, Session


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``tests.settings.asgi_users`` (``X-Test-User``: alice, bob, or anonymous) with a db_worker on its database."""
    tmp = tmp_path_factory.mktemp("tasks")
    server = start_server(server_env(tmp), tmp / "daphne.log", app="tests.settings.asgi_users:application")
    server.manage("shell", "-c", USERS_SETUP)
    worker = start_task_worker(server.env, tmp / "worker.log")
    server.worker = worker  # type: ignore[attr-defined]
    yield server
    worker.stop()
    server.stop()
    if server.env["MCP_TEST_DB"] == "postgres":
        drop_pg_database(server.env["MCP_PG_NAME"])


@pytest.fixture
def clean_logs(live: LiveServer) -> Iterator[None]:
    """The test fails if the server or the worker logged a 500 or a traceback while it ran."""
    worker: TaskWorker = live.worker  # type: ignore[attr-defined]
    starts = {path: path.stat().st_size for path in (live.log, worker.log)}
    yield
    for path, start in starts.items():
        with path.open("rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        assert " 500 " not in text and "Traceback" not in text, f"{path.name}:\n{text}"


def text(result: dict[str, Any]) -> str:
    return "\n".join(c.get("text", "") for c in result["content"])


def bare(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result without what every result carries (``resultType``, ``_meta`` serverInfo)."""
    return {k: v for k, v in result.items() if k not in ("_meta", "resultType")}


def wait_for(path: Path, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


# -- 2026-07-28: the tasks extension -------------------------------------------------------


def test_create_then_completed_with_inlined_result(live: LiveServer, clean_logs: None) -> None:
    client = Modern(live.url)
    created = client.result("tools/call", {"name": "task_sleep", "arguments": {"seconds": 1}})
    assert created["resultType"] == "task"
    assert set(created) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
    assert created["status"] == "working" and len(created["taskId"]) >= 40
    assert created["ttlMs"] == 3_600_000 and created["pollIntervalMs"] == 1000
    assert "result" not in created and "content" not in created
    working = client.get(created["taskId"])
    assert working["status"] == "working" and "result" not in working
    done = client.wait(created["taskId"])
    assert done["status"] == "completed", done
    assert text(done["result"]) == "slept 1.0"
    assert "pollIntervalMs" not in done


def test_tool_error_completes_with_is_error(live: LiveServer, clean_logs: None) -> None:
    client = Modern(live.url)
    done = client.wait(client.start("task_fail"))
    assert done["status"] == "completed"
    assert done["result"]["isError"] is True and "task_fail failed on purpose" in text(done["result"])


def test_input_during_a_task(live: LiveServer, clean_logs: None) -> None:
    client = Modern(live.url)
    task_id = client.start("task_ask")
    asking = client.wait(task_id, until=("input_required",))
    (request,) = asking["inputRequests"].values()
    assert list(asking["inputRequests"]) == ["name"]
    assert request["method"] == "elicitation/create" and request["params"]["message"] == "What is your name?"
    answer = {"name": {"action": "accept", "content": {"name": "Ada"}}}
    assert bare(client.result("tasks/update", {"taskId": task_id, "inputResponses": answer})) == {}
    done = client.wait(task_id)
    assert done["status"] == "completed" and text(done["result"]) == "Hello, Ada!"


def test_sync_tool_progress_becomes_status_message(live: LiveServer, clean_logs: None) -> None:
    client = Modern(live.url)
    task_id = client.start("task_progress", steps=3, delay=0.5)
    seen: set[str] = set()
    deadline = time.monotonic() + 20
    while (task := client.get(task_id))["status"] == "working":
        seen.add(task.get("statusMessage", ""))
        assert time.monotonic() < deadline, task
        time.sleep(0.1)
    assert task["status"] == "completed" and text(task["result"]) == "3 steps done", task
    assert {"step 1 of 3", "step 2 of 3"} & seen, seen


def test_cancel_stops_the_tool(live: LiveServer, tmp_path: Path, clean_logs: None) -> None:
    client = Modern(live.url)
    marker = tmp_path / "marker"
    task_id = client.start("task_sleep", seconds=2, marker=str(marker))
    wait_for(Path(f"{marker}.runs"))  # the worker runs it
    assert bare(client.result("tasks/cancel", {"taskId": task_id})) == {}
    assert client.get(task_id)["status"] == "cancelled"
    time.sleep(3)  # past the end of the sleep it was cancelled in
    assert not marker.exists(), "the tool ran on after its task was cancelled"
    assert client.get(task_id)["status"] == "cancelled"
    assert bare(client.result("tasks/cancel", {"taskId": task_id})) == {}  # an acknowledgement, also once ended


def test_unknown_task_id(live: LiveServer, clean_logs: None) -> None:
    client = Modern(live.url)
    for method in ("tasks/get", "tasks/cancel"):
        assert client.error(method, {"taskId": "no-such-task"})["code"] == -32602
    error = client.error("tasks/update", {"taskId": "x" * 43, "inputResponses": {}})
    assert error["code"] == -32602


def test_without_the_extension(live: LiveServer, clean_logs: None) -> None:
    tasks = Modern(live.url)
    task_id = tasks.start("task_sleep", seconds=0.1)
    plain = Modern(live.url, caps={})
    for method in ("tasks/get", "tasks/cancel"):
        error = plain.error(method, {"taskId": task_id})
        assert error["code"] == -32021
        assert error["data"]["requiredCapabilities"] == {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    inline = plain.result("tools/call", {"name": "task_sleep", "arguments": {"seconds": 0.1}})
    assert inline.get("resultType", "complete") == "complete" and text(inline) == "slept 0.1"
    assert plain.error("tools/call", {"name": "task_only", "arguments": {}})["code"] == -32021
    done = tasks.wait(task_id)
    assert done["status"] == "completed"
    only = tasks.wait(tasks.start("task_only", text="hi"))
    assert text(only["result"]) == "task only: hi"


# -- 2025-11-25: experimental tasks in a session ---------------------------------------------


def test_handshake_advertises_tasks(live: LiveServer, clean_logs: None) -> None:
    session = Session(live.url)
    assert session.initialize["capabilities"]["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    tools = {t["name"]: t for t in session.result("tools/list")["tools"]}
    assert tools["task_sleep"]["execution"] == {"taskSupport": "optional"}
    assert tools["task_only"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["echo"]


def test_handshake_task_get_result_list(live: LiveServer, clean_logs: None) -> None:
    alice = Session(live.url, headers={"X-Test-User": "alice"})
    bob = Session(live.url, headers={"X-Test-User": "bob"})
    theirs = bob.start("task_sleep", seconds=0.1)
    task = alice.start("task_sleep", ttl=60_000, seconds=1)
    assert task["status"] == "working" and task["ttl"] == 60_000 and task["pollInterval"] == 1000
    assert set(task) >= {"taskId", "createdAt", "lastUpdatedAt"}
    got = alice.result("tasks/get", {"taskId": task["taskId"]})
    assert got["taskId"] == task["taskId"] and got["status"] in ("working", "completed")
    began = time.monotonic()
    result = alice.result("tasks/result", {"taskId": task["taskId"]})
    assert text(result) == "slept 1.0"
    assert result["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
    assert time.monotonic() - began > 0.3 or got["status"] == "completed"  # it blocked until the end
    assert alice.result("tasks/get", {"taskId": task["taskId"]})["status"] == "completed"
    listed = [t["taskId"] for t in alice.result("tasks/list")["tasks"]]
    assert task["taskId"] in listed and theirs["taskId"] not in listed
    assert theirs["taskId"] in [t["taskId"] for t in bob.result("tasks/list")["tasks"]]


def test_handshake_cancel(live: LiveServer, tmp_path: Path, clean_logs: None) -> None:
    session = Session(live.url)
    marker = tmp_path / "marker"
    task = session.start("task_sleep", seconds=2, marker=str(marker))
    cancelled = session.result("tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["taskId"] == task["taskId"] and cancelled["status"] == "cancelled"
    assert session.error("tasks/cancel", {"taskId": task["taskId"]})["code"] == -32602
    assert session.result("tasks/get", {"taskId": task["taskId"]})["status"] == "cancelled"
    done = session.start("task_sleep", seconds=0)
    session.result("tasks/result", {"taskId": done["taskId"]})
    assert session.error("tasks/cancel", {"taskId": done["taskId"]})["code"] == -32602
    time.sleep(2.5)
    assert not marker.exists()


def listed(session: Session) -> list[str]:
    return [t["taskId"] for t in session.result("tasks/list")["tasks"]]


def test_anonymous_tasks_belong_to_their_session(live: LiveServer, clean_logs: None) -> None:
    """AUTH = "none": an anonymous caller's task is its session's; no other anonymous caller reaches it.

    A 2026-07-28 anonymous task has no session to belong to: its unguessable id is the only handle,
    and no session lists or reaches it.
    """
    mine, other = Session(live.url), Session(live.url)
    task_id = mine.start("task_ask")["taskId"]  # waits for its creator's answer: it stays reachable
    assert task_id not in listed(other)
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        assert other.error(method, {"taskId": task_id})["code"] == -32602, method
    stateless = Modern(live.url)
    answer = {"name": {"action": "accept", "content": {"name": "Mallory"}}}
    assert stateless.error("tasks/get", {"taskId": task_id})["code"] == -32602
    assert stateless.error("tasks/update", {"taskId": task_id, "inputResponses": answer})["code"] == -32602
    assert stateless.error("tasks/cancel", {"taskId": task_id})["code"] == -32602
    # Nothing they tried reached it; its own session lists it, and answers and reads it to the end.
    assert task_id in listed(mine)
    assert mine.result("tasks/get", {"taskId": task_id})["status"] in ("working", "input_required")
    result = mine.result(
        "tasks/result", {"taskId": task_id}, answer=lambda _: {"action": "accept", "content": {"name": "Ann"}}
    )
    assert text(result) == "Hello, Ann!"
    # A stateless anonymous task: its id reaches it; no session does.
    loose = stateless.start("task_sleep", seconds=0)
    assert loose not in listed(mine) and loose not in listed(other)
    assert mine.error("tasks/get", {"taskId": loose})["code"] == -32602
    assert stateless.wait(loose)["status"] == "completed"


def test_handshake_required_tool_without_task(live: LiveServer, clean_logs: None) -> None:
    session = Session(live.url)
    assert session.error("tools/call", {"name": "task_only", "arguments": {}})["code"] == -32601
    inline = session.result("tools/call", {"name": "task_sleep", "arguments": {"seconds": 0}})  # optional: inline
    assert text(inline) == "slept 0.0" and "task" not in inline
    assert session.error("tools/call", {"name": "echo", "arguments": {"text": "x"}, "task": {}})["code"] == -32601
    assert session.error("tasks/get", {"taskId": "no-such-task"})["code"] == -32602


def test_handshake_result_relays_elicitation(live: LiveServer, clean_logs: None) -> None:
    session = Session(live.url)
    task = session.start("task_ask")
    asked: list[dict[str, Any]] = []

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {"action": "accept", "content": {"name": "Grace"}}

    result = session.result("tasks/result", {"taskId": task["taskId"]}, answer=answer)
    assert text(result) == "Hello, Grace!"
    (request,) = asked
    assert request["method"] == "elicitation/create"
    assert request["params"]["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}


# -- TTL --------------------------------------------------------------------------------------


def test_ttl_clamped_and_expiry(live: LiveServer, clean_logs: None) -> None:
    session = Session(live.url)
    assert session.start("task_sleep", ttl=10**12, seconds=0)["ttl"] == 86_400_000  # TASK_MAX_TTL_MS
    short = session.start("task_sleep", ttl=1000, seconds=0)
    assert short["ttl"] == 1000
    assert session.result("tasks/get", {"taskId": short["taskId"]})["taskId"] == short["taskId"]
    time.sleep(1.2)
    assert session.error("tasks/get", {"taskId": short["taskId"]})["code"] == -32602
    assert short["taskId"] not in [t["taskId"] for t in session.result("tasks/list")["tasks"]]
    count = f"from django_mcp.models import MCPTask; print(MCPTask.objects.filter(pk={short['taskId']!r}).count())"
    assert live.manage("shell", "-c", count).strip().splitlines()[-1] == "1"  # expired, not yet deleted
    out = live.manage("mcp_cleanup")
    assert "expired tasks deleted: " in out and "expired tasks deleted: 0" not in out, out
    assert live.manage("shell", "-c", count).strip().splitlines()[-1] == "0"


# -- checks -----------------------------------------------------------------------------------


def test_e038_required_task_tool_on_immediate_backend() -> None:
    from django_mcp.checks import check_tasks
    from django_mcp.tasks import framework

    immediate = framework.tasks_module().__name__ + ".backends.immediate.ImmediateBackend"
    with override_settings(TASKS={"default": {"BACKEND": immediate}}):
        found = check_tasks()
    errors = [e for e in found if e.id == "django_mcp.E038"]
    assert errors and "'task_only'" in errors[0].msg, found
    assert not [e for e in check_tasks() if e.id in ("django_mcp.E037", "django_mcp.E038")]


def test_the_frameworks_line_about_a_run_says_how_the_mcp_task_ended(caplog: pytest.LogCaptureFixture) -> None:
    """db_worker's ``state=SUCCESSFUL`` line for a cancelled MCP task names the MCP outcome (jobs.FrameworkNote)."""
    import logging

    from django_mcp.tasks.jobs import framework_note

    path = "django_mcp.tasks.jobs.run_tool_call"
    for name in ("django_tasks", "django.tasks"):  # the backport's logger, Django 6's
        framework_note.remember("fw-1", "task abc: slow was stopped")
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=name):
            logging.getLogger(name).info("Task id=%s path=%s state=%s", "fw-1", path, "SUCCESSFUL")
            logging.getLogger(name).info("Task id=%s path=%s state=%s", "fw-2", "app.tasks.mail", "SUCCESSFUL")
        assert caplog.messages == [
            f"Task id=fw-1 path={path} state=SUCCESSFUL (MCP task abc: slow was stopped)",
            "Task id=fw-2 path=app.tasks.mail state=SUCCESSFUL",  # someone else's task: untouched
        ]
