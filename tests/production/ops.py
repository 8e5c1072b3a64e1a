"""Helpers of the operations tests: uvicorn workers beside the daphne ones of support/servers.py, a small MCP client."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.production.harness import documented_command, nginx_config
from tests.support.servers import LiveServer, _reachable, free_port, migrate_database, need_service, spawn_server

ACCEPT = "application/json, text/event-stream"
REVISION = "2025-11-25"


def _serve(cmd: list[str], env: dict[str, str], log: Path, port: int, name: str) -> LiveServer:
    return spawn_server(cmd, env, log, port, name)


def start_uvicorn(env: dict[str, str], log: Path, *flags: str, migrate: bool = True) -> LiveServer:
    """``tests.settings.asgi`` in a real uvicorn process."""
    if env["MCP_TEST_DB"] == "postgres":
        need_service("PostgreSQL", 5432)
    if env["MCP_TEST_LAYER"] == "redis":
        need_service("Redis", 6379)
    if migrate:
        migrate_database(env)
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "tests.settings.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    return _serve([*cmd, *flags], env, log, port, "uvicorn")


def initialize(http: httpx.Client, url: str, revision: str = REVISION) -> str:
    params = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "ops", "version": "1"}}
    r = http.post(
        url,
        json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        headers={"accept": ACCEPT},
    )
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    r = http.post(
        url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers=session_headers(sid, revision),
    )
    assert r.status_code == 202, r.text
    return sid


def session_headers(sid: str, revision: str = REVISION) -> dict[str, str]:
    return {"accept": ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": revision}


def call(name: str, rid: Any, progress: bool = False, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": f"p{rid}"}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def health(server: LiveServer) -> httpx.Response:
    return httpx.get(f"{server.base}/mcp/health", timeout=10)


class OwnRedis:
    """A Redis server of the test's own, on a free port, that the test may stop and start."""

    def __init__(self, tmp: Path) -> None:
        import shutil

        if shutil.which("redis-server") is None:
            need_service("redis-server binary", -1)
        self.port = free_port()
        self.tmp = tmp
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(cmd, cwd=self.tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not _reachable(self.port):
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None


class OwnPostgres:
    """A PostgreSQL 15 cluster of the test's own (initdb in a temp dir, run as ``postgres``) that it may stop."""

    BIN = Path("/usr/lib/postgresql/15/bin")

    def __init__(self) -> None:
        import os
        import shutil
        import tempfile

        if not (self.BIN / "initdb").exists() or shutil.which("runuser") is None:
            need_service("PostgreSQL 15 binaries", -1)
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-ops-pg-"))
        shutil.chown(self.dir, "postgres", "postgres")
        os.chmod(self.dir, 0o700)
        self._as_postgres(str(self.BIN / "initdb"), "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres")

    def _as_postgres(self, *cmd: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if __import__("os").geteuid() == 0 else []
        subprocess.run([*prefix, *cmd], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(
            str(self.BIN / "pg_ctl"),
            "-D",
            str(self.dir / "data"),
            "-o",
            options,
            "-l",
            str(self.dir / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._as_postgres(str(self.BIN / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        import shutil

        with __import__("contextlib").suppress(Exception):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_documented(
    program: str, env: dict[str, str], log: Path, app: str, migrate: bool = True, workers: int = 1
) -> LiveServer:
    """``app`` served by ``program`` with the command docs/deployment.md gives for it (gunicorn: ``workers``)."""
    if migrate:
        migrate_database(env)
    port = free_port()
    return _serve(documented_command(program, app, port, workers), env, log, port, program)


def start_nginx(tmp: Path, upstream_ports: list[int]) -> tuple[subprocess.Popen[bytes], int]:
    """nginx in front of ``upstream_ports`` on 127.0.0.1: the deployment guide's recipe, read from
    docs/deployment.md with only the ports, the listen address and the temporary paths changed."""
    nginx = Path("/usr/sbin/nginx")
    if not nginx.exists():
        need_service("nginx binary", -1)
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(nginx_config(upstream_ports, port, tmp))
    process = subprocess.Popen(
        [str(nginx), "-p", str(tmp), "-c", str(conf), "-g", f"daemon off; pid {tmp}/nginx.pid; error_log stderr;"],
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "nginx.err").open("wb"),
    )
    deadline = time.monotonic() + 10
    while not _reachable(port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError((tmp / "nginx.err").read_text())
        time.sleep(0.05)
    return process, port
