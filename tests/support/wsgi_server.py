"""Live servers for WSGI mode: gunicorn sync workers, or uvicorn serving Django's own ASGI handler.

Like ``tests.support.servers.start_server`` (daphne), with the same environment and ``LiveServer``;
the endpoint is ``django_mcp.transports.wsgi.mcp_view`` routed by the project's URLconf, no Channels.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.servers import LiveServer, free_port, migrate_database, spawn_server

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
    return spawn_server(command, env, log, port, Path(command[0]).name)
