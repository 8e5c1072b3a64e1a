"""Live servers for WSGI mode: gunicorn sync workers, or uvicorn serving Django's own ASGI handler.

Like ``tests.conftest.start_server`` (daphne), with the same environment and ``LiveServer``;
the endpoint is ``django_mcp.views.mcp_view`` routed by the project's URLconf, no Channels.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, LiveServer, _reachable, free_port, migrate_database

GUNICORN = Path(sys.executable).parent / "gunicorn"


def start_wsgi_server(
    env: dict[str, str],
    log: Path,
    app: str = "tests.conformance.wsgi:application",
    workers: int = 2,
    migrate: bool = True,
    asgi: bool = False,
) -> LiveServer:
    """gunicorn with ``workers`` sync workers on a free loopback port (uvicorn when ``asgi``)."""
    if migrate:
        migrate_database(env)
    port = free_port()
    if asgi:
        command = [sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port), "--no-access-log", app]
    else:
        command = [str(GUNICORN), "-w", str(workers), "-k", "sync", "-b", f"127.0.0.1:{port}", "--timeout", "60", app]
    handle = log.open("wb")
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{command[0]} exited early:\n{log.read_text()}")
        if _reachable(port):
            break
        time.sleep(0.1)
    else:
        process.kill()
        raise RuntimeError(f"{command[0]} did not start:\n{log.read_text()}")
    return LiveServer(f"http://127.0.0.1:{port}/mcp/", port, env, process, log, ROOT)
