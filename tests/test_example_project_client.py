"""The example project's own test suite (``example_project/library/tests.py``), run as its users run it.

``cd example_project && pytest``: its ``pytest.ini`` (the project's settings) and its conftest
(the ``mcp_client`` plugin), in a subprocess of its own, so ``make test`` covers the example's tests.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.servers import ROOT

#: The example project knows only SQLite (its settings): the pg-redis pass would run the same again.
pytestmark = pytest.mark.own_config


def test_example_project_suite_passes() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_SETTINGS"))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT / "example_project",
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert " passed" in run.stdout and "failed" not in run.stdout and "error" not in run.stdout.lower()
