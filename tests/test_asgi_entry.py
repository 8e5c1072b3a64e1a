"""A project that ships no ``asgi.py``: daphne and uvicorn serve ``django_mcp.asgi:application`` directly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.servers import ROOT, free_port, migrate_database, server_env, spawn_server, start_server

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.mark.parametrize("runner", ["daphne", "uvicorn"])
def test_the_package_s_own_asgi_entry_serves_the_project(tmp_path: Path, runner: str) -> None:
    env = server_env(tmp_path)
    if runner == "daphne":
        server = start_server(env, tmp_path / "server.log", app="django_mcp.asgi:application")
    else:
        migrate_database(env)
        port = free_port()
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "django_mcp.asgi:application",
        ]
        server = spawn_server(command, env, tmp_path / "server.log", port, "uvicorn")
    try:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        r = httpx.post(server.url, json=INIT, headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["result"]["serverInfo"]["name"]
        # The project's own URLs fall through to Django as with the project's asgi.py.
        assert httpx.get(f"{server.base}/no-such-page/", timeout=30).status_code == 404
    finally:
        server.stop()
    assert "Traceback" not in server.log.read_text(errors="replace")


def test_importing_the_module_sets_nothing_up() -> None:
    """Only ``application`` builds (and sets Django up); importing the module, or another name, does not."""
    script = (
        "import django.apps, django_mcp.asgi as m\n"
        "assert not django.apps.apps.ready\n"
        "try:\n    m.no_such_name\nexcept AttributeError as e:\n    print(e)\n"
        "assert not django.apps.apps.ready\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "has no attribute 'no_such_name'" in run.stdout
