"""``manage.py db_worker`` starts quietly and counts once: no query during app initialization (not even for
``--help``), and under autoreload only the child that runs tasks is a worker, not the reloader's parent."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.servers import ROOT, migrate_database, server_env

#: SQLite read directly (the worker rows); PostgreSQL would run the same code again.
pytestmark = pytest.mark.own_config

WARNING = "Accessing the database during app initialization"


def _env(tmp: Path) -> dict[str, str]:
    env = server_env(tmp, db="sqlite", MCP_TASK_HEARTBEAT_TIMEOUT="2")  # a beat every 0.5 s
    migrate_database(env)
    return {**env, "PYTHONWARNINGS": "always"}


def _workers(env: dict[str, str]) -> list[int]:
    with sqlite3.connect(env["MCP_SQLITE"]) as db:
        return [row[0] for row in db.execute("SELECT pid FROM django_mcp_mcptaskworker")]


def test_help_and_a_batch_touch_no_database_while_starting(tmp_path: Path) -> None:
    env = _env(tmp_path)
    for args in (["--help"], ["--batch", "--no-startup-delay"]):
        run = subprocess.run(
            [sys.executable, "-m", "django", "db_worker", *args],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert WARNING not in run.stderr + run.stdout, run.stderr
    assert _workers(env) == []  # both exited: a batch run left its row behind at exit, --help never made one


def test_with_autoreload_one_worker_is_one(tmp_path: Path) -> None:
    env = _env(tmp_path)
    log = (tmp_path / "worker.log").open("w")
    parent = subprocess.Popen(
        [sys.executable, "-m", "django", "db_worker", "--reload", "--no-startup-delay", "--interval", "0.2"],
        env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not _workers(env) and time.monotonic() < deadline:
            assert parent.poll() is None, (tmp_path / "worker.log").read_text()
            time.sleep(0.2)
        time.sleep(2)  # four more beats: a second worker (the parent) would have written its row by now
        pids = _workers(env)
        assert len(pids) == 1 and pids[0] != parent.pid, (pids, parent.pid)
    finally:
        os.killpg(parent.pid, signal.SIGTERM)  # the session this test started: the parent and its child
        parent.wait(30)
        log.close()
    assert WARNING not in (tmp_path / "worker.log").read_text()
