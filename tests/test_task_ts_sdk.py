"""The official TypeScript SDK's experimental tasks client (2025-11-25) against a real daphne and db_worker.

The official Python SDK has no tasks support; the TypeScript SDK (installed with the
conformance suite under ``.node/``) has ``client.experimental.tasks``: ``callToolStream``
asks for a task, polls ``tasks/get`` and fetches ``tasks/result``, which relays the
tool's elicitation to the client on its stream. ``tests/ts/tasks_client.mjs`` drives
it and prints what it saw; the SDK validates every message against its schemas.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.node import TS_SDK, need_ts, run_ts
from tests.support.servers import server_env, start_server, start_task_worker

#: own_config: what the TypeScript client sees of a task; tasks on PostgreSQL are test_tasks_live's (pg-redis skips it).
pytestmark = pytest.mark.own_config


def test_typescript_sdk_runs_tasks(tmp_path: Path) -> None:
    need_ts(TS_SDK)
    env = server_env(tmp_path, settings="tests.conformance.settings")
    server = start_server(env, tmp_path / "daphne.log", app="tests.conformance.asgi:application")
    worker = start_task_worker(env, tmp_path / "worker.log")
    try:
        seen = run_ts("tasks_client.mjs", str(TS_SDK), server.url)
    finally:
        worker.stop()
        server.stop()
    steps = {step: values[-1] for step, values in seen.items()}  # each step's last word
    assert steps["capabilities"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert steps["taskSupport"]["slow_compute"] == "optional"
    assert steps["taskSupport"]["failing_job"] == "required"
    slow = steps["slow_compute"]
    assert slow[0] == ["created", "working"] and slow[-1] == ["result", "computed ts after 1.0s"], slow
    confirm = steps["confirm_delete"]
    assert ["status", "input_required"] in confirm and confirm[-1] == ["result", "ts.txt: accept"], confirm
    assert steps["asked"] == ["Delete ts.txt?"]
    assert steps["listed"] >= 2
    for log in (server.log, worker.log):
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text()
