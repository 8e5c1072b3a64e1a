"""Live servers for the tests: real daphne (and task worker) processes on loopback, each with a database of its own.

``start_server`` runs an ASGI application (``tests.settings.asgi`` by default) in a daphne subprocess; ``server_env``
gives it a fresh SQLite file, or PostgreSQL with ``MCP_TEST_DB=postgres``, and the channel layer picked by
``MCP_TEST_LAYER``. Where PostgreSQL or Redis is absent the tests that need them skip, except under ``CI=true``,
where that fails. The fixtures that start the shared ones are in ``tests/conftest.py``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: What precedes each answer of tests/support/manage_worker.py on its stdout (its MARKER).
MANAGE_REPLY = "\x00mcp-manage-reply\x00"


class ManageFailed(subprocess.CalledProcessError):
    """A ``LiveServer.manage`` command that failed, its stderr in the message (a test's failure shows why)."""

    def __str__(self) -> str:
        return f"{super().__str__()}\n{str(self.stderr or '')[-4000:]}"


IN_CI = os.environ.get("CI", "").lower() == "true"

# One id per pytest run: set by the controller at import, before xdist starts its workers (they inherit it).
os.environ.setdefault("MCP_TEST_RUN", uuid.uuid4().hex[:12])

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Servers of parallel workers share the Redis on 6379: each worker gets keys of its own (tests/settings/).
    os.environ.setdefault("MCP_REDIS_PREFIX", "asgi-" + os.environ["PYTEST_XDIST_WORKER"])


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


def log_problem(text: str, *needles: str) -> str:
    """The log around the first of ``needles`` found ("" when none is): what a failing assert should show.

    A worker's log ends with its shutdown lines: the last few thousand characters hid the traceback.
    """
    found = [i for i in (text.find(n) for n in needles) if i >= 0]
    if not found:
        return ""
    at = min(found)
    return f"...{text[max(0, at - 1500) : at + 3500]}..."


def need_service(name: str, port: int) -> None:
    """Skip (or fail under CI=true) when a local service is not running."""
    if _reachable(port):
        return
    message = f"{name} is not running on 127.0.0.1:{port}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: a skip would hide untested code)")
    pytest.skip(message)


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

    runner: Any = None  # the manage_worker process, started on first use

    def manage(self, *args: str, input: str | None = None) -> str:
        """``manage.py <args>`` on this server's project and database: its stdout (``ManageFailed`` if it fails).

        Run by one long-lived ``tests/support/manage_worker.py`` per server (a process start costs ~2.5 s of CPU);
        a command fed ``input``, or ``MCP_TEST_MANAGE_PROCESS=1``, gets a process of its own as before.
        """
        cmd = [sys.executable, "-m", "django", *args]
        if input is not None or os.environ.get("MCP_TEST_MANAGE_PROCESS") == "1":
            env = {**self.env, "MCP_TEST_SETUP": "1"} if args[:1] == ("shell",) else self.env
            out = subprocess.run(cmd, env=env, cwd=self.cwd, input=input, capture_output=True, text=True, timeout=60)
            if out.returncode:
                raise ManageFailed(out.returncode, cmd, out.stdout, out.stderr)
            return out.stdout
        if self.runner is None or self.runner.poll() is not None:
            self.runner = subprocess.Popen(
                [sys.executable, "-u", str(ROOT / "tests" / "support" / "manage_worker.py")],
                env=self.env,
                cwd=self.cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        assert self.runner.stdin is not None and self.runner.stdout is not None
        self.runner.stdin.write(json.dumps({"args": list(args)}) + "\n")
        self.runner.stdin.flush()
        for line in self.runner.stdout:
            if line.startswith(MANAGE_REPLY):
                reply = json.loads(line[len(MANAGE_REPLY) :])
                break
        else:
            raise RuntimeError(f"manage_worker exited running {args}")
        if reply["returncode"]:
            raise ManageFailed(reply["returncode"], cmd, reply["stdout"], reply["stderr"])
        return str(reply["stdout"])

    def stop(self) -> None:
        if self.runner is not None and self.runner.poll() is None:
            self.runner.stdin.close()  # type: ignore[union-attr]  # it exits at the end of its input
            try:
                self.runner.wait(10)
            except subprocess.TimeoutExpired:
                self.runner.kill()
        stop_process(self.process)


@contextlib.contextmanager
def served_cleanly(log: Path) -> Iterator[None]:
    """Fail if the server writing ``log`` answered 500 or logged a traceback while the block ran."""
    start = log.stat().st_size
    yield
    with log.open("rb") as f:
        f.seek(start)
        text = f.read().decode(errors="replace")
    assert " 500 " not in text and "Traceback" not in text, text


def clear_cache(alias: str = "default") -> None:
    """Empty a cache of this test's keys. On Redis only the keys under its ``KEY_PREFIX``: ``cache.clear()``
    is ``FLUSHDB``, which would take every xdist worker's rate counters and stream events with it."""
    from django.core.cache import caches

    cache = caches[alias]
    if type(cache).__module__ != "django.core.cache.backends.redis":
        cache.clear()
        return
    assert cache.key_prefix, "a shared Redis database: give the cache a KEY_PREFIX of its own"
    client = cache._cache.get_client(write=True)
    keys = list(client.scan_iter(match=cache.make_key("*"), count=1000))
    if keys:
        client.delete(*keys)


def stop_process(process: subprocess.Popen[Any], grace: float = 10) -> None:
    """End a process this test started: SIGTERM, then SIGKILL after ``grace`` seconds, and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _pg_prefix() -> str:
    """This run's database names: ``MCP_PG_TEST_NAME``, plus the pytest-xdist worker when there is one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return os.environ.get("MCP_PG_TEST_NAME", "test_django_mcp") + (f"_{worker}" if worker else "")


def fresh_pg_database(suffix: str) -> str:
    """A new, empty PostgreSQL database for one live server (never the shared ``test`` one).

    Named after this run's ``MCP_PG_TEST_NAME`` (and xdist worker) and ``suffix``, so reruns
    reuse (drop and recreate) the same few names instead of piling up databases.
    """
    need_service("PostgreSQL", 5432)
    name = _pg_prefix() + suffix
    _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')
    return name


def drop_pg_database(name: str) -> None:
    """Drop a database ``fresh_pg_database`` made (a later run would drop and recreate it anyway)."""
    _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pg_migrated(name: str) -> bool:
    """Whether database ``name`` exists and has been migrated."""
    import psycopg

    try:
        with psycopg.connect(f"host=127.0.0.1 user=postgres dbname={name}") as conn:
            return conn.execute("SELECT to_regclass('django_migrations')").fetchone() not in (None, (None,))
    except psycopg.OperationalError:  # no such database
        return False


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


#: The environment variables (besides ``DJANGO_*``) that change what ``migrate`` makes: the settings' database and
#: ``INSTALLED_APPS``. The others (rates, timeouts, intervals...) do not, so servers differing only in them share one
#: migrated copy (a migration costs ~8 s of CPU; keying on every variable made 40 of them a pass). A settings module
#: whose apps or database depend on another variable must add it here.
SCHEMA_VARS = frozenset({"MCP_TEST_DB", "MCP_PG_PORT", "MCP_PG_USER", "MCP_DEPLOY", "MCP_DEPLOY_DB"})


def migrate_database(env: dict[str, str], cwd: Path = ROOT) -> None:
    """``manage.py migrate`` for a live server, done once per settings and run: later servers get a copy.

    Migrating takes ~8 s of CPU; most servers of a run share their settings. The copies are shared by
    the run's xdist workers (under a file lock: one migrates, the others wait). SQLite: a copy of
    the migrated file, made only where the migration wrote the ``MCP_SQLITE`` file itself and the
    server's own file does not exist yet. PostgreSQL on the shared server (5432): the first
    migration goes to a template database of its own, and each server's database is created
    from it (a file copy inside PostgreSQL, well under a second). Anything else migrates as usual.
    """
    key = (
        str(cwd),
        *sorted(
            f"{k}={v}"
            for k, v in env.items()
            if k in SCHEMA_VARS or (k.startswith("DJANGO_") and k != "DJANGO_DB_PATH")
        ),
    )
    digest = hashlib.sha256("\0".join(key).encode()).hexdigest()[:12]
    if env.get("MCP_TEST_DB") == "postgres" and env.get("MCP_PG_PORT", "5432") == "5432" and env.get("MCP_PG_NAME"):
        _migrate_pg_from_template(env, cwd, digest)
        return
    target = Path(env["MCP_SQLITE"]) if env.get("MCP_TEST_DB") == "sqlite" and env.get("MCP_SQLITE") else None
    if target is None or target.exists():
        _migrate(env, cwd)
        return
    template = _shared_dir() / f"{digest}.sqlite3"
    with _locked(digest):  # one xdist worker migrates; the others wait and copy
        if template.exists():
            shutil.copyfile(template, target)
            return
        _migrate(env, cwd)
        if target.exists():  # the settings wrote the MCP_SQLITE file (the example project's do not)
            shutil.copyfile(target, template.with_suffix(".part"))
            template.with_suffix(".part").rename(template)


def _run_id() -> str:
    """The same for every xdist worker of one pytest run (the controller sets it before they start)."""
    return os.environ["MCP_TEST_RUN"]


def _shared_dir() -> Path:
    """Migrated copies shared by this run's workers; the controller removes it at the end (pytest_sessionfinish)."""
    path = Path(tempfile.gettempdir()) / f"mcp-migrated-{_run_id()}"
    path.mkdir(exist_ok=True)
    return path


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    with (_shared_dir() / f"{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _migrate(env: dict[str, str], cwd: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput", "-v0", "--skip-checks"],
        env=env,
        cwd=cwd,
        check=True,
        timeout=120,
    )


def _template_prefix() -> str:
    return os.environ.get("MCP_PG_TEST_NAME", "test_django_mcp") + "_tpl_"


def _migrate_pg_from_template(env: dict[str, str], cwd: Path, digest: str) -> None:
    name = env["MCP_PG_NAME"]
    if _pg_migrated(name):  # a second server on the same database: never wipe what the first one holds
        _migrate(env, cwd)
        return
    template = f"{_template_prefix()}{_run_id()}_{digest}"
    with _locked(digest):  # one worker migrates the template; clones wait for it, and never run beside it
        if not _pg_migrated(template):
            _pg_admin(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)', f'CREATE DATABASE "{template}"')
            _migrate({**env, "MCP_PG_NAME": template}, cwd)
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}" TEMPLATE "{template}"')


def start_server(
    env: dict[str, str],
    log: Path,
    migrate: bool = True,
    app: str = "tests.settings.asgi:application",
    cwd: Path = ROOT,
    port: int | None = None,
) -> LiveServer:
    """daphne serving ``app`` on loopback, on ``port`` (free, chosen here unless the settings must name it)."""
    if env["MCP_TEST_DB"] == "postgres":
        need_service("PostgreSQL", 5432)
    if env["MCP_TEST_LAYER"] == "redis":
        need_service("Redis", 6379)
    if migrate:
        migrate_database(env, cwd)
    port = port or free_port()
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
