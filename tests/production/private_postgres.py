"""A private PostgreSQL 15 cluster for fault tests: its own temp dir and port, stopped and started at will.

Never the shared server on 5432. initdb refuses root, so every command runs as the
``postgres`` user (``runuser``) when the tests run as root. Trust auth, listening on
127.0.0.1 only, fsync off (nothing here must survive a crash of the machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.servers import IN_CI, free_port

BIN = Path(os.environ.get("MCP_PG_BIN", "/usr/lib/postgresql/15/bin"))


def _as_postgres(*args: str) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *args]
    return list(args)


def need_pg_binaries() -> None:
    """Skip (fail under CI=true) without PostgreSQL 15's server binaries or a ``postgres`` user to run them."""
    missing = not (BIN / "initdb").exists() or not (BIN / "pg_ctl").exists()
    if not missing and os.geteuid() == 0:
        missing = shutil.which("runuser") is None or subprocess.run(["id", "postgres"], capture_output=True).returncode
    if missing:
        message = f"PostgreSQL server binaries not found in {BIN} (or no postgres user to run them)"
        if IN_CI:
            pytest.fail(f"{message} (CI=true: a skip would hide untested code)")
        pytest.skip(message)


class PrivatePostgres:
    def __init__(self) -> None:
        need_pg_binaries()
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.port = free_port()
        os.chmod(self.dir, 0o755)
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(str(BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")

    def _run(self, *args: str, timeout: float = 60) -> None:
        subprocess.run(_as_postgres(*args), check=True, capture_output=True, timeout=timeout)

    def start(self, max_connections: int = 100) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += f" -c max_connections={max_connections}"
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self) -> None:
        """``pg_ctl stop -m fast``: every connection is cut, as in a restart or failover."""
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def create_database(self, name: str) -> None:
        import psycopg

        deadline = time.monotonic() + 10
        while True:
            try:
                with psycopg.connect(
                    f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True
                ) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]  # our own fixed DDL
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def destroy(self) -> None:
        if self.running():
            try:
                self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except subprocess.SubprocessError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
