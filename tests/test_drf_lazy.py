"""DRF tools' schemas are built on first use: Django starts without a query (a database that is down or not yet
migrated included), and what only building finds is reported by ``manage.py check``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: own_config: every process here picks its own SQLite file (an empty or a new one is the point), so pg-redis would
#: run the same thing again.
pytestmark = pytest.mark.own_config

ROOT = Path(__file__).resolve().parent.parent

#: Starts Django with every RuntimeWarning an error ("Accessing the database during app initialization"), counting
#: the queries made while it starts; then reads the tool's schema (which queries) and prints what it saw.
SCRIPT = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("error", RuntimeWarning)
    import django
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    with CaptureQueriesContext(connection) as startup:
        django.setup()
    warnings.resetwarnings()
    from django.core.management import call_command
    from django_mcp import site
    print("startup queries", len(startup.captured_queries))
    if "--migrate" in __import__("sys").argv:
        call_command("migrate", verbosity=0)
        with CaptureQueriesContext(connection) as first:
            schema = site.tools["flagged_item_list"].input_schema
        print("first use queries", len(first.captured_queries))
        print("output", sorted(site.tools["flagged_item_list"].output_schema["properties"]))
    """
)


def _run(tmp_path: Path, *args: str, broken: bool = False) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings.settings_lazy",
        "MCP_SQLITE": str(tmp_path / "db.sqlite3"),  # a new file: no tables
        "MCP_TEST_DB": "sqlite",
        "MCP_LAZY_BROKEN": "1" if broken else "0",
    }
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_django_starts_without_a_query_and_the_schema_is_built_on_first_use(tmp_path: Path) -> None:
    done = _run(tmp_path, "--migrate")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "startup queries 0" in lines
    assert "first use queries 1" in lines  # the viewset's own query, when the schema is first read
    assert "output ['count', 'next', 'previous', 'results']" in lines or "output ['result']" in lines, lines


def test_an_unmigrated_database_does_not_stop_django_starting(tmp_path: Path) -> None:
    """The viewset's table does not exist yet: starting (and ``migrate`` itself) must not need it."""
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "startup queries 0" in done.stdout.splitlines()


def test_check_reports_a_tool_whose_schema_cannot_be_built(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings.settings_lazy",
        "MCP_SQLITE": str(tmp_path / "db.sqlite3"),
        "MCP_TEST_DB": "sqlite",
        "MCP_LAZY_BROKEN": "0",
    }
    # migrate runs the system checks before the tables exist: the viewset's query fails there, and must not
    # stop it (its schema is built on first use).
    django = [sys.executable, "-m", "django"]
    migrate = subprocess.run([*django, "migrate", "-v0"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    env["MCP_LAZY_BROKEN"] = "1"
    check = subprocess.run([*django, "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert check.returncode != 0
    assert "django_mcp.E010" in check.stderr
    assert "Tool 'bodyless_create'" in check.stderr and "has no serializer for its POST body" in check.stderr
    assert "Traceback" not in check.stderr


async def test_a_channels_server_builds_the_schema_on_its_first_tools_list(tmp_path: Path) -> None:
    """Under daphne the first ``tools/list`` runs on the event loop, where Django refuses a query: the build (with
    the viewset's query) runs on a thread of its own, once, and both eras list and call the tool. A tool whose
    schema cannot be built (``manage.py check``'s E010) is left out of the list, not the whole list with it, and a
    call to it answers a tool error."""
    from tests.support.callers import MODES, client
    from tests.support.servers import server_env, start_server

    env = server_env(tmp_path, db="sqlite", settings="tests.settings.settings_lazy", MCP_LAZY_BROKEN="1")
    server = start_server(env, tmp_path / "d.log")
    try:
        for mode in MODES:
            async with client(server.url, mode) as c:
                tools = {t.name: t for t in (await c.list_tools()).tools}
                listed = tools["flagged_item_list"]
                assert listed.output_schema is not None
                assert "bodyless_create" not in tools
                result = await c.call_tool("flagged_item_list", {})
                assert not result.is_error and result.structured_content is not None
                broken = await c.call_tool("bodyless_create", {})
                assert broken.is_error
                assert (
                    broken.content[0].text
                    == "Tool 'bodyless_create' is not available: it is misconfigured on the server."
                )  # type: ignore[union-attr]
    finally:
        server.stop()
    log = server.log.read_text(errors="replace")
    assert "SynchronousOnlyOperation" not in log, log[-3000:]
    # Logged with what is wrong (each time it is tried), and no other traceback.
    assert "Tool 'bodyless_create' is left out" in log and "has no serializer for its POST body" in log, log[-3000:]
    assert log.count("Traceback") == log.count("Tool 'bodyless_create' is left out"), log[-3000:]
