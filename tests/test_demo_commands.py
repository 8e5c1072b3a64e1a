"""The example project's demo helpers: ``demo_setup --port/--url`` and ``demo_client --callback-port``."""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

#: The example project knows only SQLite (its settings): the pg-redis pass would run the same again.
pytestmark = pytest.mark.own_config


ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"


@pytest.fixture(scope="module")
def manage(tmp_path_factory: pytest.TempPathFactory) -> Any:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join((str(EXAMPLE), str(ROOT))),
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
        "DJANGO_DB_PATH": str(tmp_path_factory.mktemp("demo") / "db.sqlite3"),
    }

    def run(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=EXAMPLE, env=env, text=True, capture_output=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    run("migrate", "--noinput", "-v0")
    return run


def audiences(manage: Any, token: str) -> list[str]:
    script = (
        "from oauth2_provider.models import get_access_token_model as m; import hashlib;"
        f"t = m().objects.get(token_checksum=hashlib.sha256({token!r}.encode()).hexdigest());"
        "print(t.resource if isinstance(t.resource, str) else ' '.join(t.resource or []))"
    )
    return manage("shell", "-v0", "-c", script).split()


@pytest.mark.parametrize(
    ("args", "endpoint", "admin"),
    [
        ((), "http://127.0.0.1:8000/mcp/", "http://127.0.0.1:8000/admin/"),
        (("--port", "8010"), "http://127.0.0.1:8010/mcp/", "http://127.0.0.1:8010/admin/"),
        (("--url", "https://lib.example.com/mcp/"), "https://lib.example.com/mcp/", "https://lib.example.com/admin/"),
    ],
)
def test_demo_setup_binds_its_token_to_the_endpoint(manage: Any, args: tuple[str, ...], endpoint: str, admin: str):
    out = manage("demo_setup", *args)
    assert f"MCP endpoint  {endpoint}" in out
    assert f"Admin         {admin}" in out
    token = re.search(r"DJANGO_MCP_TOKEN=(\S+) ", out)
    assert token, out
    assert f"demo_client.py {endpoint}" in out
    assert audiences(manage, token[1]) == [endpoint]


def test_demo_client_callback_port() -> None:
    pytest.importorskip("mcp")
    spec = importlib.util.spec_from_file_location("demo_client", EXAMPLE / "demo_client.py")
    assert spec and spec.loader
    demo_client = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo_client)

    free = demo_client.oauth_provider("http://127.0.0.1:8000/mcp/")
    (uri,) = free.context.client_metadata.redirect_uris
    port = int(str(uri).split(":")[2].split("/")[0])
    assert port > 0 and str(uri) == f"http://127.0.0.1:{port}/callback"
    with socket.socket() as s:  # the callback server holds that port already
        with pytest.raises(OSError):
            s.bind(("127.0.0.1", port))

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        chosen = s.getsockname()[1]
    fixed = demo_client.oauth_provider("http://127.0.0.1:8000/mcp/", chosen)
    assert [str(u) for u in fixed.context.client_metadata.redirect_uris] == [f"http://127.0.0.1:{chosen}/callback"]


def _children(pid: int) -> dict[int, str]:
    """The processes ``pid`` started (its poll's ``sleep`` left out): pid -> command line."""
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    found = (line.strip().split(" ", 1) for line in out.splitlines() if line.strip())
    return {int(child): args for child, args in found if not args.startswith("sleep")}


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has ended, it is only not reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_run_demo_starts_and_stops_the_worker_with_the_server(tmp_path: Path) -> None:
    """``make demo``'s ``run_demo.sh``: daphne and ``db_worker`` side by side; SIGTERM to the script stops both."""
    from tests.support.servers import _reachable, free_port, stop_process

    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join((str(EXAMPLE), str(ROOT))),
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
        "DJANGO_DB_PATH": str(tmp_path / "db.sqlite3"),
        "PYTHON": sys.executable,
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=EXAMPLE, env=env, check=True)
    port = free_port()
    daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "example_project.asgi:application"]
    log = (tmp_path / "demo.log").open("wb")
    script = subprocess.Popen(["./run_demo.sh", *daphne], cwd=EXAMPLE, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not _reachable(port) and time.monotonic() < deadline and script.poll() is None:
            time.sleep(0.2)
        assert _reachable(port), (tmp_path / "demo.log").read_text()
        running = _children(script.pid)
        commands = list(running.values())
        assert any("db_worker" in c for c in commands) and any("daphne" in c for c in commands), running
        script.terminate()
        assert script.wait(20) == 143
        assert not [pid for pid in running if _alive(pid)] and not _reachable(port)
    finally:
        stop_process(script)
    assert "Traceback" not in (tmp_path / "demo.log").read_text(errors="replace")
