"""The task admin: read-only rows, results and errors only with ``view_mcptask_result``, a cancel action;
and ``mcp_cleanup`` deleting tasks past their TTL.

Django's test client drives the real admin views over real ``MCPTask`` rows.
"""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from django_mcp import Context, MCPServer
from django_mcp.models import MCPTask
from tests.support.factories import make_task

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_mcp_mcptask_changelist")
SECRET_RESULT = "result-only-for-the-result-permission"
SECRET_ERROR = "error-only-for-the-result-permission"


@pytest.fixture
def tasks() -> dict[str, MCPTask]:
    alice = get_user_model().objects.create_user("alice")
    now = timezone.now()
    return {
        "working": make_task(
            user=alice, started=now - timedelta(seconds=80), heartbeat=now, attempts=1, status_message="Page 3 of 9"
        ),
        "completed": make_task(
            MCPTask.COMPLETED,
            user=alice,
            attempts=2,
            result={"content": [{"type": "text", "text": SECRET_RESULT}]},
            finished=now,
        ),
        "failed": make_task(
            MCPTask.FAILED,
            tool="fragile",
            error={"code": -32603, "message": SECRET_ERROR},
            created=now - timedelta(seconds=90),
            finished=now,
            attempts=1,
        ),
        "asking": make_task(
            MCPTask.INPUT_REQUIRED,
            tool="survey",
            user=alice,
            input_requests={"name": {"method": "elicitation/create", "params": {"message": "Your name?"}}},
        ),
    }


def staff_client(username: str, *codenames: str, superuser: bool = False) -> Client:
    User = get_user_model()
    if superuser:
        user = User.objects.create_superuser(username, f"{username}@example.com", "pw-123-xyz")
    else:
        user = User.objects.create_user(username, is_staff=True)
        user.user_permissions.add(
            *Permission.objects.filter(content_type__app_label="django_mcp", codename__in=codenames)
        )
    client = Client()
    client.force_login(user)
    return client


def detail(task: MCPTask) -> str:
    # Quoted as the admin quotes its own links: a task id may hold "_" and then two hex digits, which the
    # admin's unquote() would read as an escape (the page then redirects: no such task).
    return reverse("admin:django_mcp_mcptask_change", args=[quote(task.pk)])


def get(client: Client, url: str) -> str:
    r = client.get(url)
    assert r.status_code == 200, (url, r.status_code)
    return r.content.decode()


def test_changelist_columns_filters_and_search(tasks: dict[str, MCPTask]) -> None:
    boss = staff_client("boss", superuser=True)
    html = get(boss, CHANGELIST)
    for task in tasks.values():
        assert task.pk[:8] + "…" in html
    columns = ("short_id", "tool", "status", "user", "oauth_client", "created", "started", "finished", "duration")
    for column in (*columns, "attempts"):
        assert f'class="sortable column-{column}' in html or f'class="column-{column}' in html, column
    assert "Runs" in html  # the attempts column's heading
    assert "Page 3 of 9" not in html  # the status message is on the detail page
    assert "alice" in html and "client-a" in html
    assert "1 min 30 s" in html  # the failed task: created 90 s before it finished
    # filters
    assert "?status__exact=completed" in html and "?tool=fragile" in html
    assert get(boss, CHANGELIST + "?status__exact=input_required").count('class="action-select"') == 1
    # search: id prefix, tool, username, OAuth client
    assert tasks["failed"].pk[:8] + "…" in get(boss, CHANGELIST + "?q=" + tasks["failed"].pk[:12])
    assert get(boss, CHANGELIST + "?q=survey").count('class="action-select"') == 1
    assert get(boss, CHANGELIST + "?q=alice").count('class="action-select"') == 3
    assert get(boss, CHANGELIST + "?q=client-a").count('class="action-select"') == 4


def test_detail_is_read_only_and_there_is_no_add(tasks: dict[str, MCPTask]) -> None:
    boss = staff_client("boss", superuser=True)
    html = get(boss, detail(tasks["working"]))
    assert "Page 3 of 9" in html and "&quot;year&quot;: 2026" in html
    form = html.split('id="mcptask_form"')[1].split("</form>")[0]
    assert 'name="tool"' not in form and 'name="status"' not in form and "<textarea" not in form
    assert 'name="_save"' not in html
    html = get(boss, detail(tasks["asking"]))
    assert "Your name?" in html
    assert boss.get(reverse("admin:django_mcp_mcptask_add")).status_code == 403
    before = MCPTask.objects.get(pk=tasks["working"].pk)
    boss.post(detail(tasks["working"]), {"status": "completed", "tool": "other"})
    assert MCPTask.objects.get(pk=tasks["working"].pk).status == before.status == MCPTask.WORKING


def test_results_and_errors_need_their_permission(tasks: dict[str, MCPTask]) -> None:
    plain = staff_client("viewer", "view_mcptask")
    allowed = staff_client("auditor", "view_mcptask", "view_mcptask_result")
    boss = staff_client("boss", superuser=True)
    for task, secret in ((tasks["completed"], SECRET_RESULT), (tasks["failed"], SECRET_ERROR)):
        hidden = get(plain, detail(task))
        assert secret not in hidden and "Page 3" not in hidden
        assert task.tool in hidden  # the rest of the page is there
        shown = get(allowed, detail(task))
        assert secret in shown and "Outcome" in shown
        assert "Outcome" not in hidden and "Timings" in hidden
        assert secret in get(boss, detail(task))
    assert SECRET_RESULT not in get(plain, CHANGELIST) and SECRET_ERROR not in get(plain, CHANGELIST)


def test_arguments_and_answers_need_the_permission_and_are_masked_as_in_the_audit_log() -> None:
    """A task's arguments are the caller's data, as its result is: hidden without ``view_mcptask_result``,
    and with it masked as the audit log masks them (``AUDIT_SENSITIVE_KEYS``)."""
    from django_mcp.audit.redaction import SUBSTITUTE

    task = make_task(
        MCPTask.INPUT_REQUIRED,
        arguments={"year": 1999, "api_key": "sk-live-123", "nested": {"password": "hunter2"}},
        answers={"q1": {"action": "accept", "content": {"name": "Ann Secretname"}}},
    )
    plain = get(staff_client("viewer", "view_mcptask"), detail(task))
    assert task.tool in plain and "1999" not in plain and "Secretname" not in plain and "sk-live" not in plain
    allowed = get(staff_client("auditor", "view_mcptask", "view_mcptask_result"), detail(task))
    assert "1999" in allowed and "Secretname" in allowed and SUBSTITUTE in allowed
    assert "sk-live-123" not in allowed and "hunter2" not in allowed


def cancel(client: Client, *rows: MCPTask) -> Any:
    data = {"action": "cancel_tasks", ACTION_CHECKBOX_NAME: [r.pk for r in rows]}
    return client.post(CHANGELIST, data, follow=True)


def test_cancel_action(tasks: dict[str, MCPTask]) -> None:
    boss = staff_client("boss", superuser=True)
    r = cancel(boss, tasks["working"], tasks["completed"], tasks["asking"])
    assert r.status_code == 200
    assert "Cancelled 2 tasks." in r.content.decode()
    working = MCPTask.objects.get(pk=tasks["working"].pk)
    assert working.status == MCPTask.CANCELLED and working.cancel_requested and working.finished is not None
    assert MCPTask.objects.get(pk=tasks["asking"].pk).status == MCPTask.CANCELLED
    completed = MCPTask.objects.get(pk=tasks["completed"].pk)
    assert completed.status == MCPTask.COMPLETED and completed.result == tasks["completed"].result
    assert "Cancelled 0 tasks." in cancel(boss, tasks["completed"]).content.decode()


def test_cancel_action_needs_the_change_permission(tasks: dict[str, MCPTask]) -> None:
    viewer = staff_client("viewer", "view_mcptask", "view_mcptask_result")
    assert "cancel_tasks" not in get(viewer, CHANGELIST)
    cancel(viewer, tasks["working"])
    assert MCPTask.objects.get(pk=tasks["working"].pk).status == MCPTask.WORKING
    operator = staff_client("operator", "view_mcptask", "change_mcptask")
    assert "cancel_tasks" in get(operator, CHANGELIST)
    assert "Cancelled 1 task." in cancel(operator, tasks["working"]).content.decode()
    assert MCPTask.objects.get(pk=tasks["working"].pk).status == MCPTask.CANCELLED
    assert 'name="_save"' not in get(operator, detail(tasks["working"]))


def test_mcp_cleanup_deletes_expired_tasks(tasks: dict[str, MCPTask]) -> None:
    past = timezone.now() - timedelta(seconds=1)
    MCPTask.objects.filter(pk__in=[tasks["completed"].pk, tasks["failed"].pk]).update(expires=past)
    forever = make_task(MCPTask.COMPLETED, expires=None, ttl_ms=None)
    out = StringIO()
    call_command("mcp_cleanup", "--dry-run", stdout=out)
    assert "expired tasks would be deleted: 2" in out.getvalue()
    assert MCPTask.objects.count() == 5
    out = StringIO()
    call_command("mcp_cleanup", stdout=out)
    assert "expired tasks deleted: 2" in out.getvalue()
    assert set(MCPTask.objects.values_list("pk", flat=True)) == {
        tasks["working"].pk,
        tasks["asking"].pk,
        forever.pk,
    }


@pytest.mark.django_db(transaction=True)
def test_progress_message_of_a_task_run_is_its_status_message() -> None:
    """``ctx.report_progress(message=...)`` in a worker's run sets the task's ``statusMessage`` (the watcher
    stores it on its next look, within ``WATCH_INTERVAL``)."""
    from django_mcp.tasks.jobs import execute

    server = MCPServer(name="task-admin-tests")

    @server.tool(task="optional")
    async def halfway(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "Half way")
        await asyncio.sleep(1.2)
        row = await sync_to_async(MCPTask.objects.get)(pk=ctx.task_id)
        return row.status_message

    task = make_task(server="task-admin-tests", tool="halfway", arguments={}, protocol_version="2025-11-25")
    async_to_sync(execute)(task.pk)
    task.refresh_from_db()
    assert task.status == MCPTask.COMPLETED, task.error
    assert task.result["content"][0]["text"] == "Half way"


@pytest.mark.django_db(transaction=True)
def test_a_stopping_worker_stops_its_run() -> None:
    """On the worker's second SIGTERM/Ctrl-C the run stops at once and stores nothing (the task is handed on),
    instead of going on in ``async_to_sync``'s loop thread, which the exiting worker would wait for forever."""
    import threading
    import time

    from django_mcp.tasks import jobs

    server = MCPServer(name="task-admin-tests-stop")

    @server.tool(task="optional")
    async def forever(ctx: Context) -> str:
        await asyncio.sleep(60)
        return "never"

    task = make_task(server="task-admin-tests-stop", tool="forever", arguments={}, protocol_version="2025-11-25")
    run = threading.Thread(target=async_to_sync(jobs.execute), args=(task.pk,))
    run.start()
    deadline = time.monotonic() + 10
    while task.pk not in jobs._running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert task.pk in jobs._running
    jobs._stop(task.pk)
    run.join(5)
    assert not run.is_alive()
    assert task.pk not in jobs._running
    task.refresh_from_db()
    assert task.status == MCPTask.WORKING and task.attempts == 1 and task.result is None


@pytest.mark.django_db(transaction=True)
def test_mcp_cleanup_recovers_tasks_whose_worker_stopped() -> None:
    """A running task whose heartbeat went silent runs again (a new queue entry), or fails after the last run."""
    from django_tasks_db.models import DBTaskResult

    old = timezone.now() - timedelta(minutes=5)
    lost = make_task(started=old, heartbeat=old, attempts=1)
    spent = make_task(started=old, heartbeat=old, attempts=2)  # TASK_MAX_ATTEMPTS (2) runs already
    alive = make_task(started=old, heartbeat=timezone.now(), attempts=1)
    queued = DBTaskResult.objects.count()
    out = io.StringIO()
    call_command("mcp_cleanup", stdout=out)
    assert "tasks whose worker stopped, recovered: 2" in out.getvalue()
    lost.refresh_from_db()
    spent.refresh_from_db()
    alive.refresh_from_db()
    assert lost.status == MCPTask.WORKING and lost.started is None  # waiting for its next run
    assert DBTaskResult.objects.count() == queued + 1
    assert spent.status == MCPTask.FAILED and spent.error["message"] == "The worker running this task stopped"
    assert alive.status == MCPTask.WORKING and alive.started is not None
