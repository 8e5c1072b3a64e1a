"""``manage.py check --deploy``: what works in development and hurts in production (``django_mcp.W020``-``W026``).

Each warning in process, for the settings that raise it and the ones that must not; then the real
command, in a subprocess, on the test project as a deployment sets it (tests/settings/settings_deploy.py): the
development defaults raise each warning, the deployment guide's settings raise none, and none of
them is raised without ``--deploy`` (nor ``W026`` without ``--database``).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from django_mcp.checks import TASK_WORKER_SILENCE, check_deployment, check_task_worker
from tests.support.guide import guide_settings
from tests.support.servers import ROOT, server_env

TASKS = "django.tasks" if importlib.util.find_spec("django.tasks") else "django_tasks"
IMMEDIATE = f"{TASKS}.backends.immediate.ImmediateBackend"
DUMMY = f"{TASKS}.backends.dummy.DummyBackend"
DATABASE_BACKEND = "django_tasks_db.DatabaseBackend"
REDIS_LAYER = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer"}}
MEMORY_LAYER = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
REDIS_CACHE = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x/1"}}
POSTGRES = {"ENGINE": "django.db.backends.postgresql", "NAME": "x", "CONN_MAX_AGE": 0}
GUIDE = guide_settings()
#: The settings of a deployment that follows docs/deployment.md (read from the page): no warning.
GOOD: dict[str, Any] = {
    "DEBUG": False,
    "ALLOWED_HOSTS": ["mcp.example.com"],
    "DJANGO_MCP": GUIDE["DJANGO_MCP"],
    "CHANNEL_LAYERS": GUIDE["CHANNEL_LAYERS"],
    "CACHES": GUIDE["CACHES"],
    "DATABASES": {"default": {**GUIDE["DATABASES"]["default"], "NAME": "x"}},
    "TASKS": {"default": {"BACKEND": DATABASE_BACKEND}},
}


def deploy_ids(**overrides: Any) -> set[str]:
    with override_settings(**{**GOOD, **overrides}):
        return {w.id for w in check_deployment()}


def test_the_guides_settings_raise_nothing() -> None:
    assert deploy_ids() == set()


def test_w020_in_memory_channel_layer() -> None:
    assert deploy_ids(CHANNEL_LAYERS=MEMORY_LAYER) == {"django_mcp.W020"}
    # WSGI mode holds no stream and sends nothing across requests: no layer needed.
    assert deploy_ids(CHANNEL_LAYERS=MEMORY_LAYER, ROOT_URLCONF="tests.settings.urls_wsgi") == set()


def test_w021_sqlite_with_task_tools() -> None:
    sqlite = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}}
    with override_settings(**{**GOOD, "DATABASES": sqlite}):
        (warning,) = check_deployment()
    assert warning.id == "django_mcp.W021" and "database is locked" in warning.hint
    assert "runs as a task" in warning.msg  # the test project has task tools (tests/testapp/mcp.py)


def test_w022_a_connection_per_sync_tool_call() -> None:
    assert deploy_ids(DATABASES={"default": POSTGRES}) == {"django_mcp.W022"}
    assert deploy_ids(DATABASES={"default": {**POSTGRES, "OPTIONS": {"connect_timeout": 5}}}) == {"django_mcp.W022"}
    assert deploy_ids(DATABASES={"default": {**POSTGRES, "CONN_MAX_AGE": 60}}) == set()  # persistent: kept per thread
    assert deploy_ids(DATABASES={"default": {**POSTGRES, "CONN_MAX_AGE": None}}) == set()  # persistent, unlimited


def test_w023_development_auth_in_a_deployment() -> None:
    none = {**GOOD["DJANGO_MCP"], "AUTH": "none"}
    assert deploy_ids(DJANGO_MCP=none) == {"django_mcp.W023"}  # DEBUG off (also E009, a non-deploy error)
    assert deploy_ids(DJANGO_MCP=none, DEBUG=True) == {"django_mcp.W023"}  # a public host
    with override_settings(**{**GOOD, "DJANGO_MCP": none, "DEBUG": True, "ALLOWED_HOSTS": ["*"]}):
        (warning,) = check_deployment()
    assert "ALLOWED_HOSTS names '*'" in warning.msg
    loopback = ["localhost", "127.0.0.1", "[::1]"]
    assert deploy_ids(DJANGO_MCP=none, DEBUG=True, ALLOWED_HOSTS=loopback) == set()  # development on loopback


def test_w032_the_browsable_endpoint_left_on() -> None:
    on = {**GOOD["DJANGO_MCP"], "BROWSABLE_ENDPOINT": "staff"}
    assert deploy_ids(DJANGO_MCP=on) == {"django_mcp.W032"}
    assert deploy_ids(DJANGO_MCP={**on, "BROWSABLE_ENDPOINT": "superuser"}) == {"django_mcp.W032"}
    assert deploy_ids(DJANGO_MCP=on, DEBUG=True) == set()  # a development machine
    assert GOOD["DJANGO_MCP"]["BROWSABLE_ENDPOINT"] is False  # what the guide says


def test_w280_mcp_apps_without_public_url_and_w281_public_url_over_http() -> None:
    """A project whose server has MCP Apps (tests.uiapp, mounted by its ASGI application) and no ``PUBLIC_URL``."""
    apps = {"ASGI_APPLICATION": "tests.uiapp.asgi.application"}
    unset = {k: v for k, v in GOOD["DJANGO_MCP"].items() if k != "PUBLIC_URL"}
    with override_settings(**{**GOOD, **apps, "DJANGO_MCP": unset}):
        (warning,) = check_deployment()
    assert warning.id == "django_mcp.W300" and "get_book" in warning.msg and "240 KB" in warning.msg
    assert deploy_ids(**apps, DJANGO_MCP={**unset, "PUBLIC_URL": None}) == {"django_mcp.W300"}
    assert deploy_ids(**apps) == set()
    assert deploy_ids(DJANGO_MCP=unset) == set()  # no app in the test project's own site: nothing to inline
    plain = {**GOOD["DJANGO_MCP"], "PUBLIC_URL": "http://mcp.example.com"}
    assert deploy_ids(**apps, DJANGO_MCP=plain) == {"django_mcp.W301"}  # an https host blocks it (mixed content)
    assert deploy_ids(**apps, DJANGO_MCP={**plain, "PUBLIC_URL": "http://127.0.0.1:8000"}) == set()
    assert deploy_ids(**apps, DJANGO_MCP={**plain, "PUBLIC_URL": "mcp.example.com"}) == set()  # E300's, not these
    assert GOOD["DJANGO_MCP"]["PUBLIC_URL"] == "https://mcp.example.com"  # what the guide says


def test_w024_an_event_store_other_workers_cannot_read() -> None:
    locmem = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    dummy = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    assert deploy_ids(CACHES=locmem) == {"django_mcp.W024"}
    with override_settings(**{**GOOD, "CACHES": dummy}):
        (warning,) = check_deployment()
    assert warning.id == "django_mcp.W024" and "keeps nothing" in warning.msg
    elsewhere = {**REDIS_CACHE, "events": locmem["default"]}
    assert deploy_ids(CACHES=elsewhere, DJANGO_MCP={**GOOD["DJANGO_MCP"], "EVENT_STORE_CACHE": "events"}) == {
        "django_mcp.W024"
    }
    assert deploy_ids(CACHES=locmem, ROOT_URLCONF="tests.settings.urls_wsgi") == set()  # WSGI mode resumes nothing


def test_w025_task_tools_on_a_backend_without_worker() -> None:
    for backend in (IMMEDIATE, DUMMY):
        assert deploy_ids(TASKS={"default": {"BACKEND": backend}}) == {"django_mcp.W025"}, backend


def test_the_deploy_checks_leave_broken_settings_to_the_other_checks() -> None:
    assert deploy_ids(DJANGO_MCP=["nope"]) == set()  # E001
    assert (
        deploy_ids(DJANGO_MCP={**GOOD["DJANGO_MCP"], "CHANNEL_LAYER": 5}, CHANNEL_LAYERS=MEMORY_LAYER) == set()
    )  # E115


# -- W026: tasks waiting and no worker (a database check) ---------------------------------------------------


def _queue(age: float, status: str = "READY", started: float | None = None) -> None:
    from django_tasks_db.models import DBTaskResult

    now = timezone.now()
    DBTaskResult.objects.create(
        task_path="tests.testapp.mcp.nothing",
        args_kwargs={"args": [], "kwargs": {}},
        backend_name="default",
        queue_name="default",
        run_after=now - timedelta(seconds=age),
        status=status,
        started_at=None if started is None else now - timedelta(seconds=started),
    )


@pytest.mark.django_db
def test_w026_tasks_waiting_and_no_worker() -> None:
    with override_settings(TASKS={"default": {"BACKEND": DATABASE_BACKEND}}):
        assert check_task_worker(databases=["default"]) == []  # an empty queue says nothing
        _queue(age=TASK_WORKER_SILENCE / 2)
        assert check_task_worker(databases=["default"]) == []  # not waiting long yet
        _queue(age=TASK_WORKER_SILENCE * 2)
        (warning,) = check_task_worker(databases=["default"])
        assert warning.id == "django_mcp.W026" and "1 task(s) have waited" in warning.msg
        assert "db_worker" in warning.hint
        assert check_task_worker(databases=None) == []  # a database check: only with --database
        assert check_task_worker(databases=["other"]) == []
        _queue(age=TASK_WORKER_SILENCE * 3, status="SUCCESSFUL", started=5)  # a worker took one 5 s ago
        assert check_task_worker(databases=["default"]) == []
    with override_settings(TASKS={"default": {"BACKEND": IMMEDIATE}}):
        assert check_task_worker(databases=["default"]) == []  # W025's case


# -- the real command ------------------------------------------------------------------------------------------


def manage_check(tmp_path: Path, *args: str, **env: str) -> set[str]:
    """The ``django_mcp.W02x`` ids ``manage.py check`` reports for tests/settings/settings_deploy.py."""
    environ = server_env(tmp_path, db="sqlite", settings="tests.settings.settings_deploy", **env)
    out = subprocess.run(
        [sys.executable, "-m", "django", "check", *args],
        env=environ,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in out.stderr, out.stderr
    return set(re.findall(r"\((django_mcp\.W0[23]\d)\)", out.stdout + out.stderr))


@pytest.mark.own_config  # SQLite picked here (server_env db="sqlite"): pg-redis would run the same
def test_check_deploy_warns_about_development_settings(tmp_path: Path) -> None:
    found = manage_check(tmp_path, "--deploy", MCP_DEPLOY="development")
    expected = {"django_mcp.W020", "django_mcp.W021", "django_mcp.W023", "django_mcp.W024", "django_mcp.W025",
                "django_mcp.W032"}  # fmt: skip
    assert found == expected
    assert manage_check(tmp_path, MCP_DEPLOY="development") == set()  # only with --deploy


@pytest.mark.own_config  # SQLite picked here (server_env db="sqlite"): pg-redis would run the same
def test_check_deploy_is_quiet_for_the_guides_settings(tmp_path: Path) -> None:
    assert manage_check(tmp_path, "--deploy", MCP_DEPLOY="guide") == set()
    without_pool = manage_check(tmp_path, "--deploy", MCP_DEPLOY="guide", MCP_DEPLOY_NO_POOL="1")
    assert without_pool == {"django_mcp.W022"}


@pytest.mark.own_config  # SQLite picked here (server_env db="sqlite"): pg-redis would run the same
def test_check_deploy_database_finds_a_queue_nobody_works(tmp_path: Path) -> None:
    """``W026`` reads the queue only with ``--database``: SQLite here (so ``W021`` too), a task waiting 10 min."""
    env = {"MCP_DEPLOY": "guide", "MCP_DEPLOY_DB": "sqlite"}
    environ = server_env(tmp_path, db="sqlite", settings="tests.settings.settings_deploy", **env)
    enqueue = (
        "from datetime import timedelta; from django.utils import timezone; "
        "from django_tasks_db.models import DBTaskResult; "
        "DBTaskResult.objects.create(task_path='x.y', args_kwargs={'args': [], 'kwargs': {}}, backend_name='default', "
        "queue_name='default', run_after=timezone.now() - timedelta(minutes=10))"
    )
    for command in (["migrate", "--noinput", "-v0"], ["shell", "-c", enqueue]):
        subprocess.run([sys.executable, "-m", "django", *command], env=environ, cwd=ROOT, check=True, timeout=120)
    assert manage_check(tmp_path, "--deploy", **env) == {"django_mcp.W021"}
    assert manage_check(tmp_path, "--deploy", "--database", "default", **env) == {"django_mcp.W021", "django_mcp.W026"}
