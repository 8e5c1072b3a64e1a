"""PostgreSQL connections under load with the database settings of docs/deployment.md.

The example project (example_project/, what users copy; its PostgreSQL settings are the guide's)
runs on a PostgreSQL cluster of the test's own with ``max_connections = 40``, under each server
the guide documents, started with the guide's command: uvicorn, daphne, and gunicorn in WSGI
mode. 600 requests, 16 at a time, half to the project's own DRF API (``GET /api/books/9/``),
half to an MCP sync tool (``book_details``, with an OAuth token), while ``pg_stat_activity`` is
read every 20 ms. Every request must succeed, and the worker must never hold more connections
than its pool's ``max_size``.

Why: under ASGI Django runs each request's sync view in a thread of its own. With the
persistent connections the guide used to recommend (``CONN_MAX_AGE = 60``), every such thread
left a connection behind: the review measured 88-99 connections held and 98 of 909 requests
answered 500 (``FATAL: sorry, too many clients already``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.production.harness import documented_command
from tests.production.private_postgres import PrivatePostgres
from tests.support.servers import ROOT, LiveServer, free_port, log_problem, spawn_server

pytestmark = [pytest.mark.production]

EXAMPLE = ROOT / "example_project"
MAX_CONNECTIONS = 40
#: The pool of the guide (and of example_project/settings.py): the most a worker process may hold.
POOL_MAX = 20
REQUESTS, CONCURRENCY = 600, 16
BOOK = 9
TITLE = "A Study in Scarlet"  # book 9 of the demo data

MINT = """
import io
from django.contrib.auth.models import User
from django.core.management import call_command
from oauth2_provider.models import Application
user, _ = User.objects.get_or_create(username="loadtest")
app, _ = Application.objects.get_or_create(name="load app", defaults=dict(client_type="public",
    authorization_grant_type="authorization-code", redirect_uris="http://127.0.0.1:9/callback"))
out = io.StringIO()
call_command("mcp_token", user="loadtest", application="load app", resource=[{url!r}], stdout=out)
print(out.getvalue().strip())
"""


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A cluster of our own with few connection slots, and the example project migrated onto it, demo data in."""
    pg = PrivatePostgres()
    pg.start(max_connections=MAX_CONNECTIONS)
    try:
        pg.create_database("library")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MCP_"))},
            "DJANGO_SETTINGS_MODULE": "example_project.settings",
            "PYTHONPATH": f"{EXAMPLE}:{ROOT}",
            "DJANGO_PG_NAME": "library",
            "DJANGO_PG_PORT": str(pg.port),
        }
        for command in (["migrate", "--noinput", "-v0"], ["loaddata", "demo", "-v0"]):
            _manage(env, *command)
        env["PG_PORT"] = str(pg.port)
        yield env
    finally:
        pg.destroy()


def _manage(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "django", *args], env=env, cwd=EXAMPLE, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _connections(port: str) -> int:
    with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = 'library'").fetchone()
    return int(row[0]) if row else 0


class Watch:
    """``pg_stat_activity``'s connections to the project's database, every 20 ms, from a connection of its own."""

    def __init__(self, port: str) -> None:
        self.counts: list[int] = []
        self._stop = threading.Event()
        self._conn = psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            row = self._conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = 'library'").fetchone()
            self.counts.append(int(row[0]) if row else 0)
            self._stop.wait(0.02)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(5)
        self._conn.close()
        return max(self.counts)


def _load(server: LiveServer, token: str) -> list[str]:
    """The 600 requests, 16 at once: the DRF view and the MCP tool in turn; what went wrong, if anything."""
    jobs = iter(range(REQUESTS))
    lock = threading.Lock()
    problems: list[str] = []
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
    }
    mcp_headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "book_details",
    }

    def run() -> None:
        with httpx.Client(timeout=60) as client:
            while True:
                with lock:
                    n = next(jobs, None)
                if n is None:
                    return
                try:
                    if n % 2:
                        body = {
                            "jsonrpc": "2.0",
                            "id": n,
                            "method": "tools/call",
                            "params": {"name": "book_details", "arguments": {"book_id": BOOK}, "_meta": meta},
                        }
                        r = client.post(server.url, json=body, headers=mcp_headers)
                        result = r.json().get("result", {}) if r.status_code == 200 else {}
                        ok = bool(result) and not result.get("isError") and TITLE in result["content"][0]["text"]
                    else:
                        r = client.get(f"{server.base}/api/books/{BOOK}/")
                        ok = r.status_code == 200 and r.json()["title"] == TITLE
                    problem = None if ok else f"{r.request.method} {r.status_code} {r.text[:200]}"
                except (httpx.HTTPError, ValueError, KeyError) as exc:
                    problem = repr(exc)
                if problem:
                    with lock:
                        problems.append(problem)

    threads = [threading.Thread(target=run) for _ in range(CONCURRENCY)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return problems


@pytest.mark.parametrize(
    ("program", "app"),
    [
        ("uvicorn", "example_project.asgi:application"),
        ("daphne", "example_project.asgi:application"),
        ("gunicorn", "example_project.wsgi:application"),  # WSGI mode
    ],
)
def test_views_and_mcp_tools_share_a_bounded_pool(
    database: dict[str, str], program: str, app: str, tmp_path: Path
) -> None:
    port = free_port()
    server = spawn_server(
        documented_command(program, app, port), database, tmp_path / "server.log", port, program, EXAMPLE
    )
    try:
        token = _manage(database, "shell", "-c", MINT.format(url=server.url)).strip().splitlines()[-1]
        assert _connections(database["PG_PORT"]) <= POOL_MAX
        watch = Watch(database["PG_PORT"])
        started = time.monotonic()
        problems = _load(server, token)
        took = time.monotonic() - started
        most = watch.stop()
        log = server.log.read_text(errors="replace")
        print(
            f"\n[{program}] {REQUESTS} requests ({CONCURRENCY} at once, DRF view + MCP sync tool) in {took:.1f} s: "
            f"{len(problems)} failed; PostgreSQL connections to the database at most {most} "
            f"(pool max_size {POOL_MAX}, max_connections {MAX_CONNECTIONS})"
        )
        assert problems == [], problems[:5]
        assert most <= POOL_MAX, f"{most} connections: more than the pool's {POOL_MAX}"
        assert not (bad := log_problem(log, "too many clients", "Traceback")), bad
    finally:
        server.stop()


def test_the_example_project_uses_the_guides_database_settings() -> None:
    """What the load test runs is what docs/deployment.md gives: its ```python DATABASES block, read from the page."""
    import re

    from tests.production.harness import DOC

    blocks = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S) if '"pool"' in b]
    assert len(blocks) == 1, "docs/deployment.md should give one DATABASES block with a pool"
    guide: dict[str, object] = {}
    exec(blocks[0], guide)  # the page's own snippet: a dict literal and comments
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MCP_"))}
    env.update(DJANGO_PG_NAME="library", PYTHONPATH=f"{EXAMPLE}:{ROOT}")
    code = "import json; from example_project import settings; print(json.dumps(settings.DATABASES['default']))"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=EXAMPLE, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    example = json.loads(out.stdout.strip().splitlines()[-1])
    documented = guide["DATABASES"]["default"]  # type: ignore[index]
    for key in ("ENGINE", "CONN_MAX_AGE", "CONN_HEALTH_CHECKS", "OPTIONS"):
        assert example[key] == documented[key], key
    assert example["OPTIONS"]["pool"]["max_size"] == POOL_MAX
