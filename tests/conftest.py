"""Shared fixtures: real daphne servers on loopback (``tests/support/servers.py``), real PostgreSQL and Redis.

``mcp_server`` runs ``tests.settings.asgi`` in a daphne subprocess with a database of its own (a fresh SQLite
file, or PostgreSQL with ``MCP_TEST_DB=postgres``) and the channel layer picked by ``MCP_TEST_LAYER``.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.seeds import USERS_SETUP
from tests.support.servers import (
    LiveServer,
    _reachable,
    _run_id,
    _shared_dir,
    _template_prefix,
    need_service,
    server_env,
    start_server,
)

warnings.filterwarnings("ignore", module="mcp")

# The mcp_client fixtures (also registered by the installed pytest11 entry point of the same name).
pytest_plugins = ["django_mcp.pytest_plugin"]


@pytest.fixture
def postgres() -> None:
    need_service("PostgreSQL", 5432)


@pytest.fixture
def redis() -> None:
    need_service("Redis", 6379)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (not an xdist worker) drops this run's template databases and shared copies (only this run's:
    another pytest run on the same PostgreSQL may be using its own)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    shutil.rmtree(_shared_dir(), ignore_errors=True)
    if not _reachable(5432):
        return
    import psycopg

    try:
        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
            pattern = (_template_prefix() + _run_id() + "_").replace("_", r"\_") + "%"  # this run's only
            rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [pattern]).fetchall()
            for (template,) in rows:
                conn.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')  # type: ignore[arg-type]
    except psycopg.Error:
        pass


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


@pytest.fixture(scope="session")
def users_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``tests.settings.asgi_users`` (TEST ONLY ``X-Test-User`` header): alice is staff with every drfapp
    permission, bob is a plain user, no header is anonymous."""
    tmp = tmp_path_factory.mktemp("users")
    server = start_server(server_env(tmp), tmp / "daphne.log", app="tests.settings.asgi_users:application")
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
