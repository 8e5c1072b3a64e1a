"""A server started before ``manage.py migrate``: a precise 503 / JSON-RPC error and one clear log line, no 500.

A real daphne on an empty SQLite file. The handshake era's ``initialize`` first touches the package's
sessions table; a stateless 2026-07-28 read of a model object reaches the database elsewhere first (the
kill switches, then the model's table).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import LiveServer, server_env, start_server

#: Its own database, unmigrated on purpose: one configuration proves it; the answer is this package's, on any Django.
pytestmark = [pytest.mark.own_config, pytest.mark.version_independent]

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
SHELF = "django://modelapp/shelf/1"
NOT_MIGRATED = {
    "code": -32603,
    "message": "Service unavailable: the database is not migrated (run manage.py migrate)",
    "data": {"reason": "database_not_migrated", "retryable": False},
}


@pytest.fixture(scope="module")
def unmigrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    tmp = tmp_path_factory.mktemp("unmigrated")
    env = server_env(tmp, db="sqlite", layer="memory")
    assert not Path(env["MCP_SQLITE"]).exists()
    server = start_server(env, tmp / "daphne.log", migrate=False)
    yield server, tmp / "daphne.log"
    server.stop()


def post(server: LiveServer, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(server.url, json=body, headers={**HEADERS, **headers}, timeout=30)


def test_requests_before_migrate_say_so(unmigrated: tuple[LiveServer, Path]) -> None:
    server, log = unmigrated
    for _ in range(3):  # the same answer each time, and one log line for all of them
        got = post(server, INITIALIZE, **{"MCP-Protocol-Version": "2025-06-18"})
        assert got.status_code == 503, got.text
        assert "retry-after" not in got.headers  # retrying will not help until someone migrates
        assert got.json()["error"] == NOT_MIGRATED

        read = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "resources/read",
            "params": {"uri": SHELF, "_meta": META},
        }
        modern = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": SHELF}
        got = post(server, read, **modern)
        body = got.json()
        assert got.status_code in (200, 503) and body["error"] == NOT_MIGRATED, got.text

    text = log.read_text(errors="replace")
    assert "Traceback" not in text and " 500 " not in text, text
    errors = [line for line in text.splitlines() if " ERROR " in line and "run manage.py migrate" in line]
    tables = [line.split("no such table: ")[1].split(")")[0] for line in errors]
    # Six requests, one line for each table found missing (the sessions' first, then whichever the stateless
    # read reached first), never one a request.
    assert "django_mcp_mcpsession" in tables and len(tables) == len(set(tables)) == 2, text
