"""``runserver`` comes back once a broken ``mcp.py`` is fixed: the autoreloader watches every app's ``mcp.py``,
including one whose import failed at startup (Django watches only the modules that imported)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.servers import ROOT, free_port, migrate_database, server_env

pytestmark = pytest.mark.own_config  # SQLite; the reloader does not depend on the database

#: The error is raised inside the package (its last frame is django_mcp's, not this file's): what Django's
#: reloader then watches is that frame's file, not the app's mcp.py.
BROKEN = """from django.contrib.auth.models import Group

from django_mcp import ModelResource, site


class GroupResource(ModelResource):
    model = Group
    fields = ["name", "broken_on_purpose"]


site.register(GroupResource)
"""
FIXED = '''from django_mcp import site


@site.tool(annotations={"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False})
def fixed_tool() -> str:
    """Proof that the fixed module was loaded."""
    return "fixed"
'''
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = "application/json, text/event-stream"


def _tools(url: str) -> list[str]:
    init = httpx.post(url, json=INIT, headers={"accept": ACCEPT}, timeout=10)
    init.raise_for_status()
    sid = init.headers["mcp-session-id"]
    headers = {"accept": ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
    httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers, timeout=10)
    listed = httpx.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers, timeout=10)
    return [t["name"] for t in listed.json()["result"]["tools"]]


def test_fixing_a_broken_mcp_module_restarts_runserver(tmp_path: Path) -> None:
    app = tmp_path / "brokenapp"
    app.mkdir()
    (app / "__init__.py").write_text("")
    (app / "mcp.py").write_text(BROKEN)
    (tmp_path / "reload_settings.py").write_text(
        'from tests.settings import *  # noqa: F403\n\nINSTALLED_APPS = [*INSTALLED_APPS, "brokenapp"]  # noqa: F405\n'
        "DEBUG = True\n"
    )
    env = server_env(tmp_path, db="sqlite")
    migrate_database(env)  # the test settings' tables; brokenapp has no models
    env = {**env, "DJANGO_SETTINGS_MODULE": "reload_settings", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    port = free_port()
    log_path = tmp_path / "runserver.log"
    log = log_path.open("w")
    runserver = subprocess.Popen(
        [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}"],
        env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp/"
    try:
        deadline = time.monotonic() + 60
        while "broken_on_purpose" not in log_path.read_text() and time.monotonic() < deadline:
            assert runserver.poll() is None, log_path.read_text()
            time.sleep(0.2)
        assert "broken_on_purpose" in log_path.read_text()
        time.sleep(1.5)  # the reloader's first scan records the broken file's time
        (app / "mcp.py").write_text(FIXED)
        deadline = time.monotonic() + 60
        tools: list[str] = []
        while time.monotonic() < deadline:
            assert runserver.poll() is None, log_path.read_text()
            try:
                tools = _tools(url)
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        assert "fixed_tool" in tools, log_path.read_text()[-3000:]
    finally:
        os.killpg(runserver.pid, signal.SIGTERM)  # the session this test started: runserver and its child
        runserver.wait(30)
        log.close()
