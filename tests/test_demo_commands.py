"""The example project's demo helpers: ``demo_setup --port/--url`` and ``demo_client --callback-port``."""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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
