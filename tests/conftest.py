"""Shared fixtures: real daphne servers on loopback, real PostgreSQL and Redis.

``mcp_server`` runs ``tests.asgi`` in a daphne subprocess with a database of its
own (a fresh SQLite file, or PostgreSQL with ``MCP_TEST_DB=postgres``) and the
channel layer picked by ``MCP_TEST_LAYER``. Where PostgreSQL or Redis is absent
the tests that need them skip, except under ``CI=true``, where that fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() == "true"

warnings.filterwarnings("ignore", module="mcp")

# The mcp_client fixtures (also registered by the installed pytest11 entry point of the same name).
pytest_plugins = ["django_mcp.pytest_plugin"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def need_service(name: str, port: int) -> None:
    """Skip (or fail under CI=true) when a local service is not running."""
    if _reachable(port):
        return
    message = f"{name} is not running on 127.0.0.1:{port}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: a skip would hide untested code)")
    pytest.skip(message)


@pytest.fixture
def postgres() -> None:
    need_service("PostgreSQL", 5432)


@pytest.fixture
def redis() -> None:
    need_service("Redis", 6379)


@dataclass
class LiveServer:
    url: str
    port: int
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log: Path
    cwd: Path = ROOT

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str, input: str | None = None) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "django", *args],
            env=self.env,
            cwd=self.cwd,
            input=input,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return out.stdout

    def stop(self) -> None:
        stop_process(self.process)


def stop_process(process: subprocess.Popen[Any], grace: float = 10) -> None:
    """End a process this test started: SIGTERM, then SIGKILL after ``grace`` seconds, and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def fresh_pg_database(suffix: str) -> str:
    """A new, empty PostgreSQL database for one live server (never the shared ``test`` one).

    Named after this run's ``MCP_PG_TEST_NAME`` and ``suffix``, so reruns reuse (drop and
    recreate) the same few names instead of piling up databases.
    """
    need_service("PostgreSQL", 5432)
    name = os.environ.get("MCP_PG_TEST_NAME", "test_django_mcp") + suffix
    _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')
    return name


def drop_pg_database(name: str) -> None:
    """Drop a database ``fresh_pg_database`` made (a later run would drop and recreate it anyway)."""
    _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pg_admin(*statements: str) -> None:
    import psycopg

    with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]  # our own fixed DDL


def server_env(tmp: Path, db: str | None = None, layer: str | None = None, **extra: str) -> dict[str, str]:
    """Environment for a live server; on PostgreSQL each ``tmp`` gets a fresh database of its own."""
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = extra.pop("settings", "tests.settings")
    env["PYTHONPATH"] = str(ROOT)
    env["MCP_TEST_DB"] = db or os.environ.get("MCP_TEST_DB", "sqlite")
    env["MCP_TEST_LAYER"] = layer or os.environ.get("MCP_TEST_LAYER", "memory")
    env["MCP_SQLITE"] = str(tmp / "server.sqlite3")
    if env["MCP_TEST_DB"] == "postgres" and "MCP_PG_NAME" not in extra:
        env["MCP_PG_NAME"] = fresh_pg_database("_" + tmp.name)
    env.update(extra)
    return env


#: Migrated SQLite databases of this test run, by the settings and environment they were made with.
_MIGRATED: dict[tuple[str, ...], Path] = {}


def migrate_database(env: dict[str, str], cwd: Path = ROOT) -> None:
    """``manage.py migrate`` for a live server; on SQLite, a copy of an identical earlier run's result.

    Migrating takes ~5 s a server; most servers of a run share their settings. The copy is made
    only where the migration wrote the ``MCP_SQLITE`` file itself (its settings read it) and the
    server's own file does not exist yet; anything else migrates as usual.
    """
    target = Path(env["MCP_SQLITE"]) if env.get("MCP_TEST_DB") == "sqlite" and env.get("MCP_SQLITE") else None
    key = (
        str(cwd),
        *sorted(f"{k}={v}" for k, v in env.items() if k.startswith(("MCP_", "DJANGO_")) and k != "MCP_SQLITE"),
    )
    template = _MIGRATED.get(key)
    if target is not None and template is not None and not target.exists():
        shutil.copyfile(template, target)
        return
    fresh = target is not None and not target.exists()
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v0"], env=env, cwd=cwd, check=True, timeout=120
    )
    if fresh and target is not None and target.exists():
        template = Path(tempfile.mkdtemp(prefix="mcp-migrated-")) / "db.sqlite3"
        shutil.copyfile(target, template)
        _MIGRATED[key] = template


def start_server(
    env: dict[str, str], log: Path, migrate: bool = True, app: str = "tests.asgi:application", cwd: Path = ROOT
) -> LiveServer:
    if env["MCP_TEST_DB"] == "postgres":
        need_service("PostgreSQL", 5432)
    if env["MCP_TEST_LAYER"] == "redis":
        need_service("Redis", 6379)
    if migrate:
        migrate_database(env, cwd)
    port = free_port()
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), app]
    return spawn_server(command, env, log, port, "daphne", cwd)


def spawn_server(
    command: list[str], env: dict[str, str], log: Path, port: int, name: str, cwd: Path = ROOT
) -> LiveServer:
    """Start a server process on loopback ``port`` and wait (30 s at most) until it answers there."""
    handle = log.open("wb")
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited early:\n{log.read_text()}")
        if _reachable(port):
            return LiveServer(f"http://127.0.0.1:{port}/mcp/", port, env, process, log, cwd)
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{name} did not start:\n{log.read_text()}")


@dataclass
class TaskWorker:
    """A real ``manage.py db_worker`` (django-tasks-db) process running MCP tasks for a live server."""

    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, grace: float = 10) -> None:
        stop_process(self.process, grace)

    def kill(self) -> None:
        """``kill -9``: the worker dies mid-task, as on a lost host."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)


def start_task_worker(env: dict[str, str], log: Path, cwd: Path = ROOT, interval: float = 0.1) -> TaskWorker:
    """Start ``db_worker`` on the live server's database (migrated already: start the server first)."""
    command = [
        sys.executable, "-m", "django", "db_worker",
        "--interval", str(interval), "--no-startup-delay", "--no-reload",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    return TaskWorker(process, log)


@pytest.fixture(scope="session")
def mcp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("live")
    server = start_server(server_env(tmp), tmp / "daphne.log")
    yield server
    server.stop()


@pytest.fixture
def server_log(mcp_server: LiveServer) -> Iterator[Path]:
    """The live server's log; the test fails if it shows a traceback while the test ran."""
    start = mcp_server.log.stat().st_size
    yield mcp_server.log
    with mcp_server.log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    assert " 500 " not in text, text


# -- callers with identities (DRF/view tools, per-user visibility, atomic calls) -------------------------------

USERS_SETUP = """
from django.contrib.auth.models import Permission, User
from tests.drfapp.models import Item
Item.objects.all().delete()
alice, _ = User.objects.update_or_create(username="alice", defaults={"is_staff": True})
alice.user_permissions.set(Permission.objects.filter(content_type__app_label="drfapp"))
bob, _ = User.objects.update_or_create(username="bob", defaults={"is_staff": False})
bob.user_permissions.clear()
for name in ("carol", "dave"):  # the throttle test's own callers (throttles count per user)
    User.objects.update_or_create(username=name)
"""


@pytest.fixture(scope="session")
def users_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``tests.asgi_users`` (TEST ONLY ``X-Test-User`` header): alice is staff with every drfapp
    permission, bob is a plain user, no header is anonymous."""
    tmp = tmp_path_factory.mktemp("users")
    server = start_server(server_env(tmp), tmp / "daphne.log", app="tests.asgi_users:application")
    server.manage("shell", "-c", USERS_SETUP)
    yield server
    server.stop()


@pytest.fixture
def server_log_users(users_server: LiveServer) -> Iterator[None]:
    """Fail the test if ``users_server`` logged a 500 or a traceback while it ran."""
    start = users_server.log.stat().st_size
    yield
    with users_server.log.open("rb") as f:
        f.seek(start)
        log = f.read().decode(errors="replace")
    assert " 500 " not in log and "Traceback" not in log, log
