"""Development mode (``AUTH = "none"``): a system check outside DEBUG, loopback only at request time.

The server here is a real daphne bound to every interface; the same request is
answered through 127.0.0.1 and refused with 403 through the machine's other
address, or when it carries proxy headers.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import override_settings

from django_mcp.checks import check_development_mode
from tests.support.servers import ROOT, _reachable, free_port, migrate_database, server_env

#: own_config: development mode's rules do not depend on the database or the layer (pg-redis skips it).
pytestmark = pytest.mark.own_config

ACCEPT = "application/json, text/event-stream"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def ids(**overrides: Any) -> set[str]:
    with override_settings(**overrides):
        return {e.id for e in check_development_mode()}


def test_e009_auth_none_without_debug() -> None:
    assert ids(DEBUG=False, DJANGO_MCP={"AUTH": "none"}) == {"django_mcp.E009"}
    assert ids(DEBUG=False, DJANGO_MCP={}) == {"django_mcp.E009"}, "the default is development mode too"


def test_e009_passes_in_debug_or_with_oauth() -> None:
    assert ids(DEBUG=True, DJANGO_MCP={"AUTH": "none"}) == set()
    assert ids(DEBUG=False, DJANGO_MCP={"AUTH": "oauth"}) == set()


def test_e009_stops_manage_commands(tmp_path: Path) -> None:
    """Unsilenced, the error stops ``manage.py check`` with the message and the hint."""
    env = server_env(tmp_path, settings="tests.settings.settings_dev_mode")
    out = subprocess.run(
        [sys.executable, "-m", "django", "check"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode != 0
    assert "django_mcp.E009" in out.stderr and "DEBUG" in out.stderr


def external_address() -> str | None:
    """This machine's address on a non-loopback interface (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            return None
        host = str(s.getsockname()[0])
    return None if host.startswith("127.") or host == "0.0.0.0" else host


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """tests.settings.asgi on 0.0.0.0, so it can be reached through loopback and through another interface."""
    tmp = tmp_path_factory.mktemp("devmode")
    env = server_env(tmp)
    migrate_database(env)
    port = free_port()
    log = (tmp / "daphne.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "0.0.0.0", "-p", str(port), "tests.settings.asgi:application"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while not _reachable(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    yield port
    proc.terminate()
    proc.wait(10)


def post(url: str, host: str, **headers: str) -> httpx.Response:
    h = {"content-type": "application/json", "accept": ACCEPT, "host": host, **headers}
    return httpx.post(url, json=INIT, headers=h, timeout=20)


def test_loopback_is_served(open_server: int) -> None:
    r = post(f"http://127.0.0.1:{open_server}/mcp/", f"127.0.0.1:{open_server}")
    assert r.status_code == 200, r.text
    assert r.json()["result"]["serverInfo"]["name"] == "django-mcp-tests"


def test_other_interface_is_refused(open_server: int) -> None:
    address = external_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    # Host names a loopback host: only the interface the connection arrived on differs.
    r = post(f"http://{address}:{open_server}/mcp/", f"127.0.0.1:{open_server}")
    assert r.status_code == 403
    body = r.json()
    assert body["error"]["code"] == -32600
    assert "development mode" in body["error"]["message"] and "oauth" in body["error"]["message"]
    assert "result" not in body


@pytest.mark.parametrize("header", ["x-forwarded-for", "forwarded", "x-real-ip"])
def test_proxied_request_is_refused(open_server: int, header: str) -> None:
    r = post(f"http://127.0.0.1:{open_server}/mcp/", f"127.0.0.1:{open_server}", **{header: "203.0.113.7"})
    assert r.status_code == 403
    assert "proxied" in r.json()["error"]["message"]


def test_legacy_sse_is_refused_too(open_server: int) -> None:
    address = external_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    r = httpx.get(
        f"http://{address}:{open_server}/mcp/sse/",
        headers={"accept": "text/event-stream", "host": f"127.0.0.1:{open_server}"},
        timeout=20,
    )
    assert r.status_code == 403
